//! The async-nats `service` API traced with lens-nats's pieces, no wrapper: an endpoint's
//! requests as a stream of messages into `Consumer::stream`, answered through a traced
//! client inside `process` (the example of docs/messaging.md#the-async-nats-service-api).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use async_nats::service::ServiceExt;
use common::{Setup, named};
use futures_util::StreamExt;

#[tokio::test]
async fn an_endpoint_request_is_processed_in_the_requesters_trace() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    let service = setup
        .client
        .service_builder()
        .start("planner", "1.0.0")
        .await
        .unwrap();
    let endpoint = service.endpoint("plan").await.unwrap();
    let mut requests = setup.consumer().stream(
        &setup.client,
        lens_nats::Subscription::subject("plan").with_queue_group("q"),
        endpoint.map(|request| request.message),
    );
    let responder = setup.producer();
    let server = tokio::spawn(async move {
        let message = requests.next().await.unwrap();
        let reply = message.reply.clone().unwrap();
        message
            .process(async |m| responder.publish(reply, m.payload.clone()).await)
            .await
            .unwrap();
    });
    let answer = setup
        .producer()
        .request("plan", "route".into())
        .await
        .unwrap();
    assert_eq!(answer.payload, "route");
    server.await.unwrap();

    let spans = setup.recorder.wait_for(4).await;
    let send = named(&spans, "send plan");
    let process = named(&spans, "process plan");
    let reply = named(&spans, "send");
    assert_eq!(process.parent_span_id, send.span_context.span_id());
    assert_eq!(reply.parent_span_id, process.span_context.span_id());
    assert_eq!(
        common::attr(process, "messaging.consumer.group.name"),
        Some("q".into())
    );
}
