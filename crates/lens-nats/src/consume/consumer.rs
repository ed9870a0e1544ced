//! The [`Consumer`]: the knobs of the consumer side and the wrappers of what async-nats gives.

use std::sync::Arc;

use async_nats::{Client, Subscriber};
use lens_span::SpanOptions;
use lens_span::messaging::{ConsumerParent, DestinationPolicy, OperationStatus};
use lens_span::metrics::Instruments;

use super::shared::Shared;
use super::stream::{ConsumerShared, TracedMessages, TracedStream, TracedSubscriber};
use super::subscription::Subscription;
use crate::adapter::{MessageInfo, Nats};
use crate::broker::Broker;
use crate::inbox::inbox_prefix;
use crate::names::Names;
use crate::server::Server;

/// The knobs of the consumer side; [`Consumer::subscriber`], [`Consumer::messages`] and
/// [`Consumer::receive`] wrap what async-nats gives.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use futures_util::StreamExt;
/// use lens_core::InboundPolicy;
/// use lens_span::messaging::DestinationPolicy;
///
/// let client = async_nats::connect("127.0.0.1:4222").await?;
/// let consumer = lens_nats::Consumer::new().with_inbound_policy(
///     DestinationPolicy::new(InboundPolicy::trust_all())
///         .for_destination("partner.>", InboundPolicy::link_all()),
/// );
/// let mut jobs = consumer.subscriber(&client, client.subscribe("jobs.>").await?);
/// while let Some(message) = jobs.next().await {
///     // The `process` span is current inside `in_span` and ends when `message` is dropped.
///     message.in_span(async { println!("{:?}", message.payload) }).await;
/// }
/// # Ok(()) }
/// ```
pub struct Consumer {
    options: SpanOptions<Nats, DestinationPolicy>,
    parent: ConsumerParent,
    server: Option<Server>,
    names: Names,
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("options", &self.options)
            .field("parent", &self.parent)
            .field("server", &self.server)
            .field("names", &self.names)
            .finish()
    }
}

lens_span::span_knobs!(Consumer, request: MessageInfo<'_>, response: OperationStatus,
    status: OperationStatus, policy: with_inbound_policy(DestinationPolicy));

impl Consumer {
    /// Spans from the global tracer provider (scope `lens-nats`), lens's propagator, every
    /// message's context trusted, `process` spans parented as the conventions recommend
    /// ([`ConsumerParent::Ambient`]: the span current when processing begins, linked to the
    /// message; else the message's context).
    pub fn new() -> Self {
        let mut options = SpanOptions::global(
            "lens-nats",
            env!("CARGO_PKG_VERSION"),
            DestinationPolicy::default(),
        );
        options.set_instruments(Instruments::Messaging);
        Consumer {
            options,
            parent: ConsumerParent::default(),
            server: None,
            names: Names::default(),
        }
    }

    fn options_mut(&mut self) -> &mut SpanOptions<Nats, DestinationPolicy> {
        &mut self.options
    }

    /// Which span a `process` span is the child of: the span current when processing begins,
    /// linked to the message, else the message's context ([`ConsumerParent::Ambient`], the
    /// default, as the conventions recommend); always the message's context
    /// ([`ConsumerParent::Message`]); or none, a new trace that links to it
    /// ([`ConsumerParent::Links`]). docs/messaging.md says when to choose which.
    pub fn with_consumer_parent(mut self, parent: ConsumerParent) -> Self {
        self.parent = parent;
        self
    }

    /// Records `server.address` / `server.port` as these (default: the server the client
    /// connected to, as the URL or options given to `connect` name it, read once before a
    /// wrapper's first span).
    pub fn with_server(mut self, address: impl Into<String>, port: Option<u16>) -> Self {
        self.server = Some(Server::configured(address.into(), port));
        self
    }

    /// Names the spans and metrics of messages to subjects matching `pattern` by it
    /// (`messaging.destination.template`), before the subscription's own subject pattern: a
    /// subscription to one subject per run (`rollout.jobs.7f3a`) under
    /// `with_destination_template("rollout.jobs.*")` makes no new span name or metric series
    /// per run. The first declared pattern a subject matches wins.
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

