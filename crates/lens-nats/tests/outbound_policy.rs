//! The outbound policy per subject as well as per server: one server carries internal
//! subjects and subjects others read.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::Setup;
use futures_util::StreamExt;
use lens_core::OutboundPolicy;
use lens_nats::OutboundDestinationPolicy;

#[tokio::test]
async fn a_rule_per_subject_pattern_decides_for_its_subjects() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    let mut raw = setup.client.subscribe(">").await.unwrap();
    let producer = lens_nats::Producer::new()
        .with_tracer(setup.tracer())
        .with_outbound_policy(
            OutboundDestinationPolicy::new(OutboundPolicy::default())
                .for_destination(
                    "partner.>",
                    OutboundPolicy::default()
                        .trace_context_only_to(Vec::<String>::new())
                        .no_baggage(),
                )
                .for_destination(
                    "audit.*",
                    OutboundPolicy::default().trace_context_only_to(["elsewhere"]),
                ),
        )
        .client(setup.client.clone());
    for subject in ["jobs.rollout", "partner.orders.new", "audit.x"] {
        producer.publish(subject, "x".into()).await.unwrap();
    }
    let has_context = |m: &async_nats::Message| {
        m.headers
            .as_ref()
            .is_some_and(|h| h.get("traceparent").is_some())
    };
    let internal = raw.next().await.unwrap();
    assert_eq!(internal.subject.as_str(), "jobs.rollout");
    assert!(has_context(&internal));
    let partner = raw.next().await.unwrap();
    assert!(!has_context(&partner), "the partner rule sends nothing");
    // The rule for audit.* decides by the server too: 127.0.0.1 is not `elsewhere`.
    let audit = raw.next().await.unwrap();
    assert!(!has_context(&audit));
}

#[tokio::test]
async fn a_plain_outbound_policy_still_works() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    let mut raw = setup.client.subscribe("jobs").await.unwrap();
    let producer = lens_nats::Producer::new()
        .with_tracer(setup.tracer())
        .with_outbound_policy(OutboundPolicy::default().trace_context_only_to(["127.0.0.1"]))
        .client(setup.client.clone());
    producer.publish("jobs", "x".into()).await.unwrap();
    let message = raw.next().await.unwrap();
    assert!(message.headers.unwrap().get("traceparent").is_some());
}
