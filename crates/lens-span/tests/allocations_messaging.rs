//! What a messaging span costs in allocations: a `send` span started by the lifecycle allocates
//! no more than the same span (same name, same attributes) written by hand with the SDK, and
//! the span name is one allocation of its exact length. Counted on this thread only, so tests
//! running in parallel do not disturb each other.
#![allow(clippy::unwrap_used, clippy::expect_used, unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;

use lens_core::OutboundPolicy;
use lens_span::messaging::{Operation, OperationStatus, OperationType};
use lens_span::{Adapter, SpanOptions};
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, TraceContextExt, TraceFlags, TraceId, TraceState, Tracer,
    TracerProvider as _,
};
use opentelemetry::{Context, KeyValue, StringValue};
use opentelemetry_sdk::trace::SdkTracerProvider;

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<usize> = const { Cell::new(0) };
    static BYTES: Cell<usize> = const { Cell::new(0) };
}

struct Counting;

fn record(bytes: usize) {
    if ON.try_with(Cell::get).unwrap_or(false) {
        let _ = COUNT.try_with(|c| c.set(c.get() + 1));
        let _ = BYTES.try_with(|b| b.set(b.get() + bytes));
    }
}

// SAFETY: every method forwards to `System` unchanged; the bookkeeping touches only `Cell`s in
// const-initialised thread-locals (no allocation, no destructor).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record(layout.size());
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        record(new_size);
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// (allocations, bytes) of `f` on this thread.
fn measure<R>(f: impl FnOnce() -> R) -> (usize, usize, R) {
    COUNT.with(|c| c.set(0));
    BYTES.with(|b| b.set(0));
    ON.with(|on| on.set(true));
    let out = f();
    ON.with(|on| on.set(false));
    (COUNT.with(Cell::get), BYTES.with(Cell::get), out)
}

struct Queue;
impl Adapter for Queue {
    type Request<'a> = str;
    type Response<'a> = OperationStatus;
    type Status = OperationStatus;
}

fn sampled_parent() -> Context {
    Context::new().with_remote_span_context(SpanContext::new(
        TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
        SpanId::from_hex("00f067aa0ba902b7").unwrap(),
        TraceFlags::SAMPLED,
        true,
        TraceState::NONE,
    ))
}

#[test]
fn the_span_name_is_one_allocation_of_its_length() {
    let operation = Operation::new("nats", "send", OperationType::Send)
        .with_destination("jobs.rollout.step", false);
    let (count, bytes, name) = measure(|| operation.span_name());
    assert_eq!(name, "send jobs.rollout.step");
    assert_eq!((count, bytes), (1, name.len()));
}

#[test]
fn a_send_span_allocates_no_more_than_the_same_span_by_hand() {
    // Spans recorded (a sampled parent), ended into no processor: the span's own cost only.
    let provider = SdkTracerProvider::builder().build();
    let tracer = provider.tracer("alloc");
    let options: SpanOptions<Queue, OutboundPolicy> =
        SpanOptions::new(tracer.clone(), OutboundPolicy::default());
    let parent = sampled_parent();
    // What an adapter holds once (lens-nats: per wrapper), shared by every span.
    let address = StringValue::from(Arc::<str>::from("nats.internal"));
    let subject = "jobs.rollout";
    let lens = || {
        let mut operation = Operation::new("nats", "send", OperationType::Send)
            .with_destination(subject, false)
            .with_body_size(128);
        operation.server_address = Some(address.clone());
        operation.server_port = Some(4222);
        let span = options.start_operation(subject, &operation, &parent, Vec::new());
        assert!(span.span().span_context().is_sampled());
        span.end();
    };
    let by_hand = || {
        let span = tracer
            .span_builder(format!("send {subject}"))
            .with_kind(SpanKind::Producer)
            .with_attributes(vec![
                KeyValue::new("messaging.system", "nats"),
                KeyValue::new("messaging.operation.name", "send"),
                KeyValue::new("messaging.operation.type", "send"),
                KeyValue::new("server.address", address.clone()),
                KeyValue::new("server.port", 4222_i64),
                KeyValue::new("messaging.destination.name", subject.to_owned()),
                KeyValue::new("messaging.message.body.size", 128_i64),
            ])
            .start_with_context(&tracer, &parent);
        let cx = parent.with_span(span);
        cx.span().end();
    };
    // Once each to warm up (thread-locals, lazily built state).
    lens();
    by_hand();
    let (lens_count, _, ()) = measure(lens);
    let (hand_count, _, ()) = measure(by_hand);
    assert!(
        lens_count <= hand_count,
        "lens {lens_count} allocations, by hand {hand_count}"
    );
}
