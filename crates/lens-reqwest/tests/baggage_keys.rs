//! `with_baggage_keys`: the CLIENT span records the keys of the baggage it sent (as the
//! outbound policy let it out), never the values; off by default.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use axum::{Router, routing::get};
use lens_core::LensContextExt as _;
use lens_core::policy::OutboundPolicy;
use lens_reqwest::ClientMiddleware;
use lens_testkit::baggage_keys::{assert_keys_only, assert_not_recorded, recorded};
use opentelemetry::Context;
use opentelemetry::trace::{FutureExt as _, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use reqwest_middleware::ClientBuilder;

/// The CLIENT span of one request sent with baggage `a=1,b=2`, through `middleware`.
async fn client_span(middleware: impl FnOnce(ClientMiddleware) -> ClientMiddleware) -> SpanData {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = Router::new().route("/", get(|| async { "hi" }));
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let mw = middleware(ClientMiddleware::new().with_tracer(provider.tracer("test")));
    let client = ClientBuilder::new(reqwest::Client::new()).with(mw).build();
    let cx = Context::new()
        .with_baggage_entry("a", "1")
        .and_then(|cx| cx.with_baggage_entry("b", "2"))
        .unwrap();
    let res = client
        .get(format!("http://{addr}/"))
        .send()
        .with_context(cx)
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    // The span ends with the body.
    assert_eq!(res.text().await.unwrap(), "hi");
    let mut spans = exporter.get_finished_spans().unwrap();
    assert_eq!(spans.len(), 1, "{spans:#?}");
    spans.remove(0)
}

#[tokio::test]
async fn records_the_keys_sent_and_no_values() {
    assert_keys_only(&client_span(|m| m.with_baggage_keys(true)).await);
}

#[tokio::test]
async fn records_no_keys_where_the_policy_sends_no_baggage() {
    let span = client_span(|m| {
        m.with_baggage_keys(true)
            .with_outbound_policy(OutboundPolicy::send_everywhere().no_baggage())
    })
    .await;
    assert_eq!(recorded(&span), Some(Vec::new()));
}

#[tokio::test]
async fn off_by_default() {
    assert_not_recorded(&client_span(|m| m).await);
}
