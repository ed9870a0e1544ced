//! The instrumentation scope of the default tracer (crate version, schema URL) and `url.query`
//! with credential values redacted. Its own test binary: it installs the global tracer provider.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use axum::{Router, routing::get};
use lens_axum::ServerLayer;
use opentelemetry::trace::SpanKind;
use support::{attr, serve, span};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_scope_and_redacted_query() {
    let (provider, _tracer, recorder) = support::provider();
    opentelemetry::global::set_tracer_provider(provider);
    // Built after the provider is installed: its default tracer comes from it.
    let addr = serve(
        Router::new()
            .route("/q", get(|| async { "ok" }))
            .layer(ServerLayer::new()),
    )
    .await;
    reqwest::Client::new()
        .get(format!("http://{addr}/q?page=2&token=s3cret&Signature=x"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let spans = recorder.wait_for(1).await;
    let s = span(&spans, "GET /q", SpanKind::Server);
    assert_eq!(
        attr(s, "url.query").as_deref(),
        Some("page=2&token=REDACTED&Signature=REDACTED")
    );
    assert_eq!(s.instrumentation_scope.name(), "lens-axum");
    assert_eq!(
        s.instrumentation_scope.version(),
        Some(env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(
        s.instrumentation_scope.schema_url(),
        Some("https://opentelemetry.io/schemas/1.42.0")
    );
}
