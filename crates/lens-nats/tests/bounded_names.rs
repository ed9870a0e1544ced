//! Bounded names (semconv 1.44): span names and metrics by destination template (a
//! consumer's subscription pattern, a producer's declared template), the subject on spans
//! only unless declared low-cardinality; the queue group and the durable consumer on consumer
//! spans and metrics; the body size opt-in; a failed pull counts no consumed message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use async_nats::jetstream::{self, consumer, stream};
use common::{Setup, attr, named};
use futures_util::StreamExt;
use lens_testkit::metrics::Metrics;

#[tokio::test]
async fn a_subject_per_run_makes_one_span_name_and_one_series() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    let metrics = Metrics::new();
    let consumer = setup
        .consumer()
        .with_meter(metrics.meter("consumer"))
        .with_message_body_size(true);
    let mut jobs = consumer
        .queue_subscribe(&setup.client, "rollout.jobs.*", "workers")
        .await
        .unwrap();
    let producer = lens_nats::Producer::new()
        .with_tracer(setup.tracer())
        .with_meter(metrics.meter("producer"))
        .with_destination_template("rollout.jobs.*")
        .client(setup.client.clone());
    for run in ["7f3a", "9c21"] {
        producer
            .publish(format!("rollout.jobs.{run}"), "job".into())
            .await
            .unwrap();
        drop(jobs.next().await.unwrap());
    }

    let spans = setup.recorder.wait_for(4).await;
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
    assert_eq!(
        names
            .iter()
            .filter(|n| **n == "send rollout.jobs.*")
            .count(),
        2,
        "{names:?}"
    );
    assert_eq!(
        names
            .iter()
            .filter(|n| **n == "process rollout.jobs.*")
            .count(),
        2,
        "{names:?}"
    );
    for span in &spans {
        assert_eq!(
            attr(span, "messaging.destination.template"),
            Some("rollout.jobs.*".into())
        );
        let subject = attr(span, "messaging.destination.name")
            .unwrap()
            .to_string();
        assert!(subject.starts_with("rollout.jobs."), "{subject}");
    }
    let process = spans
        .iter()
        .find(|s| s.name == "process rollout.jobs.*")
        .unwrap();
    assert_eq!(
        attr(process, "messaging.consumer.group.name"),
        Some("workers".into())
    );
    assert_eq!(
        attr(process, "messaging.message.body.size"),
        Some(3.into()),
        "opted in"
    );
    let send = spans
        .iter()
        .find(|s| s.name == "send rollout.jobs.*")
        .unwrap();
    assert_eq!(
        attr(send, "messaging.message.body.size"),
        None,
        "not opted in"
    );

    let sent = metrics.series("messaging.client.sent.messages");
    assert_eq!(sent.len(), 1, "one series for both runs");
    assert_eq!(sent[0].value, 2.0);
    assert_eq!(
        sent[0].get("messaging.destination.template"),
        Some("rollout.jobs.*")
    );
    assert_eq!(sent[0].get("messaging.destination.name"), None);
    let consumed = metrics.series("messaging.client.consumed.messages");
    assert_eq!(consumed.len(), 1);
    assert_eq!(
        consumed[0].get("messaging.consumer.group.name"),
        Some("workers")
    );
    assert_eq!(
        consumed[0].get("messaging.destination.template"),
        Some("rollout.jobs.*")
    );
}

#[tokio::test]
async fn low_cardinality_subjects_reach_the_metrics() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    let metrics = Metrics::new();
    let producer = lens_nats::Producer::new()
        .with_tracer(setup.tracer())
        .with_meter(metrics.meter("producer"))
        .with_low_cardinality_subjects(true)
        .client(setup.client.clone());
    producer.publish("orders", "x".into()).await.unwrap();
    let sent = metrics.series("messaging.client.sent.messages");
    assert_eq!(sent[0].get("messaging.destination.name"), Some("orders"));
    let spans = setup.recorder.wait_for(1).await;
    // No template: the span is named by the subject, as the conventions say.
    named(&spans, "send orders");
}

#[tokio::test]
async fn a_durable_consumer_is_the_subscription_name() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    let js = jetstream::new(setup.client.clone());
    let stream = js
        .create_stream(stream::Config {
            name: "ORDERS".into(),
            subjects: vec!["orders.>".into()],
            ..Default::default()
        })
        .await
        .unwrap();
    let mut pull: consumer::PullConsumer = stream
        .create_consumer(consumer::pull::Config {
            durable_name: Some("billing".into()),
            filter_subject: "orders.>".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    js.publish("orders.1", "x".into())
        .await
        .unwrap()
        .await
        .unwrap();
    let metrics = Metrics::new();
    let subscription = lens_nats::Subscription::of_jetstream(pull.info().await.unwrap());
    let consumer = setup.consumer().with_meter(metrics.meter("consumer"));
    let mut orders = consumer.stream(&setup.client, subscription, pull.messages().await.unwrap());
    let order = orders.next().await.unwrap().unwrap();
    order.process(async |o| o.ack().await).await.unwrap();

    let spans = setup.recorder.wait_for(2).await;
    let process = named(&spans, "process orders.>");
    assert_eq!(
        attr(process, "messaging.destination.subscription.name"),
        Some("billing".into())
    );
    let settle = named(&spans, "ack orders.>");
    assert_eq!(
        attr(settle, "messaging.destination.subscription.name"),
        Some("billing".into())
    );
    let consumed = metrics.series("messaging.client.consumed.messages");
    assert_eq!(
        consumed[0].get("messaging.destination.subscription.name"),
        Some("billing")
    );
}

#[tokio::test]
async fn a_failed_pull_counts_no_consumed_message() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    // The pull request fails as async-nats reports it (a broken connection: `Pull`).
    let failing = async {
        Err(consumer::pull::BatchError::new(
            consumer::pull::BatchErrorKind::Pull,
        ))
    };
    let metrics = Metrics::new();
    let consumer = setup.consumer().with_meter(metrics.meter("consumer"));
    let received = consumer.receive(&setup.client, "ORDERS", failing).await;
    assert!(received.is_err());
    let duration = metrics.series("messaging.client.operation.duration");
    assert_eq!(duration.len(), 1, "the failed receive is timed");
    assert!(duration[0].get("error.type").is_some());
    assert!(
        metrics
            .series("messaging.client.consumed.messages")
            .iter()
            .all(|p| p.value == 0.0),
        "{:?}",
        metrics.series("messaging.client.consumed.messages")
    );
}
