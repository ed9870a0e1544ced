//! Core publish into a subscriber (plain and queue group): a PRODUCER `send` span whose
//! context travels in the message's headers beside the caller's, a CONSUMER `process` span
//! that is its child, current inside `in_span`, ended once when the message is dropped.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use async_nats::HeaderMap;
use common::{Setup, attr, named};
use futures_util::StreamExt;
use opentelemetry::Context;
use opentelemetry::trace::{SpanKind, TraceContextExt};

#[tokio::test]
async fn the_process_span_is_the_child_of_the_send_span() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    let consumer = setup.consumer();
    let mut sub = consumer.subscriber(
        &setup.client,
        setup.client.subscribe("jobs.rollout").await.unwrap(),
    );
    let mut queue = consumer.subscriber(
        &setup.client,
        setup
            .client
            .queue_subscribe("jobs.rollout", "workers".into())
            .await
            .unwrap(),
    );
    let producer = setup.producer();
    let mut headers = HeaderMap::new();
    headers.insert("x-app", "kept");
    producer
        .publish_with_headers("jobs.rollout", headers, "step 1".into())
        .await
        .unwrap();

    let message = sub.next().await.unwrap();
    assert_eq!(message.payload, "step 1");
    let headers = message.headers.as_ref().unwrap();
    assert_eq!(headers.get("x-app").unwrap().as_str(), "kept");
    let traceparent = headers.get("traceparent").unwrap().as_str().to_owned();
    // The handler sees the process span as current.
    let current = message
        .in_span(async { Context::current().span().span_context().clone() })
        .await;
    assert_eq!(current, message.context().span().span_context().clone());
    drop(message);
    let queued = queue.next().await.unwrap();
    drop(queued);

    let spans = setup.recorder.wait_for(3).await;
    assert_eq!(spans.len(), 3, "each span ended once");
    let send = named(&spans, "send jobs.rollout");
    assert_eq!(send.span_kind, SpanKind::Producer);
    assert_eq!(attr(send, "messaging.system"), Some("nats".into()));
    assert_eq!(attr(send, "messaging.operation.type"), Some("send".into()));
    // Opt-in, as the conventions have it.
    assert_eq!(attr(send, "messaging.message.body.size"), None);
    assert_eq!(
        attr(send, "server.port"),
        Some(i64::from(setup.server.port()).into())
    );
    assert_eq!(
        traceparent,
        format!(
            "00-{}-{}-03",
            send.span_context.trace_id(),
            send.span_context.span_id()
        )
    );
    let processes: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "process jobs.rollout")
        .collect();
    assert_eq!(processes.len(), 2);
    for process in processes {
        assert_eq!(process.span_kind, SpanKind::Consumer);
        assert_eq!(
            process.span_context.trace_id(),
            send.span_context.trace_id()
        );
        assert_eq!(process.parent_span_id, send.span_context.span_id());
        assert_eq!(attr(process, "lens.trace.new_root"), None);
        assert_eq!(current.trace_id(), send.span_context.trace_id());
    }
}

#[tokio::test]
async fn the_publishers_span_is_the_child_of_the_current_one() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    let consumer = setup.consumer();
    let mut sub = consumer.subscriber(&setup.client, setup.client.subscribe("a").await.unwrap());
    use opentelemetry::trace::Tracer as _;
    let parent = setup.tracer().start("caller");
    let cx = Context::new().with_span(parent);
    let parent_id = cx.span().span_context().span_id();
    {
        let _guard = cx.clone().attach();
        setup.producer().publish("a", "x".into()).await.unwrap();
    }
    drop(sub.next().await.unwrap());
    let spans = setup.recorder.wait_for(2).await;
    assert_eq!(named(&spans, "send a").parent_span_id, parent_id);
}
