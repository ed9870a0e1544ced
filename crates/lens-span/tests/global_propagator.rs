//! `Propagation::global()`: the propagator installed in opentelemetry reads and writes, the policy
//! still decides, and stale trace-context headers are replaced. Its own test binary: it installs
//! the global propagator.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lens_core::HeaderCarrier;
use lens_core::policy::{InboundDecision, InboundPolicy, InboundRequest, OutboundDecision};
use lens_span::Propagation;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;

const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[test]
fn the_global_propagator_reads_and_writes() {
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let mut headers = http::HeaderMap::new();
    headers.insert("traceparent", TP.parse().unwrap());
    let carrier = HeaderCarrier(&headers);
    let request = InboundRequest::from_headers(&carrier);

    let trusted = Propagation::global().extract(&InboundPolicy::trust_all(), &request);
    assert_eq!(trusted.decision, InboundDecision::Trust);
    let sc = trusted.parent.span().span_context().clone();
    assert_eq!(sc.span_id().to_string(), "00f067aa0ba902b7");
    let linked = Propagation::global().extract(&InboundPolicy::link_all(), &request);
    assert_eq!(linked.link.unwrap().span_id(), sc.span_id());
    assert!(!linked.parent.span().span_context().is_valid());

    let mut out = http::HeaderMap::new();
    for stale in [
        "00-11111111111111111111111111111111-2222222222222222-01",
        "00-11111111111111111111111111111111-3333333333333333-01",
    ] {
        out.append("traceparent", stale.parse().unwrap());
    }
    let all = OutboundDecision {
        trace_context: true,
        baggage: true,
    };
    Propagation::global().inject_headers(all, &trusted.parent, &mut out);
    let lines: Vec<_> = out.get_all("traceparent").iter().collect();
    assert_eq!(lines, [TP]);

    // Trace context not allowed: none of it goes out.
    let mut out = http::HeaderMap::new();
    let baggage_only = OutboundDecision {
        trace_context: false,
        baggage: true,
    };
    Propagation::global().inject_headers(baggage_only, &trusted.parent, &mut out);
    assert!(out.get("traceparent").is_none());
}
