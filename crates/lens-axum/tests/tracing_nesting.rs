//! With tracing-opentelemetry installed, `tracing` spans in a handler nest under the SERVER span.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use axum::{Router, routing::get};
use lens_axum::ServerLayer;
use opentelemetry::trace::SpanKind;
use support::{serve, span};
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tracing_spans_nest_under_the_server_span() {
    let (_p, tracer, recorder) = support::provider();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(tracer.clone()));
    tracing::subscriber::set_global_default(subscriber).unwrap();

    async fn handler() -> &'static str {
        async {
            let _inner = tracing::info_span!("sync work").entered();
        }
        .instrument(tracing::info_span!("load model"))
        .await;
        "ok"
    }
    let addr = serve(
        Router::new()
            .route("/", get(handler))
            .layer(ServerLayer::new().with_tracer(tracer)),
    )
    .await;
    reqwest::Client::new()
        .get(format!("http://{addr}/"))
        .header("traceparent", support::TRACEPARENT)
        .send()
        .await
        .unwrap();
    let spans = recorder.wait_for(3).await;
    let server = span(&spans, "GET /", SpanKind::Server);
    let load = span(&spans, "load model", SpanKind::Internal);
    let work = span(&spans, "sync work", SpanKind::Internal);
    assert_eq!(load.span_context.trace_id(), server.span_context.trace_id());
    assert_eq!(load.parent_span_id, server.span_context.span_id());
    assert_eq!(work.parent_span_id, load.span_context.span_id());
    assert_eq!(
        server.span_context.trace_id().to_string(),
        support::TRACE_ID
    );
}
