//! `with_baggage_keys` over a real broker: the CONSUMER `process` span records the keys of the
//! baggage the message carried, the PRODUCER `send` span the keys it sent, never the values;
//! off by default.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{Setup, named};
use futures_util::StreamExt;
use lens_core::LensContextExt as _;
use lens_testkit::baggage_keys::{assert_keys_only, assert_not_recorded};
use opentelemetry::Context;
use opentelemetry::trace::FutureExt as _;
use opentelemetry_sdk::trace::SpanData;

/// The `send` and `process` spans of one message carrying baggage `a=1,b=2`, with the knob
/// `on` on both sides; `None` without a nats-server.
async fn send_and_process(on: bool) -> Option<[SpanData; 2]> {
    let setup = Setup::start().await?;
    let producer = lens_nats::Producer::new()
        .with_tracer(setup.tracer())
        .with_baggage_keys(on)
        .client(setup.client.clone());
    let consumer = setup.consumer().with_baggage_keys(on);
    let mut sub = consumer.subscriber(
        &setup.client,
        setup.client.subscribe("orders").await.unwrap(),
    );
    let cx = Context::new()
        .with_baggage_entry("a", "1")
        .and_then(|cx| cx.with_baggage_entry("b", "2"))
        .unwrap();
    producer
        .publish("orders", "x".into())
        .with_context(cx)
        .await
        .unwrap();
    drop(sub.next().await.unwrap());
    let spans = setup.recorder.wait_for(2).await;
    Some([
        named(&spans, "send orders").clone(),
        named(&spans, "process orders").clone(),
    ])
}

#[tokio::test]
async fn records_the_keys_and_no_values() {
    let Some(spans) = send_and_process(true).await else {
        return;
    };
    spans.iter().for_each(assert_keys_only);
}

#[tokio::test]
async fn off_by_default() {
    let Some(spans) = send_and_process(false).await else {
        return;
    };
    spans.iter().for_each(assert_not_recorded);
}
