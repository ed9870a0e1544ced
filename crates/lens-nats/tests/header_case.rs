//! A `traceparent` written as Go's `propagation.HeaderCarrier` writes it (`Traceparent`, or
//! `TraceParent` by hand) is read when no exact `traceparent` is there; an exact one wins.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use async_nats::HeaderMap;
use common::{Setup, named};
use futures_util::StreamExt;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

async fn parent_of(headers: &[(&str, &str)]) -> Option<String> {
    let setup = Setup::start().await?;
    let mut jobs = setup
        .consumer()
        .subscriber(&setup.client, setup.client.subscribe("jobs").await.unwrap());
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        map.append(*name, *value);
    }
    setup
        .client
        .publish_with_headers("jobs", map, "x".into())
        .await
        .unwrap();
    drop(jobs.next().await.unwrap());
    let spans = setup.recorder.wait_for(1).await;
    let process = named(&spans, "process jobs");
    Some(format!(
        "{}-{}",
        process.span_context.trace_id(),
        process.parent_span_id
    ))
}

#[tokio::test]
async fn go_canonical_names_are_read() {
    for name in ["Traceparent", "TraceParent", "TRACEPARENT"] {
        let Some(parent) = parent_of(&[(
            name,
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        )])
        .await
        else {
            return;
        };
        assert_eq!(parent, format!("{TRACE_ID}-00f067aa0ba902b7"), "{name}");
    }
}

#[tokio::test]
async fn an_exact_traceparent_wins() {
    let Some(parent) = parent_of(&[
        (
            "Traceparent",
            "00-00000000000000000000000000000001-0000000000000001-01",
        ),
        (
            "traceparent",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ),
    ])
    .await
    else {
        return;
    };
    assert_eq!(parent, format!("{TRACE_ID}-00f067aa0ba902b7"));
}

#[tokio::test]
async fn go_tracestate_and_baggage_come_with_it() {
    let Some(setup) = Setup::start().await else {
        return;
    };
    let mut jobs = setup
        .consumer()
        .subscriber(&setup.client, setup.client.subscribe("jobs").await.unwrap());
    let mut map = HeaderMap::new();
    map.append(
        "Traceparent",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    );
    map.append("Tracestate", "vendor=1");
    map.append("Baggage", "team=rl");
    setup
        .client
        .publish_with_headers("jobs", map, "x".into())
        .await
        .unwrap();
    let message = jobs.next().await.unwrap();
    let cx = message.context();
    use opentelemetry::baggage::BaggageExt;
    use opentelemetry::trace::TraceContextExt;
    assert_eq!(cx.span().span_context().trace_state().header(), "vendor=1");
    assert_eq!(
        cx.baggage().get("team").map(|v| v.as_str().to_owned()),
        Some("rl".to_owned())
    );
}
