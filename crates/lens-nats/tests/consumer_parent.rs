//! Parent or link over a real broker: a consumer that asks for links only starts a new trace
//! linked to the producer's span (`lens.trace.new_root` = `linked`); the inbound policy chosen
//! per subject links or ignores what a message carried.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{Setup, attr, named};
use futures_util::StreamExt;
use lens_core::InboundPolicy;
use lens_nats::{ConsumerParent, DestinationPolicy};

async fn one_message(setup: &Setup, consumer: lens_nats::Consumer, subject: &str) {
    let mut sub = consumer.subscriber(
        &setup.client,
        setup.client.subscribe(subject.to_owned()).await.unwrap(),
    );
    setup
        .producer()
        .publish(subject.to_owned(), "x".into())
        .await
        .unwrap();
    drop(sub.next().await.unwrap());
}

#[tokio::test]
async fn links_only() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    let consumer = setup.consumer().with_consumer_parent(ConsumerParent::Links);
    one_message(&setup, consumer, "events").await;
    let spans = setup.recorder.wait_for(2).await;
    let send = named(&spans, "send events");
    let process = named(&spans, "process events");
    assert_ne!(
        process.span_context.trace_id(),
        send.span_context.trace_id()
    );
    assert_eq!(process.links.len(), 1);
    assert_eq!(
        process.links[0].span_context.span_id(),
        send.span_context.span_id()
    );
    assert_eq!(attr(process, "lens.trace.new_root"), Some("linked".into()));
}

#[tokio::test]
async fn the_policy_is_chosen_per_subject() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    let policy = DestinationPolicy::new(InboundPolicy::trust_all())
        .for_destination("partner.>", InboundPolicy::link_all())
        .for_destination("public.*", InboundPolicy::ignore_all());
    for subject in ["partner.a.b", "public.a", "own.a"] {
        one_message(
            &setup,
            setup.consumer().with_inbound_policy(policy.clone()),
            subject,
        )
        .await;
    }
    let spans = setup.recorder.wait_for(6).await;
    let send = |s: &str| named(&spans, &format!("send {s}")).span_context.clone();
    let process = |s: &str| named(&spans, &format!("process {s}"));

    let linked = process("partner.a.b");
    assert_ne!(
        linked.span_context.trace_id(),
        send("partner.a.b").trace_id()
    );
    assert_eq!(
        linked.links[0].span_context.span_id(),
        send("partner.a.b").span_id()
    );
    assert_eq!(
        attr(linked, "lens.trace.new_root"),
        Some("untrusted:linked".into())
    );

    let ignored = process("public.a");
    assert!(ignored.links.is_empty());
    assert_eq!(
        attr(ignored, "lens.trace.new_root"),
        Some("untrusted:ignored".into())
    );

    let trusted = process("own.a");
    assert_eq!(trusted.parent_span_id, send("own.a").span_id());
}

/// Publishes one message to `subject`, then takes it while the span `ambient` is current,
/// under a consumer with `parent` (the default when `None`).
async fn under_an_ambient_span(setup: &Setup, parent: Option<ConsumerParent>, subject: &str) {
    use opentelemetry::context::FutureExt as _;
    use opentelemetry::trace::{TraceContextExt as _, Tracer as _};
    let mut consumer = setup.consumer();
    if let Some(parent) = parent {
        consumer = consumer.with_consumer_parent(parent);
    }
    let mut sub = consumer.subscriber(
        &setup.client,
        setup.client.subscribe(subject.to_owned()).await.unwrap(),
    );
    setup
        .producer()
        .publish(subject.to_owned(), "x".into())
        .await
        .unwrap();
    let ambient = setup.tracer().start("poll loop");
    let cx = opentelemetry::Context::new().with_span(ambient);
    let message = sub.next().with_context(cx.clone()).await.unwrap();
    drop(message);
    cx.span().end();
}

#[tokio::test]
async fn by_default_an_ambient_span_parents_and_the_message_is_linked() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    under_an_ambient_span(&setup, None, "ambient").await;
    let spans = setup.recorder.wait_for(3).await;
    let send = named(&spans, "send ambient");
    let process = named(&spans, "process ambient");
    let ambient = named(&spans, "poll loop");
    assert_eq!(process.parent_span_id, ambient.span_context.span_id());
    assert_eq!(process.links.len(), 1);
    assert_eq!(
        process.links[0].span_context.span_id(),
        send.span_context.span_id()
    );
    assert_eq!(attr(process, "lens.trace.new_root"), None);
}

#[tokio::test]
async fn by_default_without_an_ambient_span_the_message_parents() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    one_message(&setup, setup.consumer(), "no.ambient").await;
    let spans = setup.recorder.wait_for(2).await;
    let send = named(&spans, "send no.ambient");
    let process = named(&spans, "process no.ambient");
    assert_eq!(process.parent_span_id, send.span_context.span_id());
    assert!(process.links.is_empty());
}

#[tokio::test]
async fn message_as_parent_when_asked_links_the_ambient_span() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    under_an_ambient_span(&setup, Some(ConsumerParent::Message), "asked").await;
    let spans = setup.recorder.wait_for(3).await;
    let send = named(&spans, "send asked");
    let process = named(&spans, "process asked");
    let ambient = named(&spans, "poll loop");
    assert_eq!(process.parent_span_id, send.span_context.span_id());
    assert_eq!(
        process.links[0].span_context.span_id(),
        ambient.span_context.span_id()
    );
}
