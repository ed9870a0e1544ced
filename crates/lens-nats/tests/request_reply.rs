//! Request/reply: the responder's `process` span is the child of the request's span, the reply
//! it publishes while processing lands in the same trace; a request nobody answers is a failed
//! `send` (`error.type` = `no_responders`).
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

    let spans = setup.recorder.wait_for(3).await;
    let request = named(&spans, "send svc.echo");
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
async fn a_request_nobody_answers_is_a_failed_send() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    let error = setup
        .producer()
        .request("nobody.home", "ping".into())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), async_nats::RequestErrorKind::NoResponders);
    let spans = setup.recorder.wait_for(1).await;
    let send = named(&spans, "send nobody.home");
    assert_eq!(attr(send, "error.type"), Some("no_responders".into()));
    assert!(matches!(send.status, Status::Error { .. }));
}
