//! Span name, kind, semantic-convention attributes and status of the SERVER span.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::borrow::Cow;

use axum::http::StatusCode;
use axum::{Router, routing::get};
use lens_axum::ServerLayer;
use opentelemetry::trace::{SpanKind, Status};
use support::{attr, serve, span};

#[tokio::test]
async fn route_name_and_http_attributes() {
    let (_p, tracer, recorder) = support::provider();
    let addr = serve(
        Router::new()
            .route("/users/{id}", get(|| async { "hi" }))
            .layer(ServerLayer::new().with_tracer(tracer)),
    )
    .await;
    let res = reqwest::Client::new()
        .get(format!("http://{addr}/users/7?x=1"))
        .header("user-agent", "lens-test/1")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let spans = recorder.wait_for(1).await;
    let s = span(&spans, "GET /users/{id}", SpanKind::Server);
    let a = |k| attr(s, k);
    assert_eq!(a("http.request.method").as_deref(), Some("GET"));
    assert_eq!(a("url.path").as_deref(), Some("/users/7"));
    assert_eq!(a("url.scheme").as_deref(), Some("http"));
    assert_eq!(a("http.route").as_deref(), Some("/users/{id}"));
    assert_eq!(a("http.response.status_code").as_deref(), Some("200"));
    assert_eq!(a("server.address").as_deref(), Some("127.0.0.1"));
    assert_eq!(a("server.port"), Some(addr.port().to_string()));
    assert_eq!(a("network.protocol.version").as_deref(), Some("1.1"));
    assert_eq!(a("user_agent.original").as_deref(), Some("lens-test/1"));
    assert_eq!(a("client.address").as_deref(), Some("127.0.0.1"));
    assert_eq!(a("error.type"), None);
    assert_eq!(s.status, Status::Unset);
    // a new trace: no parent
    assert_eq!(s.parent_span_id, opentelemetry::trace::SpanId::INVALID);
}

#[tokio::test]
async fn server_errors_set_error_status_and_type() {
    let (_p, tracer, recorder) = support::provider();
    let addr = serve(
        Router::new()
            .route("/fail", get(|| async { StatusCode::SERVICE_UNAVAILABLE }))
            .route("/missing", get(|| async { StatusCode::NOT_FOUND }))
            .layer(ServerLayer::new().with_tracer(tracer)),
    )
    .await;
    let client = reqwest::Client::new();
    let res = client
        .get(format!("http://{addr}/fail"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 503);
    let res = client
        .get(format!("http://{addr}/missing"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    let spans = recorder.wait_for(2).await;
    let fail = span(&spans, "GET /fail", SpanKind::Server);
    assert!(matches!(fail.status, Status::Error { .. }));
    assert_eq!(attr(fail, "error.type").as_deref(), Some("503"));
    assert_eq!(
        attr(fail, "http.response.status_code").as_deref(),
        Some("503")
    );
    // 4xx is not a server error
    let missing = span(&spans, "GET /missing", SpanKind::Server);
    assert_eq!(missing.status, Status::Unset);
    assert_eq!(attr(missing, "error.type"), None);
}

#[tokio::test]
async fn unmatched_requests_are_named_after_the_method() {
    let (_p, tracer, recorder) = support::provider();
    let addr = serve(
        Router::new()
            .route("/known", get(|| async { "ok" }))
            .layer(ServerLayer::new().with_tracer(tracer)),
    )
    .await;
    let res = reqwest::Client::new()
        .delete(format!("http://{addr}/nowhere"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    let spans = recorder.wait_for(1).await;
    let s = span(&spans, "DELETE", SpanKind::Server);
    assert_eq!(attr(s, "http.route"), None);
    assert_eq!(attr(s, "url.path").as_deref(), Some("/nowhere"));
}

#[tokio::test]
async fn the_filter_skips_health_checks() {
    let (_p, tracer, recorder) = support::provider();
    let addr = serve(
        Router::new()
            .route("/healthz", get(|| async { "ok" }))
            .route("/work", get(|| async { "done" }))
            .layer(
                ServerLayer::new()
                    .with_tracer(tracer)
                    .with_filter(|req| req.uri.path() != "/healthz"),
            ),
    )
    .await;
    let client = reqwest::Client::new();
    for path in ["healthz", "work", "healthz", "work"] {
        let res = client
            .get(format!("http://{addr}/{path}"))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        res.bytes().await.unwrap();
    }
    let spans = recorder.wait_for(2).await;
    assert!(spans.iter().all(|s| s.name == "GET /work"), "{spans:#?}");
}

#[tokio::test]
async fn span_names_can_be_chosen() {
    let (_p, tracer, recorder) = support::provider();
    let addr = serve(
        Router::new()
            .route("/v1/{model}", get(|| async { "ok" }))
            .layer(
                ServerLayer::new()
                    .with_tracer(tracer)
                    .with_span_name(|req| {
                        Cow::Owned(format!("infer {}", req.route.unwrap_or("?")))
                    }),
            ),
    )
    .await;
    reqwest::Client::new()
        .get(format!("http://{addr}/v1/llama"))
        .send()
        .await
        .unwrap();
    let spans = recorder.wait_for(1).await;
    span(&spans, "infer /v1/{model}", SpanKind::Server);
}

#[tokio::test]
async fn traceresponse_names_the_server_span_when_enabled() {
    let (_p, tracer, recorder) = support::provider();
    let addr = serve(
        Router::new().route("/", get(|| async { "ok" })).layer(
            ServerLayer::new()
                .with_tracer(tracer)
                .with_traceresponse(true),
        ),
    )
    .await;
    let res = reqwest::Client::new()
        .get(format!("http://{addr}/"))
        .header("traceparent", support::TRACEPARENT)
        .send()
        .await
        .unwrap();
    let header = res.headers()["traceresponse"].to_str().unwrap().to_owned();
    let tr = lens_core::traceresponse::TraceResponse::parse(&header).unwrap();
    let spans = recorder.wait_for(1).await;
    let s = span(&spans, "GET /", SpanKind::Server);
    assert_eq!(tr.trace_id, s.span_context.trace_id());
    assert_eq!(tr.child_id, s.span_context.span_id());
    assert_eq!(tr.trace_id.to_string(), support::TRACE_ID);
}

#[tokio::test]
async fn no_traceresponse_by_default() {
    let (_p, tracer, _recorder) = support::provider();
    let addr = serve(
        Router::new()
            .route("/", get(|| async { "ok" }))
            .layer(ServerLayer::new().with_tracer(tracer)),
    )
    .await;
    let res = reqwest::Client::new()
        .get(format!("http://{addr}/"))
        .send()
        .await
        .unwrap();
    assert!(res.headers().get("traceresponse").is_none());
}
