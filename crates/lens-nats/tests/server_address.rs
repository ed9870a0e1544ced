//! `server.address` / `server.port` are the server the client connected to, as the user named
//! it: never the address the server listens on (its `INFO` host: `0.0.0.0` for a server on
//! every interface), never empty; and the outbound policy decides by that same name.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{attr, named};
use futures_util::StreamExt;
use lens_core::OutboundPolicy;
use lens_testkit::nats::NatsServer;
use lens_testkit::recorder::Recorder;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;

/// Publishes one message through `host` to a server listening on every interface, consumes
/// it, and checks both spans' `server.address` / `server.port`.
async fn spans_name(host: &str) {
    let Some(server) = NatsServer::start_on("0.0.0.0") else {
        return;
    };
    let client = async_nats::connect(format!("nats://{host}:{}", server.port()))
        .await
        .unwrap();
    // What the server says of itself: where it listens.
    assert_eq!(client.server_info().host, "0.0.0.0");
    let recorder = Recorder::default();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(recorder.clone())
        .build();
    let consumer = lens_nats::Consumer::new().with_tracer(provider.tracer("test"));
    let mut jobs = consumer.subscriber(&client, client.subscribe("jobs").await.unwrap());
    let producer = lens_nats::Producer::new()
        .with_tracer(provider.tracer("test"))
        .client(client.clone());
    producer.publish("jobs", "x".into()).await.unwrap();
    drop(jobs.next().await.unwrap());

    let spans = recorder.wait_for(2).await;
    for name in ["send jobs", "process jobs"] {
        let span = named(&spans, name);
        assert_eq!(
            attr(span, "server.address"),
            Some(host.to_owned().into()),
            "{name}"
        );
        assert_eq!(
            attr(span, "server.port"),
            Some(i64::from(server.port()).into()),
            "{name}"
        );
    }
}

#[tokio::test]
async fn through_127_0_0_1() {
    spans_name("127.0.0.1").await;
}

#[tokio::test]
async fn through_localhost() {
    spans_name("localhost").await;
}

#[tokio::test]
async fn the_outbound_policy_decides_by_the_name_connected_to() {
    let Some(server) = NatsServer::start_on("0.0.0.0") else {
        return;
    };
    let client = async_nats::connect(format!("nats://localhost:{}", server.port()))
        .await
        .unwrap();
    let mut raw = client.subscribe("jobs").await.unwrap();
    let provider = SdkTracerProvider::builder().build();
    let producer = |hosts: &[&str]| {
        lens_nats::Producer::new()
            .with_tracer(provider.tracer("test"))
            .with_outbound_policy(OutboundPolicy::default().trace_context_only_to(hosts))
            .client(client.clone())
    };
    producer(&["localhost"])
        .publish("jobs", "to localhost".into())
        .await
        .unwrap();
    producer(&["nats.internal"])
        .publish("jobs", "elsewhere".into())
        .await
        .unwrap();
    let sent = raw.next().await.unwrap();
    assert!(
        sent.headers.as_ref().unwrap().get("traceparent").is_some(),
        "the policy lets context go to the server connected to"
    );
    let withheld = raw.next().await.unwrap();
    assert!(
        withheld
            .headers
            .as_ref()
            .is_none_or(|h| h.get("traceparent").is_none()),
        "and no further"
    );
}
