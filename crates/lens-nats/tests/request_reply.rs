//! Request/reply: the request is a `send` span ended at the hand-over and the wait for the
//! reply a CLIENT `receive` span (never mixed into `send`); the responder's `process` span is
//! the child of the request's span, the reply it publishes while processing lands in the same
//! trace; a request nobody answers fails its wait (`error.type` = `no_responders`), a request
//! with its own timeout times out (`send_request`); `publish_with_reply` is traced.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{Setup, attr, named};
use futures_util::StreamExt;
use opentelemetry::trace::{SpanKind, Status};

#[tokio::test]
async fn the_reply_lands_in_the_requesters_trace() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    let mut requests = setup.consumer().subscriber(
        &setup.client,
        setup.client.subscribe("svc.echo").await.unwrap(),
    );
    let responder = setup.producer();
    let server = tokio::spawn(async move {
        let request = requests.next().await.unwrap();
        let reply = request.reply.clone().unwrap();
        request
            .in_span(responder.publish(reply, request.payload.clone()))
            .await
            .unwrap();
    });
    let answer = setup
        .producer()
        .request("svc.echo", "ping".into())
        .await
        .unwrap();
    assert_eq!(answer.payload, "ping");
    server.await.unwrap();

    let spans = setup.recorder.wait_for(4).await;
    let request = named(&spans, "send svc.echo");
    let wait = named(&spans, "receive");
    assert_eq!(request.span_kind, SpanKind::Producer);
    assert_eq!(wait.span_kind, SpanKind::Client);
    assert_eq!(
        attr(wait, "messaging.operation.type"),
        Some("receive".into())
    );
    assert_eq!(
        attr(wait, "messaging.destination.temporary"),
        Some(true.into())
    );
    // The send span ends at the hand-over, before the wait for the reply begins.
    assert!(request.end_time <= wait.start_time);
    assert_eq!(wait.parent_span_id, request.parent_span_id);
    let process = named(&spans, "process svc.echo");
    // The reply goes to a temporary inbox: its span is named by the operation alone.
    let reply = named(&spans, "send");
    assert_eq!(process.parent_span_id, request.span_context.span_id());
    assert_eq!(reply.parent_span_id, process.span_context.span_id());
    assert_eq!(reply.span_kind, SpanKind::Producer);
    assert_eq!(
        reply.span_context.trace_id(),
        request.span_context.trace_id()
    );
    assert_eq!(
        attr(reply, "messaging.destination.temporary"),
        Some(true.into())
    );
}

#[tokio::test]
async fn a_request_nobody_answers_fails_its_wait() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    let error = setup
        .producer()
        .request("nobody.home", "ping".into())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), async_nats::RequestErrorKind::NoResponders);
    let spans = setup.recorder.wait_for(2).await;
    let send = named(&spans, "send nobody.home");
    assert_eq!(send.status, Status::Unset, "the request was sent");
    let wait = named(&spans, "receive");
    assert_eq!(attr(wait, "error.type"), Some("no_responders".into()));
    assert!(matches!(wait.status, Status::Error { .. }));
}

#[tokio::test]
async fn send_request_with_its_own_timeout() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    // Someone listens, no one answers.
    let _silent = setup.client.subscribe("svc.slow").await.unwrap();
    setup.client.flush().await.unwrap();
    let error = setup
        .producer()
        .send_request(
            "svc.slow",
            async_nats::Request::new()
                .payload("ping".into())
                .timeout(Some(std::time::Duration::from_millis(100))),
        )
        .await
        .unwrap_err();
    assert_eq!(error.kind(), async_nats::RequestErrorKind::TimedOut);
    let spans = setup.recorder.wait_for(2).await;
    let wait = named(&spans, "receive");
    assert_eq!(attr(wait, "error.type"), Some("timed_out".into()));
}

#[tokio::test]
async fn publish_with_reply_carries_context_and_the_reply_subject() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    let mut raw = setup.client.subscribe("svc.later").await.unwrap();
    setup
        .producer()
        .publish_with_reply("svc.later", "answers.here", "x".into())
        .await
        .unwrap();
    let message = raw.next().await.unwrap();
    assert_eq!(message.reply.as_deref(), Some("answers.here"));
    assert!(message.headers.unwrap().get("traceparent").is_some());
    let spans = setup.recorder.wait_for(1).await;
    named(&spans, "send svc.later");
}
