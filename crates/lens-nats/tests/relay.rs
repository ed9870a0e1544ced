//! A relay forwarding a message with the `traceparent` it arrived with: the `send` span's
//! context replaces it in the headers (the next consumer is the child of the relay's send),
//! and the send span links to the forwarded context; the outbound policy applies to
//! forwarded trace headers too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use async_nats::HeaderMap;
use common::{Setup, named};
use futures_util::StreamExt;
use lens_core::OutboundPolicy;
use lens_nats::OutboundDestinationPolicy;

const FORWARDED: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn forwarded_headers() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert("traceparent", FORWARDED);
    headers.insert("tracestate", "vendor=1");
    headers.insert("baggage", "team=rl");
    headers.insert("x-app", "kept");
    headers
}

#[tokio::test]
async fn a_forwarded_traceparent_is_replaced_and_linked() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    let mut raw = setup.client.subscribe("relayed").await.unwrap();
    setup
        .producer()
        .publish_with_headers("relayed", forwarded_headers(), "x".into())
        .await
        .unwrap();
    let message = raw.next().await.unwrap();
    let headers = message.headers.unwrap();
    let spans = setup.recorder.wait_for(1).await;
    let send = named(&spans, "send relayed");
    let sent = headers.get("traceparent").unwrap().as_str();
    assert!(sent.contains(&send.span_context.span_id().to_string()));
    assert_eq!(headers.get_all("traceparent").count(), 1);
    assert_eq!(headers.get("x-app").unwrap().as_str(), "kept");
    assert_eq!(send.links.len(), 1);
    assert_eq!(
        send.links[0].span_context.span_id().to_string(),
        "00f067aa0ba902b7"
    );
}

#[tokio::test]
async fn the_policy_withholds_forwarded_trace_headers() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    let mut raw = setup.client.subscribe("partner.relayed").await.unwrap();
    let producer = lens_nats::Producer::new()
        .with_tracer(setup.tracer())
        .with_outbound_policy(
            OutboundDestinationPolicy::new(OutboundPolicy::default()).for_destination(
                "partner.>",
                OutboundPolicy::default()
                    .trace_context_only_to(Vec::<String>::new())
                    .no_baggage(),
            ),
        )
        .client(setup.client.clone());
    producer
        .publish_with_headers("partner.relayed", forwarded_headers(), "x".into())
        .await
        .unwrap();
    let headers = raw.next().await.unwrap().headers.unwrap();
    assert!(headers.get("traceparent").is_none());
    assert!(headers.get("tracestate").is_none());
    assert!(headers.get("baggage").is_none());
    assert_eq!(headers.get("x-app").unwrap().as_str(), "kept");
}
