//! One message of a case, either way: core publish, request/reply, JetStream.

use std::time::Duration;

use futures_util::StreamExt;
use opentelemetry::Context;
use opentelemetry::context::FutureExt as _;
use opentelemetry::trace::{TraceContextExt, Tracer};
use serde_json::json;

use super::case::{Case, Mode};
use super::observed::{Handled, Observed, Published, w3c_headers};
use super::rust_side::Rust;
use crate::describe::{Seen, seen};
use crate::error::{Error, Result};
use crate::python::PythonProcess;

/// How long the Rust side waits for a message the Python side sent.
pub(super) const RECEIVE_TIMEOUT: Duration = Duration::from_secs(30);

/// The Python peer publishes; a lens-nats consumer handles the message.
pub(super) async fn python_to_rust(
    peer: &mut PythonProcess,
    rust: &mut Rust,
    case: &Case,
) -> Result<Observed> {
    let mode = match case.mode {
        Mode::Core => "core",
        Mode::Request => "request",
        Mode::JetStream => "jetstream",
    };
    let answer = tokio::task::block_in_place(|| {
        peer.request(&json!({
            "op": "publish",
            "mode": mode,
            "subject": case.subject(),
            "parent": case.parent,
            "payload": case.name,
        }))
    })?;
    let published: Published =
        serde_json::from_value(answer).map_err(Error::json("nats_peer publish answer"))?;
    let timeout = |what: &str| Error::Timeout {
        what: format!("the rust consumer: {what}"),
        after: RECEIVE_TIMEOUT,
    };
    let mut reply = None;
    let handled = match case.mode {
        Mode::Core => {
            let message = tokio::time::timeout(RECEIVE_TIMEOUT, rust.core.next())
                .await
                .map_err(|_| timeout("core message"))?
                .ok_or_else(|| timeout("core subscription ended"))?;
            let consumer = message.in_span(async { seen(&Context::current()) }).await;
            Handled::rust(&message, consumer, None)
        }
        Mode::Request => {
            let handled = tokio::time::timeout(RECEIVE_TIMEOUT, rust.requests.recv())
                .await
                .map_err(|_| timeout("request"))?
                .ok_or_else(|| timeout("responder ended"))?
                .map_err(|message| Error::Nats {
                    what: "the rust responder".into(),
                    message,
                })?;
            if let Some(r) = &published.reply {
                let said: Option<Seen> =
                    serde_json::from_value(r.payload["rust_consumer"].clone()).ok();
                reply = said.map(|s| (s, r.headers.clone()));
            }
            handled
        }
        Mode::JetStream => {
            let message = tokio::time::timeout(RECEIVE_TIMEOUT, rust.pulled.next())
                .await
                .map_err(|_| timeout("JetStream message"))?
                .ok_or_else(|| timeout("pull stream ended"))?
                .map_err(Error::nats("pulling a JetStream message"))?;
            let (consumer, acked) = message
                .in_span(async { (seen(&Context::current()), message.ack().await) })
                .await;
            acked.map_err(Error::nats("acking"))?;
            let sequence = message.info().ok().map(|i| i.stream_sequence);
            Handled::rust(&message.message, consumer, sequence)
        }
    };
    Ok(Observed {
        published,
        caller: None,
        handled,
        reply,
    })
}

/// A lens-nats producer publishes; the Python peer's handler handles the message.
pub(super) async fn rust_to_python(
    peer: &mut PythonProcess,
    rust: &Rust,
    tracer: &opentelemetry_sdk::trace::SdkTracer,
    case: &Case,
) -> Result<Observed> {
    let mut cx = case.parent.build()?;
    if case.caller_span {
        let span = tracer.start_with_context("rust.caller", &cx);
        cx = cx.with_span(span);
    }
    let subject = case.subject();
    let payload = bytes::Bytes::from_static(case.name.as_bytes());
    let mut published = Published::default();
    let mut reply = None;
    match case.mode {
        Mode::Core => {
            rust.producer
                .publish(subject, payload)
                .with_context(cx.clone())
                .await
                .map_err(Error::nats("publishing"))?;
        }
        Mode::Request => {
            let answer = rust
                .producer
                .request(subject, payload)
                .with_context(cx.clone())
                .await
                .map_err(Error::nats("requesting"))?;
            let body: serde_json::Value =
                serde_json::from_slice(&answer.payload).map_err(Error::json("the python reply"))?;
            let said: Option<Seen> = serde_json::from_value(body["python_consumer"].clone()).ok();
            reply = said.map(|s| (s, w3c_headers(&answer)));
        }
        Mode::JetStream => {
            let ack = rust
                .jetstream
                .publish(subject, payload)
                .with_context(cx.clone())
                .await
                .map_err(Error::nats("publishing to JetStream"))?
                .await
                .map_err(Error::nats("the JetStream ack"))?;
            published.sequence = Some(ack.sequence);
        }
    }
    let caller = case
        .caller_span
        .then(|| cx.span().span_context().span_id().to_string());
    cx.span().end();
    let request = match case.mode {
        Mode::Core => json!({"op": "next", "queue": "core"}),
        Mode::Request => json!({"op": "next", "queue": "svc"}),
        Mode::JetStream => json!({"op": "fetch"}),
    };
    let answer = tokio::task::block_in_place(|| peer.request(&request))?;
    let handled: Handled =
        serde_json::from_value(answer).map_err(Error::json("nats_peer handler answer"))?;
    Ok(Observed {
        published,
        caller,
        handled,
        reply,
    })
}
