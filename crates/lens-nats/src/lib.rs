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

mod carrier;
mod consume;
mod error;
mod interned;
mod publish;

use async_nats::Client;
use async_nats::header::HeaderMap;
use opentelemetry::StringValue;

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

/// `messaging.system` of every span lens-nats makes.
pub const SYSTEM: &str = "nats";

/// The JetStream stream of a message (publish: from the ack; process: from the message).
pub const STREAM: &str = "messaging.nats.stream";

/// The message's sequence in its JetStream stream (publish: from the ack; process: from the
/// message), the same number on both sides.
pub const SEQUENCE: &str = "messaging.nats.stream_sequence";

/// Whether the stream found a JetStream publish a duplicate (its `Nats-Msg-Id` seen within the
/// stream's duplicate window: not stored again), from the publish's ack.
pub const DUPLICATE: &str = "messaging.nats.duplicate";

/// What the hooks of lens-nats see of one operation (`with_filter`, `with_span_name`,
/// `with_request_attributes`).
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct MessageInfo<'a> {
    /// The subject (for a `receive`: the destination named in [`Consumer::receive`]).
    pub subject: &'a str,
    /// The message's headers as the caller set them (publish) or as they arrived (process).
    pub headers: Option<&'a HeaderMap>,
    /// The payload (empty for a `receive`).
    pub payload: &'a [u8],
    /// Which operation.
    pub operation: OperationType,
}

/// lens-nats as a lens-span adapter: what its hooks and its classifier see.
#[derive(Debug)]
pub(crate) struct Nats;

impl lens_span::Adapter for Nats {
    type Request<'a> = MessageInfo<'a>;
    type Response<'a> = OperationStatus;
    type Status = OperationStatus;
}

/// The broker's address for `server.address` / `server.port`.
#[derive(Clone, Debug)]
struct Server {
    address: StringValue,
    port: Option<u16>,
}

impl Server {
    /// A server the user configured (`with_server`, a `connect` URL): its address static text
    /// (`interned::configured_address` says why).
    fn configured(address: String, port: Option<u16>) -> Self {
        Server {
            address: interned::configured_address(address),
            port,
        }
    }

    /// A server the cluster advertised: what a peer sent, shared text.
    fn advertised(address: String, port: Option<u16>) -> Self {
        Server {
            address: interned::advertised_address(address),
            port,
        }
    }

    /// The server `client` connected to, as the user named it (the URL or the options given
    /// to `connect`): never the address the server says it listens on (its `INFO` host, which
    /// is `0.0.0.0` for a server listening on every interface). Of a pool of several servers,
    /// the one whose last connection attempt succeeded (a configured one before one the
    /// cluster advertised); `None` when the client cannot say (it is closed).
    async fn connected(client: &Client) -> Option<Server> {
        let pool = client.server_pool().await.ok()?;
        let connected = |s: &&async_nats::Server| s.did_connect && s.failed_attempts == 0;
        let only = match pool.as_slice() {
            [only] => Some(only),
            _ => None,
        };
        let server = pool
            .iter()
            .filter(connected)
            .find(|s| !s.is_discovered)
            .or_else(|| pool.iter().find(connected))
            .or(only)?;
        let host = server.addr.host();
        if host.is_empty() {
            return None;
        }
        let port = Some(server.addr.port());
        Some(if server.is_discovered {
            Server::advertised(host.to_owned(), port)
        } else {
            Server::configured(host.to_owned(), port)
        })
    }
}

/// Where one wrapper's `server.address` / `server.port` come from: what the user set, else
/// the server its client connected to, read once (one round trip to the client's connection
/// task) before the wrapper's first span.
#[derive(Debug)]
struct Broker {
    client: Client,
    server: std::sync::OnceLock<Option<Server>>,
}

impl Broker {
    fn new(client: &Client, server: Option<Server>) -> Self {
        let broker = Broker {
            client: client.clone(),
            server: std::sync::OnceLock::new(),
        };
        if let Some(server) = server {
            let _ = broker.server.set(Some(server));
        }
        broker
    }

    /// The server, once known (`None` before [`Broker::resolve`], or when the client could
    /// not say).
    fn get(&self) -> Option<&Server> {
        self.server.get().and_then(Option::as_ref)
    }

    fn is_resolved(&self) -> bool {
        self.server.get().is_some()
    }

    /// Reads the server from the client the first time (a race reads it twice, harmlessly).
    /// Once it is known, nothing is awaited: the read of the client's server pool is a future
    /// of its own, boxed, made only before the first span, so that it takes no room in every
    /// traced call's future (which each layer of the caller's code moves).
    #[inline]
    async fn resolve(&self) -> Option<&Server> {
        if !self.is_resolved() {
            self.read_server().await;
        }
        self.get()
    }

    /// The first read of the server (once per wrapper: one allocation, not one per call).
    #[cold]
    fn read_server(
        &self,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + Sync + '_>> {
        Box::pin(async move {
            let server = Server::connected(&self.client).await;
            let _ = self.server.set(server);
        })
    }
}

/// How a wrapper names destinations on its spans and metrics.
#[derive(Clone, Debug, Default)]
struct Names {
    /// Declared destination templates.
    templates: lens_span::messaging::DestinationTemplates,
    /// Whether the metrics carry the subject (the user said subjects are few).
    subjects_in_metrics: bool,
    /// Whether spans record `messaging.message.body.size` (opt-in).
    body_size: bool,
}

/// The prefix of `client`'s reply inboxes (`_INBOX.` unless configured), read once: replies
/// go to subjects under it, temporary destinations.
fn inbox_prefix(client: &Client) -> String {
    let inbox = client.new_inbox();
    match inbox.rsplit_once('.') {
        Some((prefix, _)) => format!("{prefix}."),
        None => inbox,
    }
}

fn is_temporary(inbox_prefix: &str, subject: &str) -> bool {
    !inbox_prefix.is_empty() && subject.starts_with(inbox_prefix)
}
