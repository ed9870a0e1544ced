//! The [`Producer`]: the knobs of the producer side and the wrappers it makes.

use std::sync::Arc;

use async_nats::Client;
use lens_core::OutboundPolicy;
use lens_span::SpanOptions;
use lens_span::messaging::{OperationStatus, OutboundDestinationPolicy};
use lens_span::metrics::Instruments;

use super::client::TracedClient;
use super::jetstream::TracedJetStream;
use super::shared::Shared;
use crate::adapter::{MessageInfo, Nats};
use crate::broker::Broker;
use crate::inbox::inbox_prefix;
use crate::names::Names;
use crate::server::Server;

/// The knobs of the producer side; [`Producer::client`] and [`Producer::jetstream`] wrap an
/// async-nats client or JetStream context the user already built.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let client = async_nats::connect("127.0.0.1:4222").await?;
/// let traced = lens_nats::Producer::new()
///     .with_span_name(|m: &lens_nats::MessageInfo<'_>| format!("send {}", m.subject).into())
///     .client(client);
/// traced.publish("jobs.rollout", "payload".into()).await?;
/// # Ok(()) }
/// ```
///
/// The outbound policy decides per server (`server.address`) and per subject: one NATS server
/// often carries internal subjects and subjects partners read.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use lens_core::OutboundPolicy;
/// use lens_nats::OutboundDestinationPolicy;
///
/// let client = async_nats::connect("nats.internal:4222").await?;
/// let traced = lens_nats::Producer::new()
///     .with_outbound_policy(
///         // Trace context and baggage to the company's own brokers...
///         OutboundDestinationPolicy::new(
///             OutboundPolicy::default().trace_context_only_to(["*.internal", "nats.internal"]),
///         )
///         // ...but never on the subjects partners subscribe to.
///         .for_destination(
///             "partner.>",
///             OutboundPolicy::default()
///                 .trace_context_only_to(Vec::<String>::new())
///                 .no_baggage(),
///         ),
///     )
///     .client(client);
/// traced.publish("jobs.rollout", "with context".into()).await?;
/// traced.publish("partner.orders", "without".into()).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Producer {
    options: SpanOptions<Nats, OutboundDestinationPolicy>,
    server: Option<Server>,
    names: Names,
}

impl std::fmt::Debug for Producer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Producer")
            .field("options", &self.options)
            .field("server", &self.server)
            .field("names", &self.names)
            .finish()
    }
}

lens_span::span_knobs!(Producer, request: MessageInfo<'_>, response: OperationStatus,
    status: OperationStatus, policy: with_outbound_policy(impl Into<OutboundDestinationPolicy>));

impl Producer {
    /// Spans from the global tracer provider (scope `lens-nats`), lens's propagator, context
    /// and baggage sent to every server, no hooks.
    pub fn new() -> Self {
        let mut options = SpanOptions::global(
            "lens-nats",
            env!("CARGO_PKG_VERSION"),
            OutboundDestinationPolicy::new(OutboundPolicy::default()),
        );
        options.set_instruments(Instruments::Messaging);
        Producer {
            options,
            server: None,
            names: Names::default(),
        }
    }

    fn options_mut(&mut self) -> &mut SpanOptions<Nats, OutboundDestinationPolicy> {
        &mut self.options
    }

    /// Records `server.address` / `server.port` as these (default: the server the client
    /// connected to, as the URL or options given to `connect` name it, read once before the
    /// first publish). The outbound policy decides by this address.
    pub fn with_server(mut self, address: impl Into<String>, port: Option<u16>) -> Self {
        self.server = Some(Server::configured(address.into(), port));
        self
    }

    /// Declares a destination template: a message to a subject matching `pattern`
    /// (`rollout.jobs.*`) is named by it in its span name and metrics
    /// (`messaging.destination.template`; the subject stays in `messaging.destination.name` on
    /// the span), so that a subject per job or per run makes no new span name or metric
    /// series. The first declared pattern a subject matches wins.
    pub fn with_destination_template(mut self, pattern: impl Into<String>) -> Self {
        self.names.templates = self.names.templates.with(pattern);
        self
    }

    /// Says the subjects are few (low cardinality): the metrics then carry each message's
    /// subject (`messaging.destination.name`). Off by default: the metrics carry the
    /// destination template, and spans always carry the subject.
    pub fn with_low_cardinality_subjects(mut self, on: bool) -> Self {
        self.names.subjects_in_metrics = on;
        self
    }

    /// Records `messaging.message.body.size` on each span (opt-in, as the conventions have it).
    pub fn with_message_body_size(mut self, on: bool) -> Self {
        self.names.body_size = on;
        self
    }

    /// Wraps `client`: its publishes and requests are traced.
    pub fn client(self, client: Client) -> TracedClient {
        let shared = self.shared(&client);
        TracedClient { client, shared }
    }

    /// Wraps `jetstream`: its publishes are traced, up to the broker's ack.
    pub fn jetstream(self, jetstream: async_nats::jetstream::Context) -> TracedJetStream {
        let shared = self.shared(&jetstream.client());
        TracedJetStream { jetstream, shared }
    }

    fn shared(self, client: &Client) -> Arc<Shared> {
        Arc::new(Shared {
            broker: Broker::new(client, self.server),
            names: self.names,
            inbox_prefix: inbox_prefix(client),
            options: self.options,
        })
    }
}
