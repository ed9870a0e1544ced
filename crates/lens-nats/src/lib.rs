//! lens-nats: W3C trace context across NATS ([async-nats](https://docs.rs/async-nats) 0.52),
//! with PRODUCER and CONSUMER spans per the OpenTelemetry messaging conventions (1.44, status
//! Development), wire-compatible with NVIDIA NeMo Lens (`inject_context(headers)` /
//! `extract_context(msg.headers)` on the Python side).
//!
//! ```no_run
//! // Needs a nats-server on 127.0.0.1:4222 (`nats-server -js`).
//! use futures_util::StreamExt;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Your own client, connected as usual: lens-nats wraps it, no global state.
//! let client = async_nats::connect("127.0.0.1:4222").await?;
//! let consumer = lens_nats::Consumer::new();
//! let mut jobs = consumer.subscriber(&client, client.subscribe("jobs.rollout").await?);
//!
//! let producer = lens_nats::Producer::new().client(client.clone());
//! // A PRODUCER span `send jobs.rollout`; traceparent / tracestate / baggage in the headers.
//! producer.publish("jobs.rollout", "step 1".into()).await?;
//!
//! if let Some(job) = jobs.next().await {
//!     // `job` derefs to the async_nats::Message as it was sent. Its CONSUMER span
//!     // `process jobs.rollout` is the child of the producer's span, current inside
//!     // `in_span`, and ends when `job` is dropped.
//!     job.in_span(async {
//!         assert_eq!(job.payload, "step 1");
//!     })
//!     .await;
//! }
//! # Ok(()) }
//! ```
//!
//! - Publish ([`Producer`] → [`TracedClient`], [`TracedJetStream`]): one PRODUCER `send` span
//!   per message, its context and the caller's baggage injected into the message's headers
//!   (`traceparent`, `tracestate`, `baggage`) beside the caller's own; core publish,
//!   request/reply (a `send` span, then a CLIENT `receive` span for the reply wait; the
//!   responder's `process` span is the child of the request's span, its reply in the same
//!   trace), JetStream publish handed over, its ack a future ([`TracedPublishAck`]: stream,
//!   sequence, duplicate recorded, a failure classified). The server is the one the client
//!   connected to, as the user named it; the outbound policy decides per server and subject
//!   ([`OutboundDestinationPolicy`]).
//! - Consume ([`Consumer`] → [`TracedStream`] over any stream of messages,
//!   [`Consumer::subscribe`], [`Consumer::queue_subscribe`], [`Consumer::receive`]):
//!   async-nats's own messages, each in a [`Processing`] that holds its CONSUMER `process`
//!   span ([`Processing::process`] runs a handler in it, its `Err` or panic recorded); a pulled
//!   batch as one CLIENT `receive` span linked to every message; JetStream `ack` / `nak` /
//!   `term` as `settle` spans.
//! - Bounded names: span names and metrics by destination template (a subscription's subject
//!   pattern, a producer's declared one), the queue group and the durable consumer recorded.
//! - Parent or link ([`ConsumerParent`]), the inbound trust policy per subject
//!   ([`DestinationPolicy`]), and the knobs of every lens adapter (`with_filter`,
//!   `with_span_name`, `with_request_attributes`, `with_response_attributes`,
//!   `with_classifier`, `with_on_failure`, `with_meter`, `with_baggage_keys`): lens-span's
//!   messaging lifecycle, written once.
//! - Bad input never costs a message: a malformed, repeated or oversized `traceparent`, an
//!   over-limit `tracestate`, odd values or no headers at all: the message is delivered as
//!   sent, its `process` span starts a new trace and records why (`lens.trace.new_root`),
//!   nothing panics, nothing is logged.
//!
//! docs/messaging.md has the whole picture.
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod adapter;
mod attributes;
mod broker;
mod carrier;
mod consume;
mod error;
mod inbox;
mod interned;
mod names;
mod publish;
mod server;

pub use adapter::MessageInfo;
pub use attributes::{DUPLICATE, SEQUENCE, STREAM, SYSTEM};
pub use carrier::NatsHeaders;
pub use consume::{
    Consumer, ConsumerShared, Delivery, NatsMessage, Processing, ReceivedBatch, Subscription,
    TracedMessages, TracedStream, TracedSubscriber,
};
pub use error::ReceiveError;
pub use lens_span::FilterDecision;
pub use lens_span::classify::{Classify, Failure, Outcome};
pub use lens_span::messaging::{
    ConsumerParent, DestinationPolicy, DestinationTemplates, OperationStatus, OperationType,
    OutboundDestinationPolicy,
};
pub use publish::{Producer, TracedClient, TracedJetStream, TracedPublishAck};
