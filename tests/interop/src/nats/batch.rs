//! A pulled batch, and a consumer that asks for links only (Python to Rust).

use futures_util::StreamExt;
use opentelemetry::Context;
use serde_json::json;

use super::exchange::RECEIVE_TIMEOUT;
use super::observed::{Handled, Published};
use super::rust_side::Rust;
use crate::describe::{Spec, seen};
use crate::error::{Error, Result};
use crate::grpc::{BAGGAGE, TRACESTATE};
use crate::python::PythonProcess;

// ---------------------------------------------------------------------------------------------
// A pulled batch, and a consumer that asks for links only (Python to Rust)

/// Messages in the pulled batch.
pub(super) const BATCH: usize = 3;

pub(super) fn batch_parent() -> Spec {
    Spec::span("5af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", 0x01)
        .tracestate(TRACESTATE)
        .baggage(BAGGAGE)
}

pub(super) fn linked_parent() -> Spec {
    Spec::span("5bf7651916cd43dd8448eb211c80319c", "b7ad6b7169203331", 0x01).baggage(BAGGAGE)
}

pub(super) fn batch_label(what: &str) -> String {
    format!("python->rust [JetStream batch of {BATCH} via Consumer::receive] {what}")
}

pub(super) fn linked_label(what: &str) -> String {
    format!("python->rust [core publish into a ConsumerParent::Links consumer] {what}")
}

/// What the batch showed: the Python publishes, the `receive` span, each message's handler.
pub(super) struct BatchObserved {
    pub(super) published: Vec<Published>,
    pub(super) receive: Option<String>,
    pub(super) handled: Vec<Handled>,
}

/// The Python peer publishes [`BATCH`] JetStream messages (each in its own PRODUCER span, one
/// trace); lens-nats pulls them as one batch (`fetch`) and processes each.
pub(super) async fn python_batch_to_rust(
    peer: &mut PythonProcess,
    rust: &Rust,
) -> Result<BatchObserved> {
    let parent = batch_parent();
    let mut published = Vec::new();
    for n in 0..BATCH {
        let answer = tokio::task::block_in_place(|| {
            peer.request(&json!({
                "op": "publish",
                "mode": "jetstream",
                "subject": format!("rs.batch.{n}"),
                "parent": parent,
                "payload": "batch",
            }))
        })?;
        published.push(
            serde_json::from_value::<Published>(answer)
                .map_err(Error::json("nats_peer publish answer"))?,
        );
    }
    // Every message is stored (acked to Python) before the fetch: the batch holds all three.
    let pull = rust.batch.fetch().max_messages(BATCH).messages();
    let batch = rust
        .consumer
        .receive(&rust.client, "RSBATCH", pull)
        .await
        .map_err(Error::nats("receiving the batch"))?;
    let receive = batch
        .receive_span_context()
        .map(|sc| sc.span_id().to_string());
    let mut handled = Vec::new();
    for message in batch {
        let consumer = message.in_span(async { seen(&Context::current()) }).await;
        let sequence = message.info().ok().map(|i| i.stream_sequence);
        handled.push(Handled::rust(&message.message, consumer, sequence));
    }
    Ok(BatchObserved {
        published,
        receive,
        handled,
    })
}

/// The Python peer publishes one core message into a consumer that asks for links only.
pub(super) async fn python_to_rust_linked(
    peer: &mut PythonProcess,
    rust: &mut Rust,
) -> Result<(Published, Handled)> {
    let answer = tokio::task::block_in_place(|| {
        peer.request(&json!({
            "op": "publish",
            "mode": "core",
            "subject": "rs.linked.5b",
            "parent": linked_parent(),
            "payload": "linked",
        }))
    })?;
    let published: Published =
        serde_json::from_value(answer).map_err(Error::json("nats_peer publish answer"))?;
    let message = tokio::time::timeout(RECEIVE_TIMEOUT, rust.linked.next())
        .await
        .map_err(|_| Error::Timeout {
            what: "the rust consumer: the linked message".into(),
            after: RECEIVE_TIMEOUT,
        })?
        .ok_or_else(|| Error::Nats {
            what: "the rust consumer".into(),
            message: "the linked subscription ended".into(),
        })?;
    let consumer = message.in_span(async { seen(&Context::current()) }).await;
    Ok((published, Handled::rust(&message, consumer, None)))
}
