//! `W3cPropagator::inject_headers` writes exactly what injecting through `HeaderCarrier` writes:
//! the same names, values and lines, for every Context, part chosen and propagator, and replaces
//! what was there before in the same way.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use http::{HeaderMap, HeaderName, HeaderValue};
use lens_core::{HeaderCarrier, LensContextExt, W3cPropagator};
use opentelemetry::baggage::BaggageExt;
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use opentelemetry::{Context, KeyValue};
use proptest::prelude::*;

const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03";

/// Every line of every name, in order.
fn lines(headers: &HeaderMap) -> Vec<(String, Vec<u8>)> {
    headers
        .iter()
        .map(|(name, value)| (name.as_str().to_owned(), value.as_bytes().to_vec()))
        .collect()
}

/// Stale lines a caller left on the request, of lens's names and of another.
fn stale() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.append("traceparent", HeaderValue::from_static(TP));
    headers.append("tracestate", HeaderValue::from_static("old=1"));
    headers.append("tracestate", HeaderValue::from_static("older=2"));
    headers.append("baggage", HeaderValue::from_static("stale=1"));
    headers.append("x-other", HeaderValue::from_static("kept"));
    headers
}

fn same_as_carrier(propagator: &W3cPropagator, cx: &Context, start: &HeaderMap) {
    for (trace_context, baggage) in [(true, true), (true, false), (false, true), (false, false)] {
        let mut direct = start.clone();
        propagator.inject_headers_parts(cx, &mut direct, trace_context, baggage);
        let mut via_carrier = start.clone();
        propagator.inject_parts(
            cx,
            &mut HeaderCarrier(&mut via_carrier),
            trace_context,
            baggage,
        );
        assert_eq!(
            lines(&direct),
            lines(&via_carrier),
            "trace context {trace_context}, baggage {baggage}, {cx:?}"
        );
    }
    let mut all = start.clone();
    propagator.inject_headers(cx, &mut all);
    let mut all_parts = start.clone();
    propagator.inject_headers_parts(cx, &mut all_parts, true, true);
    assert_eq!(lines(&all), lines(&all_parts));
}

fn span(flags: u8, trace_state: TraceState) -> Context {
    Context::new().with_remote_span_context(SpanContext::new(
        TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
        SpanId::from_hex("00f067aa0ba902b7").unwrap(),
        TraceFlags::new(flags),
        true,
        trace_state,
    ))
}

/// Contexts built with opentelemetry's own API: a span with and without its trace state, the
/// random flag, opentelemetry's `Baggage`, and nothing at all.
fn otel_contexts() -> Vec<Context> {
    let state = TraceState::from_key_value([("vendor", "x1"), ("other", "y2")]).unwrap();
    vec![
        Context::new(),
        span(0x01, TraceState::NONE),
        span(0x03, state.clone()),
        span(0x00, state),
        Context::new().with_baggage([KeyValue::new("user", "alice"), KeyValue::new("a b", "c,d")]),
        span(0x01, TraceState::NONE).with_baggage([KeyValue::new("rank", "3")]),
    ]
}

/// What lens extracted from `headers` (its kept tracestate and baggage headers).
fn extracted(headers: &[(&str, &str)]) -> Context {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        map.append(
            HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    W3cPropagator::new().extract_headers(&Context::new(), &map)
}

#[test]
fn opentelemetry_contexts_on_empty_and_stale_headers() {
    for propagator in [
        W3cPropagator::new(),
        W3cPropagator::trace_context_only(),
        W3cPropagator::baggage_only(),
    ] {
        for cx in otel_contexts() {
            same_as_carrier(&propagator, &cx, &HeaderMap::new());
            same_as_carrier(&propagator, &cx, &stale());
        }
    }
}

#[test]
fn extracted_contexts_keep_their_headers() {
    let cx = extracted(&[
        ("traceparent", TP),
        ("tracestate", "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"),
        ("baggage", "user=alice;p=1, job = pretrain"),
        ("baggage", "rank=3"),
    ]);
    assert!(cx.lens_baggage().len() >= 3);
    let mut headers = HeaderMap::new();
    W3cPropagator::new().inject_headers(&cx, &mut headers);
    assert_eq!(headers["traceparent"], TP);
    assert_eq!(
        headers["tracestate"],
        "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"
    );
    same_as_carrier(&W3cPropagator::new(), &cx, &HeaderMap::new());
    same_as_carrier(&W3cPropagator::new(), &cx, &stale());
}

/// Only the parts chosen, and only those the propagator propagates, are written.
#[test]
fn only_the_parts_chosen_are_written() {
    let cx = span(0x01, TraceState::NONE).with_baggage([KeyValue::new("rank", "3")]);
    let names = |propagator: &W3cPropagator, trace_context: bool, baggage: bool| {
        let mut headers = HeaderMap::new();
        propagator.inject_headers_parts(&cx, &mut headers, trace_context, baggage);
        let mut names: Vec<String> = headers.keys().map(|k| k.as_str().to_owned()).collect();
        names.sort();
        names
    };
    let all = W3cPropagator::new();
    assert_eq!(names(&all, true, true), ["baggage", "traceparent"]);
    assert_eq!(names(&all, true, false), ["traceparent"]);
    assert_eq!(names(&all, false, true), ["baggage"]);
    assert!(names(&all, false, false).is_empty());
    assert_eq!(
        names(&W3cPropagator::baggage_only(), true, true),
        ["baggage"]
    );
    assert_eq!(
        names(&W3cPropagator::trace_context_only(), true, true),
        ["traceparent"]
    );
}

proptest! {
    /// Whatever lens extracted (valid or not, any baggage), both writers agree.
    #[test]
    fn any_extracted_context_matches_the_carrier_path(
        flags in 0u8..4,
        tracestate in prop_oneof![
            Just(String::new()),
            Just("a=1,b=2".to_owned()),
            "[a-z]{1,8}=[!-+--<>-~]{1,12}",
        ],
        baggage in proptest::collection::vec("[a-z%0-9]{1,6}=[ -~]{0,10}", 0..6),
    ) {
        let tp = format!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0{flags}");
        let mut headers = vec![("traceparent", tp.as_str())];
        if !tracestate.is_empty() {
            headers.push(("tracestate", tracestate.as_str()));
        }
        for entry in &baggage {
            headers.push(("baggage", entry.as_str()));
        }
        let cx = extracted(&headers);
        same_as_carrier(&W3cPropagator::new(), &cx, &HeaderMap::new());
        same_as_carrier(&W3cPropagator::new(), &cx, &stale());
    }
}
