//! `with_baggage_keys`: the SERVER span records the keys of the baggage the request carried,
//! never the values; off by default.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use axum::{Router, routing::get};
use lens_axum::ServerLayer;
use lens_testkit::baggage_keys::{BAGGAGE, assert_keys_only, assert_not_recorded};
use opentelemetry::trace::SpanKind;
use opentelemetry_sdk::trace::SpanData;
use support::{TRACEPARENT, serve, span};

/// The SERVER span of one request carrying [`BAGGAGE`], through `layer`.
async fn server_span(layer: impl FnOnce(ServerLayer) -> ServerLayer) -> SpanData {
    let (_p, tracer, recorder) = support::provider();
    let addr = serve(
        Router::new()
            .route("/", get(|| async { "hi" }))
            .layer(layer(ServerLayer::new().with_tracer(tracer))),
    )
    .await;
    let res = reqwest::Client::new()
        .get(format!("http://{addr}/"))
        .header("traceparent", TRACEPARENT)
        .header("baggage", BAGGAGE)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let spans = recorder.wait_for(1).await;
    span(&spans, "GET /", SpanKind::Server).clone()
}

#[tokio::test]
async fn records_the_keys_and_no_values() {
    assert_keys_only(&server_span(|l| l.with_baggage_keys(true)).await);
}

#[tokio::test]
async fn off_by_default() {
    assert_not_recorded(&server_span(|l| l).await);
}
