//! The common tracestate (every member valid, every key one opentelemetry's `TraceState` takes,
//! at most 8 members) costs what opentelemetry's type needs and no more: extract builds the
//! `TraceState` and keeps no list of its own; inject writes the header in one allocation of its
//! exact length. The general paths give the same Context and headers, so only the allocations
//! tell them apart.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod bounded_cost_support;

use bounded_cost_support::{Allocated, measure};
use lens_core::{HeaderLines, MapCarrier, W3cPropagator};
use opentelemetry::Context;
use opentelemetry::propagation::{Injector, TextMapPropagator};
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use std::collections::HashMap;

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const MEMBERS: [(&str, &str); 2] = [("rojo", "00f067aa0ba902b7"), ("congo", "t61rcWkgMzE")];
const HEADER: &str = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE";

/// Keeps the values it is given, in room reserved beforehand: it allocates nothing itself.
struct Values(Vec<String>);

impl Injector for Values {
    fn set(&mut self, _key: &str, value: String) {
        self.0.push(value);
    }
}

fn less(a: Allocated, b: Allocated) -> (usize, usize) {
    (a.count - b.count, a.total - b.total)
}

fn context(state: TraceState) -> Context {
    Context::new().with_remote_span_context(SpanContext::new(
        TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
        SpanId::from_hex("00f067aa0ba902b7").unwrap(),
        TraceFlags::SAMPLED,
        true,
        state,
    ))
}

#[test]
fn inject_writes_the_tracestate_header_in_one_allocation_of_its_length() {
    let propagator = W3cPropagator::new();
    let inject = |cx: &Context| {
        let mut values = Values(Vec::with_capacity(4));
        measure(|| propagator.inject_context(cx, &mut values));
        let mut values = Values(Vec::with_capacity(4));
        let allocated = measure(|| propagator.inject_context(cx, &mut values));
        (allocated, values.0)
    };
    let (with, values) = inject(&context(TraceState::from_key_value(MEMBERS).unwrap()));
    assert_eq!(values, [TRACEPARENT, HEADER]);
    let (without, values) = inject(&context(TraceState::NONE));
    assert_eq!(values, [TRACEPARENT]);
    assert_eq!(less(with, without), (1, HEADER.len()));
}

#[test]
fn extract_keeps_no_tracestate_of_its_own_beside_opentelemetrys() {
    let propagator = W3cPropagator::new();
    // Header lines as a server has them: no carrier in between, no list of lines to build.
    let extract = |tracestate: &[&str]| {
        let lines = HeaderLines {
            traceparent: &[TRACEPARENT],
            tracestate,
            ..HeaderLines::default()
        };
        let state = propagator
            .extract_lines(&Context::new(), lines)
            .span()
            .span_context()
            .trace_state()
            .clone();
        let allocated = measure(|| propagator.extract_lines(&Context::new(), lines));
        (allocated, state)
    };
    let (with, state) = extract(&[HEADER]);
    assert_eq!(state.header(), HEADER);
    let (without, state) = extract(&[]);
    assert_eq!(state, TraceState::NONE);
    // What opentelemetry's `TraceState` of these members costs, built by hand.
    let by_hand = measure(|| TraceState::from_key_value(MEMBERS).unwrap());
    assert_eq!(less(with, without), (by_hand.count, by_hand.total));
}

#[test]
fn an_invalid_tracestate_is_opentelemetrys_empty_one() {
    let mut carrier = HashMap::new();
    carrier.insert("traceparent".to_owned(), TRACEPARENT.to_owned());
    carrier.insert("tracestate".to_owned(), "a=1,B=2".to_owned());
    let cx = W3cPropagator::new().extract(&MapCarrier(&carrier));
    assert!(cx.span().span_context().is_remote());
    assert_eq!(cx.span().span_context().trace_state(), &TraceState::NONE);
}
