//! The SERVER span is the current Context while the handler runs, and the extractor gives it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use axum::{Router, routing::get};
use lens_axum::{RequestContext, ServerLayer};
use opentelemetry::Context;
use opentelemetry::trace::{SpanKind, TraceContextExt};
use support::{serve, span};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handler_sees_the_server_span_as_current_and_through_the_extractor() {
    let (_p, tracer, recorder) = support::provider();
    async fn handler(cx: RequestContext) -> String {
        let before = Context::current().span().span_context().span_id();
        // Across an await point the span stays current.
        tokio::task::yield_now().await;
        let after = Context::current().span().span_context().span_id();
        let extracted = cx.context().span().span_context().span_id();
        format!("{before} {after} {extracted} {}", cx.trace_id().unwrap())
    }
    let addr = serve(
        Router::new()
            .route("/", get(handler))
            .layer(ServerLayer::new().with_tracer(tracer)),
    )
    .await;
    let body = reqwest::Client::new()
        .get(format!("http://{addr}/"))
        .header("traceparent", support::TRACEPARENT)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let spans = recorder.wait_for(1).await;
    let s = span(&spans, "GET /", SpanKind::Server);
    let id = s.span_context.span_id().to_string();
    assert_eq!(body, format!("{id} {id} {id} {}", support::TRACE_ID));
}
