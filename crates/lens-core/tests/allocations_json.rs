//! Writing a JSON carrier (docs/propagation-rules.md#json-byte-format) into an empty buffer sizes
//! it once, close to its final length, when nothing needs escaping: one allocation, not a
//! doubling `Vec` nor a generous guess.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod bounded_cost_support;

use bounded_cost_support::{Allocated, measure};
use lens_core::{Carrier, LensContextExt, W3cPropagator};
use opentelemetry::Context;
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};

/// What writing into an empty buffer allocates beyond writing into one with room to spare: the
/// buffer's own allocations, and the bytes written.
fn buffer_cost(write: impl Fn(&mut Vec<u8>)) -> (Allocated, usize) {
    let mut roomy = Vec::with_capacity(1 << 16);
    let with_room = measure(|| write(&mut roomy));
    let mut empty = Vec::new();
    let from_empty = measure(|| write(&mut empty));
    assert_eq!(empty, roomy);
    let cost = Allocated {
        count: from_empty.count - with_room.count,
        total: from_empty.total - with_room.total,
        peak: 0,
    };
    (cost, empty.len())
}

#[test]
fn inject_json_sizes_its_buffer_once_within_two_bytes_of_the_object() {
    let state = TraceState::from_key_value([("rojo", "00f067aa0ba902b7")]).unwrap();
    let cx = Context::new()
        .with_remote_span_context(SpanContext::new(
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
            SpanId::from_hex("00f067aa0ba902b7").unwrap(),
            TraceFlags::SAMPLED,
            true,
            state,
        ))
        .with_baggage_entry("user", "alice")
        .unwrap();
    let propagator = W3cPropagator::new();
    for cx in [cx, Context::new().with_baggage_entry("k", "v").unwrap()] {
        let (cost, len) = buffer_cost(|out| propagator.inject_json(&cx, out));
        assert_eq!(cost.count, 1, "one allocation for {len} bytes");
        assert!(
            (len..=len + 2).contains(&cost.total),
            "{} bytes reserved for {len}",
            cost.total
        );
    }
}

#[test]
fn a_carrier_sizes_its_buffer_once_close_to_the_object() {
    let mut carrier = Carrier::new();
    carrier.insert(
        "traceparent",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    );
    carrier.insert("tracestate", "rojo=00f067aa0ba902b7");
    carrier.append("baggage", "user=alice");
    carrier.append("baggage", "tier=gold");
    let (cost, len) = buffer_cost(|out| carrier.write_json(out));
    assert_eq!(cost.count, 1, "one allocation for {len} bytes");
    // At most a few bytes of slack per key and per line.
    assert!(
        (len..=len + 16).contains(&cost.total),
        "{} bytes reserved for {len}",
        cost.total
    );
}
