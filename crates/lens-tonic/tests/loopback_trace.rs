//! Client → server over loopback keeps one trace: the driver's span parents the CLIENT span,
//! which parents the SERVER span; the server span is current in the handler, and baggage arrives.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use lens_core::LensContextExt;
use lens_tonic::{ClientInterceptor, ClientLayer, ServerLayer};
use opentelemetry::trace::{FutureExt, SpanKind, TraceContextExt, Tracer};
use opentelemetry::{Context, Value};
use support::{Spans, attr, channel, serve, unary};
use tower_layer::Layer;

#[tokio::test]
async fn client_layer_and_server_layer_keep_one_trace() {
    let spans = Spans::new();
    let addr = serve(ServerLayer::new().with_tracer(spans.tracer("server"))).await;
    let channel = ClientLayer::new()
        .with_tracer(spans.tracer("client"))
        .with_server_address("127.0.0.1", addr.port())
        .layer(channel(addr).await);
    let mut grpc = tonic::client::Grpc::new(channel);

    let driver = spans.tracer("driver").start("driver");
    let cx = Context::new()
        .with_span(driver)
        .with_baggage_entry("job", "rl run")
        .unwrap();
    let answer = unary(&mut grpc, "hello")
        .with_context(cx.clone())
        .await
        .unwrap();
    cx.span().end();

    let client = spans.one(SpanKind::Client);
    let server = spans.one(SpanKind::Server);
    let driver = spans.one(SpanKind::Internal);

    // One trace: driver -> CLIENT -> SERVER.
    let trace_id = driver.span_context.trace_id();
    assert_eq!(client.span_context.trace_id(), trace_id);
    assert_eq!(server.span_context.trace_id(), trace_id);
    assert_eq!(client.parent_span_id, driver.span_context.span_id());
    assert_eq!(server.parent_span_id, client.span_context.span_id());
    assert!(server.parent_span_is_remote);

    // The handler ran inside the SERVER span and saw the driver's baggage.
    let parts: Vec<&str> = answer.split('|').collect();
    assert_eq!(parts[0], "hello");
    assert_eq!(parts[1], trace_id.to_string());
    assert_eq!(parts[2], server.span_context.span_id().to_string());
    assert_eq!(parts[3], "job=rl%20run");

    // Names and RPC attributes on both sides.
    for span in [&client, &server] {
        assert_eq!(span.name, "lens.test.Echo/Echo");
        assert_eq!(attr(span, "rpc.system"), Some(Value::from("grpc")));
        assert_eq!(
            attr(span, "rpc.service"),
            Some(Value::from("lens.test.Echo"))
        );
        assert_eq!(attr(span, "rpc.method"), Some(Value::from("Echo")));
        assert_eq!(attr(span, "rpc.grpc.status_code"), Some(Value::I64(0)));
        assert_eq!(attr(span, "server.address"), Some(Value::from("127.0.0.1")));
        assert_eq!(
            attr(span, "server.port"),
            Some(Value::I64(i64::from(addr.port())))
        );
        assert_eq!(span.status, opentelemetry::trace::Status::Unset);
    }
}

#[tokio::test]
async fn interceptor_injects_the_current_span_as_parent() {
    let spans = Spans::new();
    let addr = serve(ServerLayer::new().with_tracer(spans.tracer("server"))).await;
    let channel = tonic::service::interceptor::InterceptedService::new(
        channel(addr).await,
        ClientInterceptor::new(),
    );
    let mut grpc = tonic::client::Grpc::new(channel);

    let driver = spans.tracer("driver").start("driver");
    let cx = Context::new()
        .with_span(driver)
        .with_baggage_entry("tenant", "acme")
        .unwrap();
    let answer = unary(&mut grpc, "hi")
        .with_context(cx.clone())
        .await
        .unwrap();
    cx.span().end();

    let server = spans.one(SpanKind::Server);
    let driver = spans.one(SpanKind::Internal);
    assert_eq!(
        server.span_context.trace_id(),
        driver.span_context.trace_id()
    );
    assert_eq!(server.parent_span_id, driver.span_context.span_id());
    assert!(answer.ends_with("|tenant=acme"), "{answer}");
    assert!(
        spans
            .finished()
            .iter()
            .all(|s| s.span_kind != SpanKind::Client)
    );
}

#[tokio::test]
async fn without_a_caller_context_the_server_starts_a_new_trace() {
    let spans = Spans::new();
    let addr = serve(ServerLayer::new().with_tracer(spans.tracer("server"))).await;
    let mut grpc = tonic::client::Grpc::new(channel(addr).await);
    unary(&mut grpc, "plain").await.unwrap();
    let server = spans.one(SpanKind::Server);
    assert!(server.span_context.is_valid());
    assert_eq!(server.parent_span_id, opentelemetry::trace::SpanId::INVALID);
}
