//! `Propagation::inject_message`: the context goes into a message's headers through lens-core,
//! stale trace-context fields are removed first (also when there is no span to send), the
//! caller's other headers stay, and the outbound decision is obeyed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;

use lens_core::LensContextExt;
use lens_core::policy::OutboundDecision;
use lens_span::{MessageCarrier, Propagation};
use opentelemetry::Context;
use opentelemetry::propagation::Injector;
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};

/// Headers as a plain map, exact names.
struct Headers(HashMap<String, String>);
impl Injector for Headers {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_owned(), value);
    }
}
impl MessageCarrier for Headers {
    fn remove(&mut self, field: &str) {
        self.0.remove(field);
    }
}

fn stale() -> Headers {
    Headers(HashMap::from([
        (
            "traceparent".to_owned(),
            "00-11111111111111111111111111111111-2222222222222222-01".to_owned(),
        ),
        ("tracestate".to_owned(), "old=1".to_owned()),
        ("x-app".to_owned(), "keep".to_owned()),
    ]))
}

fn context() -> Context {
    let sc = SpanContext::new(
        TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
        SpanId::from_hex("00f067aa0ba902b7").unwrap(),
        TraceFlags::SAMPLED,
        false,
        TraceState::default(),
    );
    Context::new()
        .with_remote_span_context(sc)
        .with_baggage_entry("k", "v w")
        .unwrap()
}

const ALL: OutboundDecision = OutboundDecision {
    trace_context: true,
    baggage: true,
};

#[test]
fn the_context_replaces_stale_fields_and_keeps_the_callers_headers() {
    let mut headers = stale();
    Propagation::default().inject_message(ALL, &context(), &mut headers);
    assert_eq!(
        headers.0["traceparent"],
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    );
    assert!(!headers.0.contains_key("tracestate"));
    assert_eq!(headers.0["baggage"], "k=v%20w");
    assert_eq!(headers.0["x-app"], "keep");
}

#[test]
fn no_span_still_removes_stale_trace_context() {
    let mut headers = stale();
    Propagation::default().inject_message(ALL, &Context::new(), &mut headers);
    assert!(!headers.0.contains_key("traceparent"));
    assert!(!headers.0.contains_key("tracestate"));
    assert_eq!(headers.0["x-app"], "keep");
}

#[test]
fn the_decision_is_obeyed() {
    let mut headers = Headers(HashMap::new());
    let baggage_only = OutboundDecision {
        trace_context: false,
        baggage: true,
    };
    Propagation::default().inject_message(baggage_only, &context(), &mut headers);
    assert_eq!(headers.0.keys().collect::<Vec<_>>(), ["baggage"]);
    let mut headers = stale();
    let nothing = OutboundDecision {
        trace_context: false,
        baggage: false,
    };
    Propagation::default().inject_message(nothing, &context(), &mut headers);
    assert_eq!(headers.0.len(), 3, "nothing touched");
}
