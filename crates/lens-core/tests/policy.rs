//! Trust policies (docs/propagation-rules.md#trust).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use lens_core::policy::{InboundDecision, InboundPolicy, InboundRequest, OutboundPolicy};
use lens_core::{Carrier, LensContextExt, extract_context};
use opentelemetry::trace::TraceContextExt;

const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn carrier() -> Carrier {
    let mut c = Carrier::new();
    c.insert("traceparent", TP);
    c.insert("baggage", "user=alice");
    c
}

#[test]
fn default_trusts_everything() {
    let c = carrier();
    let inbound = InboundPolicy::default().extract(&InboundRequest::new(&c));
    assert_eq!(inbound.decision, InboundDecision::Trust);
    assert_eq!(
        inbound.remote_span_context().unwrap().span_id().to_string(),
        "00f067aa0ba902b7"
    );
    assert_eq!(
        inbound.parent.baggage_value("user").as_deref(),
        Some("alice")
    );
}

#[test]
fn a_header_map_request_extracts_the_same_parent() {
    let mut headers = http::HeaderMap::new();
    headers.insert("traceparent", http::HeaderValue::from_static(TP));
    headers.append("baggage", http::HeaderValue::from_static("user=alice"));
    headers.append("baggage", http::HeaderValue::from_static("tier=gold"));
    let carrier = lens_core::HeaderCarrier(&headers);
    let policy = InboundPolicy::default();
    let fast = policy.extract(&InboundRequest::from_headers(&carrier));
    let plain = policy.extract(&InboundRequest::new(&carrier));
    assert_eq!(fast.remote_span_context(), plain.remote_span_context());
    assert_eq!(fast.parent.lens_baggage().header(), "user=alice,tier=gold");
    assert_eq!(
        fast.parent.lens_baggage().header(),
        plain.parent.lens_baggage().header()
    );
}

#[test]
fn link_gives_a_link_and_no_parent_or_baggage() {
    let c = carrier();
    let inbound = InboundPolicy::link_all().extract(&InboundRequest::new(&c));
    assert_eq!(inbound.decision, InboundDecision::Link);
    assert!(!inbound.parent.span().span_context().is_valid());
    assert!(inbound.parent.lens_baggage().is_empty());
    assert_eq!(inbound.link.unwrap().trace_id().to_string(), &TP[3..35]);
}

#[test]
fn ignore_keeps_nothing() {
    let c = carrier();
    let inbound = InboundPolicy::ignore_all().extract(&InboundRequest::new(&c));
    assert!(inbound.link.is_none());
    assert!(!inbound.parent.span().span_context().is_valid());
    assert!(inbound.parent.lens_baggage().is_empty());
}

#[test]
fn private_networks_are_trusted_and_public_ones_linked() {
    let c = carrier();
    let p = InboundPolicy::trust_private_networks();
    for ip in [
        "10.1.2.3",
        "192.168.0.1",
        "127.0.0.1",
        "::1",
        "fd00::1",
        "::ffff:10.0.0.1",
    ] {
        let r = InboundRequest::new(&c).with_peer(ip.parse().unwrap());
        assert_eq!(p.decide(&r), InboundDecision::Trust, "{ip}");
    }
    for ip in ["8.8.8.8", "2001:db8::1"] {
        let r = InboundRequest::new(&c).with_peer(ip.parse().unwrap());
        assert_eq!(p.decide(&r), InboundDecision::Link, "{ip}");
    }
    assert_eq!(
        p.decide(&InboundRequest::new(&c)),
        InboundDecision::Link,
        "unknown peer"
    );
}

#[test]
fn header_rule_trusts_only_requests_carrying_it() {
    let mut c = carrier();
    let p = InboundPolicy::trust_if_header_value("x-internal", "yes")
        .otherwise(InboundDecision::Ignore);
    assert_eq!(p.decide(&InboundRequest::new(&c)), InboundDecision::Ignore);
    c.insert("x-internal", "yes");
    assert_eq!(p.decide(&InboundRequest::new(&c)), InboundDecision::Trust);
}

#[test]
fn outbound_allowlists_are_separate_for_baggage() {
    let cx = extract_context(&carrier());
    let policy = OutboundPolicy::send_everywhere().baggage_only_to(["*.corp.example"]);
    let mut out = Carrier::new();
    policy.inject(&cx, "api.partner.example", &mut out);
    assert_eq!(out.get("traceparent"), Some(TP));
    assert_eq!(out.get("baggage"), None);
    let mut out = Carrier::new();
    policy.inject(&cx, "db.corp.example", &mut out);
    assert_eq!(out.get("baggage"), Some("user=alice"));
}

#[test]
fn wildcard_does_not_match_the_bare_domain_and_matching_ignores_case() {
    let p = OutboundPolicy::send_everywhere().trace_context_only_to(["*.example.com", "LocalHost"]);
    assert!(!p.decide("example.com").trace_context);
    assert!(p.decide("A.Example.COM").trace_context);
    assert!(p.decide("localhost").trace_context);
    assert!(!p.decide("evil-example.com").trace_context);
}

#[test]
fn no_baggage_sends_trace_context_only() {
    let cx = extract_context(&carrier());
    let mut out = Carrier::new();
    OutboundPolicy::default()
        .no_baggage()
        .inject(&cx, "anywhere", &mut out);
    assert!(out.get("traceparent").is_some() && out.get("baggage").is_none());
}
