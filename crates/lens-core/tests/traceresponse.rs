//! `traceresponse` (Trace Context Level 2).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use lens_core::traceresponse::TraceResponse;
use opentelemetry::trace::{SpanContext, TraceFlags, TraceState};
use opentelemetry::{SpanId, TraceId};

#[test]
fn encodes_the_server_span() {
    let sc = SpanContext::new(
        TraceId::from(0xabc),
        SpanId::from(0x12),
        TraceFlags::new(0x81),
        false,
        TraceState::NONE,
    );
    let tr = TraceResponse::from_span_context(&sc).unwrap();
    assert_eq!(
        tr.to_header_string(),
        "00-00000000000000000000000000000abc-0000000000000012-01"
    );
}

#[test]
fn round_trips() {
    let v = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03";
    assert_eq!(TraceResponse::parse(v).unwrap().to_header_string(), v);
}

#[test]
fn invalid_values_are_rejected_with_traceparent_rules() {
    assert!(
        TraceResponse::parse("00-00000000000000000000000000000000-00f067aa0ba902b7-01").is_err()
    );
}

#[test]
fn invalid_span_context_has_no_traceresponse() {
    assert!(TraceResponse::from_span_context(&SpanContext::empty_context()).is_none());
}
