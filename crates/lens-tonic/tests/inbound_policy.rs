//! The server layer extracts through lens-core's `InboundPolicy`: Link starts a new trace that
//! links to the caller's span and drops its baggage; Ignore keeps nothing of it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use lens_core::LensContextExt as _;
use lens_core::policy::{InboundDecision, InboundPolicy};
use lens_tonic::{ClientInterceptor, ServerLayer};
use opentelemetry::Context;
use opentelemetry::trace::{FutureExt, SpanKind, TraceContextExt, Tracer};
use support::{Spans, attr, channel, serve, unary};

async fn call_with(policy: InboundPolicy) -> (Spans, String) {
    let spans = Spans::new();
    let addr = serve(
        ServerLayer::new()
            .with_tracer(spans.tracer("server"))
            .with_inbound_policy(policy),
    )
    .await;
    let channel = tonic::service::interceptor::InterceptedService::new(
        channel(addr).await,
        ClientInterceptor::new(),
    );
    let mut grpc = tonic::client::Grpc::new(channel);
    let cx = Context::new()
        .with_span(spans.tracer("driver").start("driver"))
        .with_baggage_entry("secret", "x")
        .unwrap();
    let answer = unary(&mut grpc, "m")
        .with_context(cx.clone())
        .await
        .unwrap();
    cx.span().end();
    (spans, answer)
}

#[tokio::test]
async fn link_starts_a_new_trace_linked_to_the_caller() {
    let (spans, answer) = call_with(InboundPolicy::link_all()).await;
    let driver = spans.one(SpanKind::Internal);
    let server = spans.one(SpanKind::Server);
    assert_ne!(
        server.span_context.trace_id(),
        driver.span_context.trace_id()
    );
    let links: Vec<_> = server
        .links
        .iter()
        .map(|l| l.span_context.clone())
        .collect();
    assert_eq!(links.len(), 1);
    assert_eq!(links[0].trace_id(), driver.span_context.trace_id());
    assert_eq!(links[0].span_id(), driver.span_context.span_id());
    assert_eq!(
        attr(&server, lens_span::new_root::NEW_ROOT).map(|v| v.as_str().into_owned()),
        Some("untrusted:linked".to_owned())
    );
    assert!(
        answer.ends_with("|"),
        "untrusted baggage must not arrive: {answer}"
    );
}

#[tokio::test]
async fn ignore_keeps_nothing_of_the_caller() {
    let (spans, answer) = call_with(InboundPolicy::ignore_all()).await;
    let driver = spans.one(SpanKind::Internal);
    let server = spans.one(SpanKind::Server);
    assert_ne!(
        server.span_context.trace_id(),
        driver.span_context.trace_id()
    );
    assert!(server.links.is_empty());
    assert!(answer.ends_with("|"), "{answer}");
    assert_eq!(
        attr(&server, lens_span::new_root::NEW_ROOT).map(|v| v.as_str().into_owned()),
        Some("untrusted:ignored".to_owned())
    );
}

#[tokio::test]
async fn custom_policy_sees_the_loopback_peer() {
    let (spans, answer) = call_with(InboundPolicy::custom(|request| match request.peer {
        Some(ip) if ip.is_loopback() => InboundDecision::Trust,
        _ => InboundDecision::Ignore,
    }))
    .await;
    let driver = spans.one(SpanKind::Internal);
    let server = spans.one(SpanKind::Server);
    assert_eq!(
        server.span_context.trace_id(),
        driver.span_context.trace_id()
    );
    assert!(answer.ends_with("|secret=x"), "{answer}");
    // Trusted and valid: nothing said.
    assert_eq!(attr(&server, lens_span::new_root::NEW_ROOT), None);
}
