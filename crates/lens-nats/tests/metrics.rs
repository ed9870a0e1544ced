//! With a meter, a publish and its processing record the messaging metrics with the NATS
//! attributes; without one, a traced client and subscriber record none.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::Setup;
use futures_util::StreamExt;
use lens_testkit::metrics::Metrics;

async fn publish_and_process(setup: &Setup, metrics: Option<&Metrics>) {
    let mut producer = lens_nats::Producer::new().with_tracer(setup.tracer());
    let mut consumer = setup.consumer();
    if let Some(metrics) = metrics {
        producer = producer.with_meter(metrics.meter("producer"));
        consumer = consumer.with_meter(metrics.meter("consumer"));
    }
    let mut sub = consumer.subscriber(&setup.client, setup.client.subscribe("m").await.unwrap());
    producer
        .client(setup.client.clone())
        .publish("m", "x".into())
        .await
        .unwrap();
    drop(sub.next().await.unwrap());
}

#[tokio::test]
async fn a_meter_records_the_messaging_metrics() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    let metrics = Metrics::new();
    publish_and_process(&setup, Some(&metrics)).await;

    let sent = metrics.series("messaging.client.sent.messages");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].value, 1.0);
    assert_eq!(sent[0].get("messaging.system"), Some("nats"));
    // Subjects may be many: the metrics carry none unless told they are few.
    assert_eq!(sent[0].get("messaging.destination.name"), None);
    let port = setup.server.port().to_string();
    assert_eq!(sent[0].get("server.port"), Some(port.as_str()));
    let duration = metrics.series("messaging.client.operation.duration");
    assert_eq!(duration.len(), 1);
    assert_eq!(duration[0].get("messaging.operation.type"), Some("send"));
    let process = metrics.series("messaging.process.duration");
    assert_eq!(process.len(), 1);
    assert_eq!(process[0].value, 1.0);
    let consumed = metrics.series("messaging.client.consumed.messages");
    assert_eq!(consumed.len(), 1);
    assert_eq!(consumed[0].value, 1.0);
}

#[tokio::test]
async fn without_a_meter_nothing_is_recorded() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    // A meter provider installed globally, and no `with_meter`: nothing goes to it.
    let metrics = Metrics::new();
    opentelemetry::global::set_meter_provider(metrics.provider().clone());
    publish_and_process(&setup, None).await;
    assert!(metrics.collect().is_empty());
}
