//! Inbound policies: Trust continues the trace, Link starts a new one with a link, Ignore a plain
//! new one; untrusted requests contribute no baggage.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use axum::{Router, routing::get};
use lens_axum::{RequestContext, ServerLayer};
use lens_core::LensContextExt;
use lens_core::policy::{InboundDecision, InboundPolicy};
use opentelemetry::trace::{SpanId, SpanKind, TraceId};
use support::{PARENT_ID, TRACE_ID, TRACEPARENT, serve, span};

async fn handler(cx: RequestContext) -> String {
    format!(
        "{}|{}",
        cx.trace_id().unwrap(),
        cx.context().baggage_value("tenant").unwrap_or_default()
    )
}

/// Sends one request with a traceparent and baggage (and optionally a gate header) through a
/// layer with `policy`; returns (handler's trace id, handler's baggage, the SERVER span).
async fn run(
    policy: InboundPolicy,
    gate: bool,
) -> (String, String, opentelemetry_sdk::trace::SpanData) {
    let (_p, tracer, recorder) = support::provider();
    let addr = serve(
        Router::new().route("/", get(handler)).layer(
            ServerLayer::new()
                .with_tracer(tracer)
                .with_inbound_policy(policy),
        ),
    )
    .await;
    let mut req = reqwest::Client::new()
        .get(format!("http://{addr}/"))
        .header("traceparent", TRACEPARENT)
        .header("baggage", "tenant=acme");
    if gate {
        req = req.header("x-gateway-authenticated", "1");
    }
    let body = req.send().await.unwrap().text().await.unwrap();
    let (trace, baggage) = body.split_once('|').unwrap();
    let spans = recorder.wait_for(1).await;
    let s = span(&spans, "GET /", SpanKind::Server).clone();
    (trace.to_owned(), baggage.to_owned(), s)
}

#[tokio::test]
async fn trust_continues_the_trace_with_baggage() {
    let (trace, baggage, s) = run(InboundPolicy::trust_all(), false).await;
    assert_eq!(trace, TRACE_ID);
    assert_eq!(baggage, "acme");
    assert_eq!(s.parent_span_id, SpanId::from_hex(PARENT_ID).unwrap());
    assert!(s.links.links.is_empty());
    // A trusted, valid context: no word on why a new trace began (there is none).
    assert_eq!(new_root(&s), None);
}

/// The `lens.trace.new_root` attribute of a SERVER span.
fn new_root(s: &opentelemetry_sdk::trace::SpanData) -> Option<String> {
    s.attributes
        .iter()
        .find(|kv| kv.key.as_str() == lens_span::new_root::NEW_ROOT)
        .map(|kv| kv.value.as_str().into_owned())
}

#[tokio::test]
async fn link_starts_a_new_trace_linked_to_the_remote_one() {
    let (trace, baggage, s) = run(InboundPolicy::link_all(), false).await;
    assert_ne!(trace, TRACE_ID);
    assert_eq!(s.span_context.trace_id().to_string(), trace);
    assert_eq!(baggage, "", "untrusted baggage must not be kept");
    assert_eq!(s.parent_span_id, SpanId::INVALID);
    assert_eq!(s.links.links.len(), 1);
    let link = &s.links.links[0].span_context;
    assert_eq!(link.trace_id(), TraceId::from_hex(TRACE_ID).unwrap());
    assert_eq!(link.span_id(), SpanId::from_hex(PARENT_ID).unwrap());
    assert_eq!(new_root(&s).as_deref(), Some("untrusted:linked"));
}

#[tokio::test]
async fn ignore_starts_a_plain_new_trace() {
    let (trace, baggage, s) = run(InboundPolicy::ignore_all(), false).await;
    assert_ne!(trace, TRACE_ID);
    assert_eq!(baggage, "");
    assert_eq!(s.parent_span_id, SpanId::INVALID);
    assert!(s.links.links.is_empty());
    assert_eq!(new_root(&s).as_deref(), Some("untrusted:ignored"));
}

#[tokio::test]
async fn a_new_root_says_whether_no_traceparent_came_or_which_rule_rejected_it() {
    let (_p, tracer, recorder) = support::provider();
    let addr = serve(
        Router::new()
            .route("/", get(handler))
            .layer(ServerLayer::new().with_tracer(tracer)),
    )
    .await;
    let client = reqwest::Client::new();
    client.get(format!("http://{addr}/")).send().await.unwrap();
    let zero = TRACEPARENT.replace(TRACE_ID, &"0".repeat(32));
    client
        .get(format!("http://{addr}/"))
        .header("traceparent", zero)
        .send()
        .await
        .unwrap();
    let spans = recorder.wait_for(2).await;
    let causes: Vec<Option<String>> = spans.iter().map(new_root).collect();
    assert_eq!(
        causes,
        [
            Some("none".to_owned()),
            Some("rejected:traceparent-zero-ids".to_owned())
        ]
    );
}

#[tokio::test]
async fn trust_only_requests_carrying_a_header() {
    let policy = || {
        InboundPolicy::trust_if_header("x-gateway-authenticated").otherwise(InboundDecision::Ignore)
    };
    let (trace, baggage, _) = run(policy(), true).await;
    assert_eq!((trace.as_str(), baggage.as_str()), (TRACE_ID, "acme"));
    let (trace, baggage, s) = run(policy(), false).await;
    assert_ne!(trace, TRACE_ID);
    assert_eq!(baggage, "");
    assert!(s.links.links.is_empty());
}

#[tokio::test]
async fn trust_private_networks_trusts_loopback_peers() {
    // The test client connects from 127.0.0.1: a private (loopback) peer.
    let (trace, baggage, _) = run(InboundPolicy::trust_private_networks(), false).await;
    assert_eq!((trace.as_str(), baggage.as_str()), (TRACE_ID, "acme"));
    // Without the peer address (no ConnectInfo), the same policy does not trust the request.
    let (_p, tracer, recorder) = support::provider();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new().route("/", get(handler)).layer(
        ServerLayer::new()
            .with_tracer(tracer)
            .with_inbound_policy(InboundPolicy::trust_private_networks()),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let body = reqwest::Client::new()
        .get(format!("http://{addr}/"))
        .header("traceparent", TRACEPARENT)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!body.starts_with(TRACE_ID));
    let spans = recorder.wait_for(1).await;
    assert_eq!(spans[0].links.links.len(), 1);
}