    pub(super) fn shared(&self, client: &Client, subscription: Subscription) -> Arc<Shared> {
        Arc::new(Shared {
            options: self.options.clone(),
            parent: self.parent,
            broker: Broker::new(client, self.server.clone()),
            inbox_prefix: inbox_prefix(client),
            names: self.names.clone(),
            subscription,
        })
    }

    /// Wraps any stream of `client`'s messages: a core subscriber, a JetStream push, ordered
    /// or pull consumer's messages (`Result`s or not); each comes in a [`Processing`].
    /// `subscription` says what the stream reads: its subject pattern (the destination
    /// template of the spans and metrics), queue group, durable or named consumer.
    ///
    /// ```no_run
    /// # async fn run(client: async_nats::Client) -> Result<(), async_nats::Error> {
    /// use futures_util::StreamExt;
    /// use lens_nats::Subscription;
    ///
    /// let jetstream = async_nats::jetstream::new(client.clone());
    /// let stream = jetstream.get_stream("ORDERS").await?;
    /// let mut pull: async_nats::jetstream::consumer::PullConsumer =
    ///     stream.get_consumer("billing").await?;
    /// let subscription = Subscription::of_jetstream(pull.info().await?);
    /// let consumer = lens_nats::Consumer::new();
    /// let mut orders = consumer.stream(&client, subscription, pull.messages().await?);
    /// while let Some(order) = orders.next().await {
    ///     order?.process(async |order| order.ack().await).await?;
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// [`Processing`]: crate::Processing
    pub fn stream<S>(
        &self,
        client: &Client,
        subscription: Subscription,
        stream: S,
    ) -> TracedStream<S> {
        TracedStream {
            inner: stream,
            shared: ConsumerShared(self.shared(client, subscription)),
            resolving: None,
        }
    }

    /// Subscribes `client` to `subject` (a pattern: `rollout.jobs.*`), traced: the pattern is
    /// the destination template of its spans and metrics.
    pub async fn subscribe(
        &self,
        client: &Client,
        subject: impl Into<String>,
    ) -> Result<TracedSubscriber, async_nats::SubscribeError> {
        let subject = subject.into();
        let subscriber = client.subscribe(subject.clone()).await?;
        Ok(self.stream(client, Subscription::subject(subject), subscriber))
    }

    /// Subscribes `client` to `subject` in the queue group `group`, traced: the pattern is the
    /// destination template, the group `messaging.consumer.group.name`.
    pub async fn queue_subscribe(
        &self,
        client: &Client,
        subject: impl Into<String>,
        group: impl Into<String>,
    ) -> Result<TracedSubscriber, async_nats::SubscribeError> {
        let subject = subject.into();
        let group = group.into();
        let subscriber = client
            .queue_subscribe(subject.clone(), group.clone())
            .await?;
        Ok(self.stream(
            client,
            Subscription::subject(subject).with_queue_group(group),
            subscriber,
        ))
    }

    /// Wraps a core subscriber (from `subscribe` or `queue_subscribe`) of `client`: it yields
    /// each message in a [`Processing`]. Its subject pattern and queue group are not known
    /// here: [`Consumer::subscribe`], [`Consumer::queue_subscribe`] or [`Consumer::stream`]
    /// know them.
    ///
    /// [`Processing`]: crate::Processing
    pub fn subscriber(&self, client: &Client, subscriber: Subscriber) -> TracedSubscriber {
        self.stream(client, Subscription::default(), subscriber)
    }

    /// Wraps a JetStream pull consumer's message stream (`consumer.messages().await?`), one
    /// message at a time, each in a [`Processing`] whose `ack` / `nak` / `term` are traced.
    ///
    /// [`Processing`]: crate::Processing
    pub fn messages(
        &self,
        client: &Client,
        messages: async_nats::jetstream::consumer::pull::Stream,
    ) -> TracedMessages {
        self.stream(client, Subscription::default(), messages)
    }
}
