//! The W3C random flag (Trace Context Level 2) of a trace comes out on every outgoing header,
//! sampled or not, and traces the layer starts are marked random by default.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::collections::HashMap;

use axum::{Router, routing::get};
use lens_axum::ServerLayer;
use lens_core::{MapCarrier, inject_context};
use opentelemetry_sdk::trace::Sampler;
use support::serve;

/// What the handler would send on: the traceparent injected from `Context::current()`.
async fn outgoing() -> String {
    let mut map = HashMap::new();
    inject_context(&mut MapCarrier(&mut map));
    map.remove("traceparent").unwrap_or_default()
}

async fn send(layer: ServerLayer, traceparent: Option<&str>) -> String {
    let addr = serve(Router::new().route("/", get(outgoing)).layer(layer)).await;
    let mut req = reqwest::Client::new().get(format!("http://{addr}/"));
    if let Some(tp) = traceparent {
        req = req.header("traceparent", tp);
    }
    req.send().await.unwrap().text().await.unwrap()
}

fn flags(tp: &str) -> &str {
    &tp[53..]
}

#[tokio::test]
async fn random_and_sampled_comes_out_again() {
    let (_p, tracer, _r) = support::provider();
    let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03";
    let out = send(ServerLayer::new().with_tracer(tracer), Some(tp)).await;
    assert_eq!(&out[3..35], support::TRACE_ID);
    assert_eq!(flags(&out), "03");
}

#[tokio::test]
async fn random_but_not_sampled_comes_out_again() {
    // The parent-based sampler drops the span; the SDK gives dropped spans flags 00.
    let (_p, tracer, _r) = support::provider();
    let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-02";
    let out = send(ServerLayer::new().with_tracer(tracer), Some(tp)).await;
    assert_eq!(&out[3..35], support::TRACE_ID);
    assert_ne!(&out[36..52], "00f067aa0ba902b7");
    assert_eq!(flags(&out), "02");
}

#[tokio::test]
async fn no_random_flag_is_invented_for_a_remote_trace() {
    let (_p, tracer, _r) = support::provider();
    let out = send(
        ServerLayer::new().with_tracer(tracer),
        Some(support::TRACEPARENT),
    )
    .await;
    assert_eq!(flags(&out), "01");
}

#[tokio::test]
async fn new_traces_are_marked_random_unless_turned_off() {
    let (_p, tracer, _r) = support::provider();
    let out = send(ServerLayer::new().with_tracer(tracer.clone()), None).await;
    assert_eq!(flags(&out), "03");
    let out = send(
        ServerLayer::new()
            .with_tracer(tracer)
            .with_random_flag_on_new_traces(false),
        None,
    )
    .await;
    assert_eq!(flags(&out), "01");
}

#[tokio::test]
async fn unsampled_new_traces_are_still_random() {
    let (_p, tracer, _r) = support::provider_with(Sampler::AlwaysOff);
    let out = send(ServerLayer::new().with_tracer(tracer), None).await;
    assert_eq!(flags(&out), "02");
}
