//! JetStream: a publish's `send` span ends at the hand-over and its ack, awaited later
//! (pipelined), is a `publish_ack` span (its sequence recorded, the same number the consumer
//! records; a duplicate recorded; a failed publish classified), a pull consumer's messages one by one
//! with `ack` / `nak` / `term` as `settle` spans, and a fetched batch as one `receive` span
//! that links to every message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use async_nats::jetstream::{self, consumer, stream};
use common::{Setup, attr, named};
use futures_util::StreamExt;
use opentelemetry::trace::{SpanKind, Status};

async fn stream_and_consumer(setup: &Setup) -> consumer::PullConsumer {
    let js = jetstream::new(setup.client.clone());
    let stream = js
        .create_stream(stream::Config {
            name: "ORDERS".into(),
            subjects: vec!["orders.>".into()],
            ..Default::default()
        })
        .await
        .unwrap();
    stream
        .create_consumer(consumer::pull::Config {
            durable_name: Some("workers".into()),
            ..Default::default()
        })
        .await
        .unwrap()
}

fn traced_jetstream(setup: &Setup) -> lens_nats::TracedJetStream {
    lens_nats::Producer::new()
        .with_tracer(setup.tracer())
        .jetstream(jetstream::new(setup.client.clone()))
}

#[tokio::test]
async fn publish_then_process_one_by_one_with_settlements() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    let pull = stream_and_consumer(&setup).await;
    let js = traced_jetstream(&setup);
    // Pipelined, as with async-nats: publish all, then await the acks.
    let mut acks = Vec::new();
    for n in 0..3 {
        acks.push(
            js.publish(format!("orders.{n}"), "order".into())
                .await
                .unwrap(),
        );
    }
    let mut sequences = Vec::new();
    for ack in acks {
        sequences.push(ack.await.unwrap().sequence);
    }
    let mut messages = setup
        .consumer()
        .messages(&setup.client, pull.messages().await.unwrap());
    for settle in ["ack", "nak", "term"] {
        let message = messages.next().await.unwrap().unwrap();
        message
            .in_span(async {
                match settle {
                    "ack" => message.ack().await,
                    // Redelivery delayed: the next message taken is the next one sent.
                    "nak" => message.nak(Some(std::time::Duration::from_secs(60))).await,
                    _ => message.term().await,
                }
            })
            .await
            .unwrap();
    }

    let spans = setup.recorder.wait_for(12).await;
    for (n, settle) in ["ack", "nak", "term"].iter().enumerate() {
        let send = named(&spans, &format!("send orders.{n}"));
        let acked = named(&spans, &format!("publish_ack orders.{n}"));
        assert_eq!(acked.parent_span_id, send.span_context.span_id());
        assert_eq!(acked.span_kind, SpanKind::Client);
        assert_eq!(attr(acked, "messaging.nats.stream"), Some("ORDERS".into()));
        assert_eq!(attr(acked, "messaging.nats.duplicate"), Some(false.into()));
        let seq = i64::try_from(sequences[n]).unwrap();
        assert_eq!(
            attr(acked, "messaging.nats.stream_sequence"),
            Some(seq.into())
        );
        let process = named(&spans, &format!("process orders.{n}"));
        assert_eq!(process.parent_span_id, send.span_context.span_id());
        assert_eq!(
            attr(process, "messaging.nats.stream_sequence"),
            Some(seq.into())
        );
        let settlement = named(&spans, &format!("{settle} orders.{n}"));
        assert_eq!(settlement.span_kind, SpanKind::Client);
        assert_eq!(
            attr(settlement, "messaging.operation.type"),
            Some("settle".into())
        );
        assert_eq!(settlement.parent_span_id, process.span_context.span_id());
    }
}

#[tokio::test]
async fn a_fetched_batch_is_one_receive_span_linked_to_every_message() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    let pull = stream_and_consumer(&setup).await;
    let js = traced_jetstream(&setup);
    for _ in 0..3 {
        js.publish("orders.new", "order".into())
            .await
            .unwrap()
            .await
            .unwrap();
    }
    let consumer = setup.consumer();
    let batch = consumer
        .receive(
            &setup.client,
            "ORDERS",
            pull.fetch().max_messages(3).messages(),
        )
        .await
        .unwrap();
    assert_eq!(batch.len(), 3);
    let receive_id = batch.receive_span_context().unwrap().span_id();
    for message in batch {
        message.ack().await.unwrap();
    }

    let spans = setup.recorder.wait_for(3 + 3 + 1 + 3 + 3).await;
    let receive = named(&spans, "receive ORDERS");
    assert_eq!(receive.span_kind, SpanKind::Client);
    assert_eq!(
        attr(receive, "messaging.batch.message_count"),
        Some(3.into())
    );
    let sends: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "send orders.new")
        .collect();
    assert_eq!(sends.len(), 3);
    let linked: Vec<_> = receive
        .links
        .iter()
        .map(|l| l.span_context.span_id())
        .collect();
    for send in &sends {
        assert!(linked.contains(&send.span_context.span_id()));
    }
    for process in spans.iter().filter(|s| s.name == "process orders.new") {
        // Each message's process span: the child of its message, linked to the receive span.
        assert!(
            sends
                .iter()
                .any(|s| s.span_context.span_id() == process.parent_span_id)
        );
        assert_eq!(process.links.len(), 1);
        assert_eq!(process.links[0].span_context.span_id(), receive_id);
    }
}

#[tokio::test]
async fn a_publish_no_stream_takes_is_classified() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    let error = traced_jetstream(&setup)
        .publish("nowhere", "x".into())
        .await
        .unwrap()
        .await
        .unwrap_err();
    let spans = setup.recorder.wait_for(2).await;
    // Handed over: the send succeeded; the stream's answer failed.
    assert_eq!(named(&spans, "send nowhere").status, Status::Unset);
    let send = named(&spans, "publish_ack nowhere");
    assert!(matches!(send.status, Status::Error { .. }));
    let want = match error.kind() {
        jetstream::context::PublishErrorKind::StreamNotFound => "stream_not_found",
        other => panic!("unexpected {other:?}"),
    };
    assert_eq!(attr(send, "error.type"), Some(want.into()));
}

#[tokio::test]
async fn send_publish_and_a_duplicate() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    let _pull = stream_and_consumer(&setup).await;
    let js = traced_jetstream(&setup);
    let mut raw = setup.client.subscribe("orders.dup").await.unwrap();
    for _ in 0..2 {
        let publish = jetstream::message::PublishMessage::build()
            .payload("order".into())
            .message_id("order-1");
        let ack = js.send_publish("orders.dup", publish).await.unwrap();
        ack.await.unwrap();
    }
    // The builder's message id and lens's trace context both went out.
    let first = raw.next().await.unwrap();
    let headers = first.headers.unwrap();
    assert_eq!(headers.get("Nats-Msg-Id").unwrap().as_str(), "order-1");
    assert!(headers.get("traceparent").is_some());
    let spans = setup.recorder.wait_for(4).await;
    let duplicates: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "publish_ack orders.dup")
        .map(|s| attr(s, "messaging.nats.duplicate"))
        .collect();
    assert_eq!(duplicates.len(), 2);
    assert!(duplicates.contains(&Some(true.into())));
    assert!(duplicates.contains(&Some(false.into())));
}
