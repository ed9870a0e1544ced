//! Bad input never costs a message: whatever the trace headers hold, the message is delivered
//! as it was sent, its `process` span starts a new trace and records why
//! (`lens.trace.new_root`), and nothing panics. Each case its own message, from an
//! untraced publisher.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use async_nats::HeaderMap;
use common::{Setup, attr};
use futures_util::StreamExt;
use opentelemetry::trace::SpanId;

const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const OTHER: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-1111111111111111-01";

/// Sends `headers` (or none) with a payload, receives the message through lens-nats, checks it
/// arrived as sent, and returns its process span's `(parent span id, lens.trace.new_root,
/// tracestate)`.
async fn deliver(headers: Option<HeaderMap>) -> Option<(SpanId, Option<String>, String)> {
    let setup = Setup::start().await?;
    let mut sub = setup
        .consumer()
        .subscriber(&setup.client, setup.client.subscribe("in").await.unwrap());
    match &headers {
        Some(h) => setup
            .client
            .publish_with_headers("in", h.clone(), "payload".into())
            .await
            .unwrap(),
        None => setup.client.publish("in", "payload".into()).await.unwrap(),
    }
    let message = sub.next().await.unwrap();
    assert_eq!(message.payload, "payload");
    match &headers {
        // Every header as sent, every value of it.
        Some(h) => {
            let got = message.headers.as_ref().unwrap();
            for (name, values) in h.iter() {
                let got: Vec<_> = got.get_all(name.clone()).collect();
                assert_eq!(got, values.iter().collect::<Vec<_>>(), "{name}");
            }
        }
        None => assert!(message.headers.as_ref().is_none_or(HeaderMap::is_empty)),
    }
    drop(message);
    let span = setup.recorder.wait_for(1).await.remove(0);
    let new_root = attr(&span, "lens.trace.new_root").map(|v| v.as_str().into_owned());
    Some((
        span.parent_span_id,
        new_root,
        span.span_context.trace_state().header(),
    ))
}

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (name, value) in pairs {
        headers.append(*name, *value);
    }
    headers
}

#[tokio::test]
async fn no_headers_at_all() {
    let Some((parent, cause, _)) = deliver(None).await else {
        return;
    };
    assert_eq!(parent, SpanId::INVALID);
    assert_eq!(cause.as_deref(), Some("none"));
}

#[tokio::test]
async fn headers_without_trace_context() {
    let Some((parent, cause, _)) = deliver(Some(headers(&[("x-app", "1")]))).await else {
        return;
    };
    assert_eq!(parent, SpanId::INVALID);
    assert_eq!(cause.as_deref(), Some("none"));
}

#[tokio::test]
async fn malformed_traceparent() {
    let Some((parent, cause, _)) =
        deliver(Some(headers(&[("traceparent", "00-not-a-traceparent-01")]))).await
    else {
        return;
    };
    assert_eq!(parent, SpanId::INVALID);
    assert_eq!(cause.as_deref(), Some("rejected:traceparent-length"));
}

#[tokio::test]
async fn duplicated_traceparent_that_differs() {
    let Some((parent, cause, _)) = deliver(Some(headers(&[
        ("traceparent", TP),
        ("traceparent", OTHER),
    ])))
    .await
    else {
        return;
    };
    assert_eq!(parent, SpanId::INVALID);
    assert_eq!(cause.as_deref(), Some("rejected:traceparent-repeated"));
}

#[tokio::test]
async fn identical_repeats_count_as_one() {
    let Some((parent, cause, _)) =
        deliver(Some(headers(&[("traceparent", TP), ("traceparent", TP)]))).await
    else {
        return;
    };
    assert_eq!(parent.to_string(), "00f067aa0ba902b7");
    assert_eq!(cause, None);
}

#[tokio::test]
async fn oversized_traceparent() {
    // A future version may carry more after the flags, but not past 512 bytes.
    let long = format!(
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-{}",
        "x".repeat(600)
    );
    let Some((parent, cause, _)) = deliver(Some(headers(&[("traceparent", &long)]))).await else {
        return;
    };
    assert_eq!(parent, SpanId::INVALID);
    assert_eq!(cause.as_deref(), Some("rejected:traceparent-length"));
}

#[tokio::test]
async fn non_ascii_traceparent() {
    let value = TP.replace("4bf9", "4bé9");
    let Some((parent, cause, _)) = deliver(Some(headers(&[("traceparent", &value)]))).await else {
        return;
    };
    assert_eq!(parent, SpanId::INVALID);
    assert_eq!(cause.as_deref(), Some("rejected:traceparent-whitespace"));
}

#[tokio::test]
async fn tracestate_over_the_limits_is_dropped_and_the_parent_kept() {
    let members: Vec<String> = (0..33).map(|i| format!("k{i}=v")).collect();
    let tracestate = members.join(",");
    let Some((parent, cause, state)) = deliver(Some(headers(&[
        ("traceparent", TP),
        ("tracestate", &tracestate),
    ])))
    .await
    else {
        return;
    };
    assert_eq!(parent.to_string(), "00f067aa0ba902b7");
    assert_eq!(cause, None);
    assert_eq!(state, "");
}
