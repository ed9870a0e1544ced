//! `cargo xtask bench zmq`: what lens-zmq costs per message, the context as a frame and as a
//! field, against the least code that does the same by hand, A/B alternated in ONE run.
//!
//! Fixture: on the sending side, a sampled parent span current (an SDK span under a remote parent whose tracestate
//! has 2 members, 2 baggage entries), spans recorded by an SDK provider whose processor drops
//! them at their end (what an exporter costs is the same for both arms), lens's propagator
//! installed as the global one (the by-hand arms use it through opentelemetry's API), a
//! 128-byte payload, no span current on the receiving side (a consumer's loop), and no socket: the socket's cost is the same with or without lens, so the
//! ratio shown is the strictest one (what lens adds, against what the same work by hand adds).
//!
//! Four operations, each with three arms run in turn for [`PER_ROUND`] messages per round,
//! [`ROUNDS`] rounds, the order rotating:
//! * `hand`: the least code by hand (a span with no attributes; inject into / extract from a
//!   `HashMap` through the global propagator; the frame made or read by hand);
//! * `conv`: the same by hand with the span name and the attributes lens records
//!   (`messaging.system`, operation name and type, destination, body size; the destination
//!   known at run time, as a program has it: the name formatted, the attribute an owned copy);
//! * `span` (receiving side only, a reference, not a target): the carrier read as lens-zmq reads
//!   it, then lens-span's messaging lifecycle (`SpanOptions::start_process`) called directly:
//!   the CONSUMER span every lens messaging adapter makes (lens-nats's too), which lens-zmq
//!   adds nothing to;
//! * `lens`: lens-zmq ([`lens_zmq::Producer::send_frames`], `Sending::carrier_field`,
//!   [`lens_zmq::Consumer::process_frames`], `process_field`).
//!
//! Timed by the thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`; the wall clock off Linux), so
//! that other processes on a shared machine do not count against an arm. Printed: ns per message, and the median (quartiles) of the per-round ratio `arm time / lens
//! time` (lens's throughput as a share of that arm's: >= 0.95 is the target against `conv`);
//! then allocations per message of each arm (a counting global allocator), [`ALLOC_MESSAGES`]
//! messages after as many unmeasured ones.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    unsafe_code
)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
#[cfg(not(target_os = "linux"))]
use std::time::Instant;

use lens_core::carrier::{Carrier, CarrierField};
use lens_span::SpanOptions;
use lens_span::messaging::{Operation, OperationType};
use lens_zmq::frame::CONTEXT_FRAME_MARKER;
use lens_zmq::{Consumer, ConsumerParent, DestinationPolicy, OperationStatus, Producer};
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, TraceContextExt, TraceFlags, TraceId, TraceState, Tracer,
    TracerProvider as _,
};
use opentelemetry::{Context, KeyValue, global};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider, Span, SpanData, SpanProcessor};
use serde::{Deserialize, Serialize};

/// The system allocator, counting every allocation (a reallocation counts as one).
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call goes to `System` unchanged; the counter is an atomic, which neither
// allocates nor unwinds.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc`, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc`, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract for `realloc`, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const PER_ROUND: usize = 2_000;
const ROUNDS: usize = 41;
const ALLOC_MESSAGES: usize = 2_000;
const PAYLOAD: [u8; 128] = [b'x'; 128];
const DESTINATION: &str = "engine.requests";

/// Drops every span at its end.
#[derive(Debug)]
struct Drop_;

impl SpanProcessor for Drop_ {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}
    fn on_end(&self, span: SpanData) {
        black_box(span);
    }
    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }
    fn shutdown_with_timeout(&self, _timeout: std::time::Duration) -> OTelSdkResult {
        Ok(())
    }
}

/// vLLM's EngineCoreRequest shape with lens's field.
#[derive(Serialize, Deserialize)]
struct LensRequest {
    request_id: String,
    prompt_token_ids: Vec<u32>,
    #[serde(default)]
    trace_headers: CarrierField,
}

/// The same by hand: vLLM's own `Optional[Mapping[str, str]]`.
#[derive(Serialize, Deserialize)]
struct HandRequest {
    request_id: String,
    prompt_token_ids: Vec<u32>,
    #[serde(default)]
    trace_headers: Option<HashMap<String, String>>,
}

/// The destination as a program has it: known at run time.
fn destination() -> &'static str {
    black_box(DESTINATION)
}

