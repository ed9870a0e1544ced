//! axum -> reqwest -> axum -> reqwest -> axum keeps one trace, every span with the right parent.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use axum::{Router, routing::get};
use lens_axum::{RequestContext, ServerLayer};
use lens_reqwest::ClientMiddleware;
use opentelemetry::trace::{SpanId, SpanKind, TraceId};
use reqwest_middleware::ClientBuilder;
use support::{PARENT_ID, TRACE_ID, TRACEPARENT, attr, serve, span};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_trace_id_and_right_parents_across_five_hops() {
    let (_provider, tracer, recorder) = support::provider();
    let layer = ServerLayer::new().with_tracer(tracer.clone());
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(ClientMiddleware::new().with_tracer(tracer.clone()))
        .build();

    let c = serve(
        Router::new()
            .route(
                "/c",
                get(|cx: RequestContext| async move { cx.trace_id().unwrap().to_string() }),
            )
            .layer(layer.clone()),
    )
    .await;
    let client_b = client.clone();
    let b = serve(
        Router::new()
            .route(
                "/b",
                get(move || {
                    let client = client_b.clone();
                    async move {
                        let res = client.get(format!("http://{c}/c")).send().await.unwrap();
                        res.text().await.unwrap()
                    }
                }),
            )
            .layer(layer.clone()),
    )
    .await;
    let client_a = client.clone();
    let a = serve(
        Router::new()
            .route(
                "/a",
                get(move || {
                    let client = client_a.clone();
                    async move {
                        let res = client.get(format!("http://{b}/b")).send().await.unwrap();
                        res.text().await.unwrap()
                    }
                }),
            )
            .layer(layer.clone()),
    )
    .await;

    let seen_at_c = reqwest::Client::new()
        .get(format!("http://{a}/a"))
        .header("traceparent", TRACEPARENT)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(seen_at_c, TRACE_ID);

    let spans = recorder.wait_for(5).await;
    assert_eq!(spans.len(), 5);
    let trace_id = TraceId::from_hex(TRACE_ID).unwrap();
    for s in &spans {
        assert_eq!(s.span_context.trace_id(), trace_id, "{s:?}");
    }
    let server_a = span(&spans, "GET /a", SpanKind::Server);
    let server_b = span(&spans, "GET /b", SpanKind::Server);
    let server_c = span(&spans, "GET /c", SpanKind::Server);
    let clients: Vec<_> = spans
        .iter()
        .filter(|s| s.span_kind == SpanKind::Client)
        .collect();
    assert_eq!(clients.len(), 2);
    let client_ab = clients
        .iter()
        .find(|s| attr(s, "url.full") == Some(format!("http://{b}/b")))
        .unwrap();
    let client_bc = clients
        .iter()
        .find(|s| attr(s, "url.full") == Some(format!("http://{c}/c")))
        .unwrap();

    assert_eq!(
        server_a.parent_span_id,
        SpanId::from_hex(PARENT_ID).unwrap()
    );
    assert!(server_a.parent_span_is_remote);
    assert_eq!(client_ab.parent_span_id, server_a.span_context.span_id());
    assert!(!client_ab.parent_span_is_remote);
    assert_eq!(server_b.parent_span_id, client_ab.span_context.span_id());
    assert!(server_b.parent_span_is_remote);
    assert_eq!(client_bc.parent_span_id, server_b.span_context.span_id());
    assert_eq!(server_c.parent_span_id, client_bc.span_context.span_id());
    assert_eq!(
        attr(client_ab, "http.response.status_code").as_deref(),
        Some("200")
    );
}