fn conv_attributes(op: &'static str, size: usize) -> Vec<KeyValue> {
    vec![
        KeyValue::new("messaging.system", "zeromq"),
        KeyValue::new("messaging.operation.name", op),
        KeyValue::new("messaging.operation.type", op),
        KeyValue::new("messaging.destination.name", destination().to_owned()),
        KeyValue::new("messaging.message.body.size", size as i64),
    ]
}

/// The span name: the operation alone (`hand`), or `{operation} {destination}` (`conv`).
fn span_name(op: &'static str, conv: bool) -> std::borrow::Cow<'static, str> {
    if conv {
        format!("{op} {}", destination()).into()
    } else {
        op.into()
    }
}

/// A PRODUCER span by hand, current context as parent.
fn hand_span(tracer: &SdkTracer, conv: bool, size: usize) -> Context {
    let mut builder = tracer.span_builder(span_name("send", conv));
    builder.span_kind = Some(SpanKind::Producer);
    if conv {
        builder.attributes = Some(conv_attributes("send", size));
    }
    let span = tracer.build_with_context(builder, &Context::current());
    Context::current_with_span(span)
}

fn hand_consume_span(tracer: &SdkTracer, conv: bool, parent: &Context, size: usize) -> Context {
    let mut builder = tracer.span_builder(span_name("process", conv));
    builder.span_kind = Some(SpanKind::Consumer);
    if conv {
        builder.attributes = Some(conv_attributes("process", size));
    }
    let span = tracer.build_with_context(builder, parent);
    parent.with_span(span)
}

fn hand_send_frame(tracer: &SdkTracer, conv: bool) -> Vec<Vec<u8>> {
    let cx = hand_span(tracer, conv, PAYLOAD.len());
    let mut headers = HashMap::new();
    global::get_text_map_propagator(|p| p.inject_context(&cx, &mut headers));
    let mut carrier = Carrier::with_capacity(3);
    for key in ["traceparent", "tracestate", "baggage"] {
        if let Some(v) = headers.remove(key) {
            carrier.insert(key, v);
        }
    }
    let mut frame = CONTEXT_FRAME_MARKER.to_vec();
    carrier.write_json(&mut frame);
    let frames = vec![PAYLOAD.to_vec(), frame];
    cx.span().end();
    frames
}

fn hand_recv_frame(tracer: &SdkTracer, conv: bool, mut frames: Vec<Vec<u8>>) {
    let parent = match frames.last() {
        Some(last) if last.starts_with(CONTEXT_FRAME_MARKER) => {
            let carrier =
                Carrier::from_json_bytes(&last[CONTEXT_FRAME_MARKER.len()..]).unwrap_or_default();
            frames.pop();
            global::get_text_map_propagator(|p| p.extract(&carrier))
        }
        _ => Context::new(),
    };
    let cx = hand_consume_span(tracer, conv, &parent, frames[0].len());
    let _guard = cx.clone().attach();
    black_box(&frames);
    cx.span().end();
}

fn hand_send_field(tracer: &SdkTracer, conv: bool) -> Vec<u8> {
    let cx = hand_span(tracer, conv, 0);
    let mut headers = HashMap::new();
    global::get_text_map_propagator(|p| p.inject_context(&cx, &mut headers));
    let request = HandRequest {
        request_id: "r-1".into(),
        prompt_token_ids: vec![1, 2, 3],
        trace_headers: Some(headers),
    };
    let bytes = rmp_serde::to_vec(&request).unwrap();
    cx.span().end();
    bytes
}

fn hand_recv_field(tracer: &SdkTracer, conv: bool, bytes: &[u8]) {
    let request: HandRequest = rmp_serde::from_slice(bytes).unwrap();
    let parent = match &request.trace_headers {
        Some(headers) => global::get_text_map_propagator(|p| p.extract(headers)),
        None => Context::new(),
    };
    let cx = hand_consume_span(tracer, conv, &parent, bytes.len());
    let _guard = cx.clone().attach();
    black_box(&request.request_id);
    cx.span().end();
}

/// lens-span's messaging lifecycle alone, as a reference: what every lens messaging adapter's
/// CONSUMER span costs (lens-nats's too), the carrier read as lens-zmq reads it.
struct Lifecycle;

impl lens_span::Adapter for Lifecycle {
    type Request<'a> = str;
    type Response<'a> = ();
    type Status = OperationStatus;
}

fn lifecycle_process(
    options: &SpanOptions<Lifecycle, DestinationPolicy>,
    field: &CarrierField,
    size: usize,
) {
    let operation = Operation::new("zeromq", "process", OperationType::Process)
        .with_destination(destination(), false)
        .with_body_size(size);
    let empty = Carrier::new();
    let carrier = field.carrier().unwrap_or(&empty);
    let span = options.start_process(
        "",
        &operation,
        carrier,
        ConsumerParent::Message,
        &Context::current(),
    );
    span.in_scope(|| black_box(field));
    span.end();
}

fn lifecycle_recv_frame(
    options: &SpanOptions<Lifecycle, DestinationPolicy>,
    mut frames: Vec<Vec<u8>>,
) {
    let field = lens_zmq::frame::take_context_frame(&mut frames, &lens_core::Limits::DEFAULT);
    lifecycle_process(options, &field, frames[0].len());
}

fn lifecycle_recv_field(options: &SpanOptions<Lifecycle, DestinationPolicy>, bytes: &[u8]) {
    let request: LensRequest = rmp_serde::from_slice(bytes).unwrap();
    lifecycle_process(options, &request.trace_headers, bytes.len());
}

fn lens_send_frame(producer: &Producer) -> Vec<Vec<u8>> {
    let mut frames = vec![PAYLOAD.to_vec()];
    producer.send_frames(DESTINATION, &mut frames).end();
    frames
}

fn lens_recv_frame(consumer: &Consumer, mut frames: Vec<Vec<u8>>) {
    let processing = consumer.process_frames(DESTINATION, &mut frames);
    processing.in_scope(|| black_box(&frames));
    processing.end();
}

fn lens_send_field(producer: &Producer) -> Vec<u8> {
    let sending = producer.start_send(DESTINATION, None);
    let request = LensRequest {
        request_id: "r-1".into(),
        prompt_token_ids: vec![1, 2, 3],
        trace_headers: sending.carrier_field(),
    };
    let bytes = rmp_serde::to_vec(&request).unwrap();
    sending.end();
    bytes
}

fn lens_recv_field(consumer: &Consumer, bytes: &[u8]) {
    let request: LensRequest = rmp_serde::from_slice(bytes).unwrap();
    let processing = consumer.process_field(DESTINATION, &request.trace_headers, Some(bytes.len()));
    processing.in_scope(|| black_box(&request.request_id));
    processing.end();
}

/// This thread's CPU time (another process taking the CPU does not count against an arm); the
/// wall clock off Linux.
fn now() -> Duration {
    #[cfg(target_os = "linux")]
    {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
    }
    #[cfg(not(target_os = "linux"))]
    {
        static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        START.get_or_init(Instant::now).elapsed()
    }
}

type Arm<'a> = (&'static str, Box<dyn FnMut() + 'a>);

/// Runs the arms alternately; prints ns per message and `arm time / lens time` per round
/// (median, quartiles), lens being the last arm; then allocations per message.
fn compare(title: &str, mut arms: Vec<Arm<'_>>) {
    let lens = arms.len() - 1;
    let mut times = vec![Vec::with_capacity(ROUNDS); arms.len()];
    for round in 0..=ROUNDS {
        for k in 0..arms.len() {
            let i = (k + round) % arms.len();
            let start = now();
            for _ in 0..PER_ROUND {
                (arms[i].1)();
            }
            if round > 0 {
                times[i].push((now() - start).as_nanos() as f64 / PER_ROUND as f64);
            }
        }
    }
    let q = |v: &[f64], f: usize| v[(v.len() - 1) * f / 4];
    println!("{title}");
    for (i, (name, _)) in arms.iter().enumerate() {
        let mut t = times[i].clone();
        t.sort_by(f64::total_cmp);
        let mut r: Vec<f64> = times[i]
            .iter()
            .zip(&times[lens])
            .map(|(a, b)| a / b)
            .collect();
        r.sort_by(f64::total_cmp);
        println!(
            "  {name:<6} {:>8.0} ns/msg   {name}/lens {:.3} ({:.3}-{:.3})",
            q(&t, 2),
            q(&r, 2),
            q(&r, 1),
            q(&r, 3)
        );
    }
    print!("  allocations per message:");
    for (name, arm) in &mut arms {
        for _ in 0..ALLOC_MESSAGES {
            arm();
        }
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        for _ in 0..ALLOC_MESSAGES {
            arm();
        }
        let n = ALLOCATIONS.load(Ordering::Relaxed) - before;
        print!("  {name} {:.1}", n as f64 / ALLOC_MESSAGES as f64);
    }
    println!();
}

fn main() {
    lens_core::install_propagator(lens_core::W3cPropagator::default()).unwrap();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(Drop_)
        .build();
    let tracer = provider.tracer("bench");
    let producer = Producer::new().with_tracer(tracer.clone());
    let consumer = Consumer::new().with_tracer(tracer.clone());
    let lifecycle: SpanOptions<Lifecycle, DestinationPolicy> =
        SpanOptions::new(tracer.clone(), DestinationPolicy::default());

    // The sampled parent: an SDK span under a remote parent with tracestate and baggage.
    let remote = SpanContext::new(
        TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
        SpanId::from_hex("00f067aa0ba902b7").unwrap(),
        TraceFlags::SAMPLED,
        true,
        TraceState::from_key_value([("congo", "t61rcWkgMzE"), ("rojo", "00f067aa0ba902b7")])
            .unwrap(),
    );
    let parent = opentelemetry::baggage::BaggageExt::with_baggage(
        &Context::new().with_remote_span_context(remote),
        [KeyValue::new("tenant", "acme"), KeyValue::new("rank", "3")],
    );
    let span = tracer.start_with_context("caller", &parent);
    let guard = parent.with_span(span).attach();

    // What each receiving arm reads: a message its own sending side wrote.
    let frames_hand = hand_send_frame(&tracer, true);
    let frames_lens = lens_send_frame(&producer);
    let field_hand = hand_send_field(&tracer, true);
    let field_lens = lens_send_field(&producer);

    // What every arm produces or reads is checked before it is timed.
    {
        let _none = Context::new().attach();
        let hand_json = &frames_hand[1][CONTEXT_FRAME_MARKER.len()..];
        let lens_json = &frames_lens[1][CONTEXT_FRAME_MARKER.len()..];
        let keys = |json: &[u8]| {
            Carrier::from_json_bytes(json)
                .unwrap()
                .iter()
                .map(|(k, _)| k.to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(keys(hand_json), ["traceparent", "tracestate", "baggage"]);
        assert_eq!(keys(lens_json), keys(hand_json));
        let lens_request: LensRequest = rmp_serde::from_slice(&field_lens).unwrap();
        let hand_request: HandRequest = rmp_serde::from_slice(&field_hand).unwrap();
        let lens_carrier = lens_request.trace_headers.carrier().unwrap();
        let hand_headers = hand_request.trace_headers.unwrap();
        assert_eq!(
            lens_carrier.get("tracestate"),
            hand_headers.get("tracestate").map(String::as_str)
        );
        assert_eq!(
            lens_carrier.get("baggage"),
            hand_headers.get("baggage").map(String::as_str)
        );
    }

    compare(
        "send, context frame (a PRODUCER span, the frame appended)",
        vec![
            (
                "hand",
                Box::new(|| drop(black_box(hand_send_frame(&tracer, false)))),
            ),
            (
                "conv",
                Box::new(|| drop(black_box(hand_send_frame(&tracer, true)))),
            ),
            (
                "lens",
                Box::new(|| drop(black_box(lens_send_frame(&producer)))),
            ),
        ],
    );
    compare(
        "send, field (a PRODUCER span, trace_headers filled, the struct msgpack-encoded)",
        vec![
            (
                "hand",
                Box::new(|| drop(black_box(hand_send_field(&tracer, false)))),
            ),
            (
                "conv",
                Box::new(|| drop(black_box(hand_send_field(&tracer, true)))),
            ),
            (
                "lens",
                Box::new(|| drop(black_box(lens_send_field(&producer)))),
            ),
        ],
    );
    // A consumer's loop has no span current.
    drop(guard);
    compare(
        "process, context frame (the frame taken off and read, a CONSUMER span current; no span current before)",
        vec![
            (
                "hand",
                Box::new(|| hand_recv_frame(&tracer, false, frames_hand.clone())),
            ),
            (
                "conv",
                Box::new(|| hand_recv_frame(&tracer, true, frames_hand.clone())),
            ),
            (
                "span",
                Box::new(|| lifecycle_recv_frame(&lifecycle, frames_lens.clone())),
            ),
            (
                "lens",
                Box::new(|| lens_recv_frame(&consumer, frames_lens.clone())),
            ),
        ],
    );
    compare(
        "process, field (the struct decoded, trace_headers read, a CONSUMER span current; no span current before)",
        vec![
            (
                "hand",
                Box::new(|| hand_recv_field(&tracer, false, &field_hand)),
            ),
            (
                "conv",
                Box::new(|| hand_recv_field(&tracer, true, &field_hand)),
            ),
            (
                "span",
                Box::new(|| lifecycle_recv_field(&lifecycle, &field_lens)),
            ),
            ("lens", Box::new(|| lens_recv_field(&consumer, &field_lens))),
        ],
    );
}
