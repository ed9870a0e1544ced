//! The consumer side: a CONSUMER `process` span per message, current while the user handles
//! it; a CLIENT `receive` span per pulled batch; CLIENT `settle` spans for JetStream acks.

use std::collections::VecDeque;
use std::future::{Future, IntoFuture};
use std::ops::Deref;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context as TaskContext, Poll};

use async_nats::header::{HeaderMap, NATS_MESSAGE_ID};
use async_nats::jetstream::AckKind;
use async_nats::jetstream::consumer::pull::{Batch, BatchErrorKind};
use async_nats::{Client, Subscriber};
use futures_core::Stream;
use lens_span::classify::Outcome;
use lens_span::messaging::{
    ConsumerParent, DestinationPolicy, MessagingErrors, Operation, OperationStatus, OperationType,
};
use lens_span::metrics::Instruments;
use lens_span::{LiveSpan, SpanOptions};
use opentelemetry::context::FutureExt as _;
use opentelemetry::trace::{Link, TraceContextExt as _};
use opentelemetry::{Context, KeyValue, StringValue};

use crate::{Broker, MessageInfo, Nats, NatsHeaders, ReceiveError, SYSTEM, Server};

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
    names: crate::Names,
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
            names: crate::Names::default(),
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
        self.server = Some(Server::new(address.into(), port));
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

    fn shared(&self, client: &Client, subscription: Subscription) -> Arc<Shared> {
        Arc::new(Shared {
            options: self.options.clone(),
            parent: self.parent,
            broker: Broker::new(client, self.server.clone()),
            inbox_prefix: crate::inbox_prefix(client),
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
    pub fn subscriber(&self, client: &Client, subscriber: Subscriber) -> TracedSubscriber {
        self.stream(client, Subscription::default(), subscriber)
    }

    /// Wraps a JetStream pull consumer's message stream (`consumer.messages().await?`), one
    /// message at a time, each in a [`Processing`] whose `ack` / `nak` / `term` are traced.
    pub fn messages(
        &self,
        client: &Client,
        messages: async_nats::jetstream::consumer::pull::Stream,
    ) -> TracedMessages {
        self.stream(client, Subscription::default(), messages)
    }

    /// Pulls a batch as one `receive` operation: `pull` is the not yet awaited
    /// `consumer.fetch()...messages()` or `consumer.batch()...messages()` of a pull consumer
    /// on `client`, `destination` names what it reads (the stream or the filter subject). The
    /// CLIENT span starts now, links to every message's context (as the policy for the
    /// message's subject allows) and ends when the batch is complete; each message is then
    /// processed from the [`ReceivedBatch`], its `process` span linked to the `receive` span.
    ///
    /// A batch that fails after some messages arrived keeps them: the error is recorded on the
    /// span and returned by [`ReceivedBatch::error`].
    pub async fn receive<F>(
        &self,
        client: &Client,
        destination: &str,
        pull: F,
    ) -> Result<ReceivedBatch, ReceiveError>
    where
        F: IntoFuture<Output = Result<Batch, async_nats::jetstream::consumer::pull::BatchError>>,
    {
        let shared = self.shared(client, Subscription::default());
        shared.broker.resolve().await;
        let info = MessageInfo {
            subject: destination,
            headers: None,
            payload: &[],
            operation: OperationType::Receive,
        };
        let mut span = shared.options.filter_decision(&info).span.then(|| {
            let operation = shared.operation("receive", OperationType::Receive, destination);
            shared
                .options
                .start_operation(&info, &operation, &Context::current(), Vec::new())
        });
        let mut messages = VecDeque::new();
        let mut error = None;
        match pull.into_future().await {
            Err(e) => {
                // `PinnedClient` exists only with async-nats's `server_2_11` feature, which
                // another crate in the build may turn on.
                #[allow(unreachable_patterns)]
                let kind = match e.kind() {
                    BatchErrorKind::Subscribe => "subscribe",
                    BatchErrorKind::Pull => "pull",
                    BatchErrorKind::Flush => "flush",
                    BatchErrorKind::Serialize => "serialize",
                    _ => "_OTHER",
                };
                if let Some(span) = &mut span {
                    // No message was consumed.
                    span.set_messages(0);
                }
                shared.finish(span, crate::publish::failed_status(kind, &e));
                return Err(ReceiveError::Pull(e));
            }
            Ok(mut batch) => {
                while let Some(next) =
                    std::future::poll_fn(|cx| Pin::new(&mut batch).poll_next(cx)).await
                {
                    match next {
                        Ok(message) => messages.push_back(message),
                        Err(e) => {
                            error = Some(e);
                            break;
                        }
                    }
                }
            }
        }
        if let Some(span) = &mut span {
            for message in &messages {
                let core = &message.message;
                let empty = HeaderMap::new();
                let headers = core.headers.as_ref().unwrap_or(&empty);
                if let Some(link) = shared
                    .options
                    .message_link(core.subject.as_str(), &NatsHeaders(headers))
                {
                    span.span().add_link(link.span_context, Vec::new());
                }
            }
            span.set_attribute(KeyValue::new(
                opentelemetry_semantic_conventions::attribute::MESSAGING_BATCH_MESSAGE_COUNT,
                i64::try_from(messages.len()).unwrap_or(i64::MAX),
            ));
            span.set_messages(messages.len() as u64);
        }
        let receive_cx = span.as_ref().map(|s| s.context().clone());
        let status = match &error {
            Some(e) => crate::publish::failed_status("_OTHER", e),
            None => OperationStatus::Ok,
        };
        shared.finish(span, status);
        if messages.is_empty()
            && let Some(e) = error
        {
            return Err(ReceiveError::Message(e));
        }
        Ok(ReceivedBatch {
            messages,
            receive_cx,
            shared,
            error,
        })
    }
}

/// What every wrapper of one consumer reads (never written after it is built: no lock).
#[derive(Debug)]
struct Shared {
    options: SpanOptions<Nats, DestinationPolicy>,
    parent: ConsumerParent,
    broker: Broker,
    inbox_prefix: String,
    names: crate::Names,
    subscription: Subscription,
}

impl Shared {
    #[inline]
    fn operation<'a>(
        &'a self,
        name: &'static str,
        kind: OperationType,
        destination: &'a str,
    ) -> Operation<'a> {
        // Set field by field (each `with_*` would move the whole operation).
        let mut operation = Operation::new(SYSTEM, name, kind);
        operation.destination = Some(destination);
        operation.temporary = crate::is_temporary(&self.inbox_prefix, destination);
        operation.destination_in_metrics = self.names.subjects_in_metrics;
        operation.template = self
            .names
            .templates
            .template_for(destination)
            .or(self.subscription.subject.as_deref());
        operation.consumer_group = self.subscription.queue_group.as_deref();
        operation.subscription = self.subscription.name.as_deref();
        if let Some(server) = self.broker.get() {
            operation.server_address = Some(server.address.clone());
            operation.server_port = server.port;
        }
        operation
    }

    fn finish(&self, span: Option<LiveSpan>, status: OperationStatus) {
        if let Some(mut span) = span {
            self.options
                .responder()
                .respond(&mut span, &status, &status, &MessagingErrors);
        }
    }

    /// The `process` span of `message`, processing beginning under `current` (the Context
    /// current now); `batch` is the Context of the `receive` span that took it, if any (linked,
    /// and the message counted by it already).
    fn process<M: NatsMessage>(
        self: &Arc<Self>,
        message: M,
        current: &Context,
        batch: Option<&Context>,
    ) -> Processing<M> {
        Processing {
            span: self.process_span(&message, current, batch),
            message,
            shared: Arc::clone(self),
        }
    }

    /// The `process` span of `message` when the filter wants one, returned as it is built (a
    /// `LiveSpan` is large: each move of it is a copy).
    #[inline]
    fn process_span<M: NatsMessage>(
        &self,
        message: &M,
        current: &Context,
        batch: Option<&Context>,
    ) -> Option<ProcessSpan> {
        let core = message.core();
        let subject = core.subject.as_str();
        let info = MessageInfo {
            subject,
            headers: core.headers.as_ref(),
            payload: &core.payload,
            operation: OperationType::Process,
        };
        if !self.options.filter_decision(&info).span {
            return None;
        }
        let empty = HeaderMap::new();
        let headers = core.headers.as_ref().unwrap_or(&empty);
        let mut operation = self.operation("process", OperationType::Process, subject);
        operation.body_size = self.names.body_size.then_some(core.payload.len());
        operation.message_id = crate::carrier::value_of(headers, &NATS_MESSAGE_ID);
        let links = batch
            .map(|cx| vec![Link::with_context(cx.span().span_context().clone())])
            .unwrap_or_default();
        let mut span = ProcessSpan {
            live: self.options.start_process_with_links(
                &info,
                &operation,
                &NatsHeaders(headers),
                self.parent,
                current,
                links,
            ),
            failure: OnceLock::new(),
            counted: batch.is_some(),
        };
        message.annotate(&mut span.live);
        Some(span)
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for async_nats::Message {}
    impl Sealed for async_nats::jetstream::Message {}
    impl<M: Sealed, E> Sealed for Result<M, E> {}
}

/// A message lens-nats traces: a core [`async_nats::Message`] or a JetStream
/// [`async_nats::jetstream::Message`] (sealed).
pub trait NatsMessage: sealed::Sealed {
    /// The core message (subject, headers, payload).
    fn core(&self) -> &async_nats::Message;
    /// Adds what this kind of message knows to its `process` span.
    #[doc(hidden)]
    fn annotate(&self, span: &mut LiveSpan);
}

impl NatsMessage for async_nats::Message {
    fn core(&self) -> &async_nats::Message {
        self
    }

    fn annotate(&self, _span: &mut LiveSpan) {}
}

impl NatsMessage for async_nats::jetstream::Message {
    fn core(&self) -> &async_nats::Message {
        &self.message
    }

    /// The stream and its sequence, as the publisher's ack recorded them.
    fn annotate(&self, span: &mut LiveSpan) {
        if let Ok(info) = self.info() {
            span.set_attribute(KeyValue::new(
                crate::STREAM,
                StringValue::from(info.stream.to_owned()),
            ));
            span.set_attribute(KeyValue::new(
                crate::SEQUENCE,
                i64::try_from(info.stream_sequence).unwrap_or(i64::MAX),
            ));
        }
    }
}

/// A message as it was delivered (`Deref` to async-nats's own type, unchanged), with its
/// CONSUMER `process` span: current inside [`Processing::in_span`], ended exactly once, when
/// this is dropped or [`Processing::into_inner`] is called.
pub struct Processing<M> {
    message: M,
    span: Option<ProcessSpan>,
    shared: Arc<Shared>,
}

/// A `process` span and the failure recorded on it while it is shared (by the handler of
/// [`Processing::process`], inside [`Processing::in_span`]): applied when the span ends.
#[derive(Debug)]
struct ProcessSpan {
    live: LiveSpan,
    failure: OnceLock<Outcome>,
    /// The `receive` span of a batch counted the message: this span counts none.
    counted: bool,
}

impl Drop for ProcessSpan {
    fn drop(&mut self) {
        if self.counted {
            self.live.set_messages(0);
        }
        if let Some(failure) = self.failure.take() {
            self.live.record(failure);
        }
    }
}

impl<M: std::fmt::Debug> std::fmt::Debug for Processing<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Processing")
            .field("message", &self.message)
            .field("span", &self.span)
            .finish_non_exhaustive()
    }
}

impl<M> Deref for Processing<M> {
    type Target = M;

    fn deref(&self) -> &M {
        &self.message
    }
}

impl<M> Processing<M> {
    /// The Context of the `process` span (with the message's baggage when trusted); the
    /// Context current now when the filter gave the message no span.
    pub fn context(&self) -> Context {
        match &self.span {
            Some(span) => span.live.context().clone(),
            None => Context::current(),
        }
    }

    /// Runs `work` with the `process` span's Context current while it is polled (what the
    /// handler publishes is its child, its baggage the message's).
    pub fn in_span<F: Future>(&self, work: F) -> impl Future<Output = F::Output> {
        work.with_context(self.context())
    }

    /// Records that handling the message failed: `error.type` and status Error on the
    /// `process` span when it ends (the failure hook runs then). Callable while the span is
    /// current (inside [`Processing::in_span`] or [`Processing::process`]); the first failure
    /// recorded is the one kept.
    pub fn fail(&self, error_type: &'static str, description: impl Into<String>) {
        self.fail_with(Outcome::failure(error_type, description.into()));
    }

    fn fail_with(&self, outcome: Outcome) {
        if let Some(span) = &self.span {
            let _ = span.failure.set(outcome);
        }
    }

    /// Handles the message with `handler`, the `process` span current while it runs (what it
    /// publishes is the span's child; it may `ack` a JetStream message or [`fail`] it), and
    /// ends the span once it returns. An `Err` is recorded on the span (`error.type` = the
    /// error's type name, the conventions' fallback; status Error with its message), as is a
    /// panic (`error.type` = `panic`, the panic then going on), as every lens adapter does.
    ///
    /// [`fail`]: Processing::fail
    ///
    /// ```no_run
    /// # async fn run(client: async_nats::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// use futures_util::StreamExt;
    ///
    /// let consumer = lens_nats::Consumer::new();
    /// let mut jobs = consumer.subscriber(&client, client.subscribe("jobs.>").await?);
    /// while let Some(job) = jobs.next().await {
    ///     let handled = job
    ///         .process(async |job| {
    ///             let text = std::str::from_utf8(&job.payload)?;
    ///             println!("{text}");
    ///             Ok::<_, std::str::Utf8Error>(())
    ///         })
    ///         .await;
    ///     if let Err(e) = handled {
    ///         eprintln!("job failed: {e}"); // and recorded on its span
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn process<T, E>(
        self,
        handler: impl AsyncFnOnce(&Processing<M>) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: std::fmt::Display,
    {
        let cx = self.context();
        let result = CatchPanic {
            inner: std::pin::pin!(handler(&self)),
            processing: &self,
        }
        .with_context(cx)
        .await;
        if let Err(e) = &result {
            self.fail_with(Outcome::error_of::<E>(e.to_string()));
        }
        result
    }

    /// Ends the `process` span and gives the message back.
    pub fn into_inner(self) -> M {
        self.message
    }
}

/// A handler's future that records a panic on its message's `process` span before the panic
/// goes on (the span ends when the runtime drops the task).
struct CatchPanic<'a, F, M> {
    inner: Pin<&'a mut F>,
    processing: &'a Processing<M>,
}

impl<F: Future, M> Future for CatchPanic<'_, F, M> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        match std::panic::catch_unwind(AssertUnwindSafe(|| this.inner.as_mut().poll(cx))) {
            Ok(poll) => poll,
            Err(panic) => {
                this.processing.fail_with(Outcome::panic());
                std::panic::resume_unwind(panic)
            }
        }
    }
}

/// The settlement of a JetStream message, each a CLIENT `settle` span under the `process`
/// span (`ack orders`, `nak orders`, `term orders`).
impl Processing<async_nats::jetstream::Message> {
    /// Acknowledges the message.
    pub async fn ack(&self) -> Result<(), async_nats::Error> {
        self.settle("ack", AckKind::Ack).await
    }

    /// Asks for redelivery (after `delay`, if given).
    pub async fn nak(&self, delay: Option<std::time::Duration>) -> Result<(), async_nats::Error> {
        self.settle("nak", AckKind::Nak(delay)).await
    }

    /// Stops redelivery.
    pub async fn term(&self) -> Result<(), async_nats::Error> {
        self.settle("term", AckKind::Term).await
    }

    /// Settles with `kind`, named `name` in the span.
    pub async fn settle(&self, name: &'static str, kind: AckKind) -> Result<(), async_nats::Error> {
        let shared = &self.shared;
        let subject = self.message.message.subject.as_str();
        let info = MessageInfo {
            subject,
            headers: self.message.message.headers.as_ref(),
            payload: &self.message.message.payload,
            operation: OperationType::Settle,
        };
        let span = shared.options.filter_decision(&info).span.then(|| {
            let operation = shared.operation(name, OperationType::Settle, subject);
            shared
                .options
                .start_operation(&info, &operation, &self.context(), Vec::new())
        });
        let result = self.message.ack_with(kind).await;
        let status = match &result {
            Ok(()) => OperationStatus::Ok,
            Err(e) => crate::publish::failed_status("_OTHER", e),
        };
        shared.finish(span, status);
        result
    }
}

/// Reading the broker's address ([`Broker::resolve`]) from a stream's `poll_next`, before its
/// first message gets a span.
type Resolving = Option<Pin<Box<dyn Future<Output = ()> + Send + Sync>>>;

/// Ready once `shared`'s broker is known (at once after the first time).
fn poll_resolved(
    shared: &Arc<Shared>,
    resolving: &mut Resolving,
    cx: &mut TaskContext<'_>,
) -> Poll<()> {
    if shared.broker.is_resolved() {
        return Poll::Ready(());
    }
    let future = resolving.get_or_insert_with(|| {
        let shared = Arc::clone(shared);
        Box::pin(async move {
            shared.broker.resolve().await;
        })
    });
    let poll = future.as_mut().poll(cx);
    if poll.is_ready() {
        *resolving = None;
    }
    poll
}

/// What a traced stream reads, named on its spans and metrics: its subject pattern
/// (`messaging.destination.template`), its queue group (`messaging.consumer.group.name`), its
/// durable or named JetStream consumer (`messaging.destination.subscription.name`).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Subscription {
    /// The subject pattern subscribed to (`rollout.jobs.*`).
    pub subject: Option<String>,
    /// The queue group.
    pub queue_group: Option<String>,
    /// The durable or named consumer.
    pub name: Option<String>,
}

impl Subscription {
    /// A subscription to `pattern`.
    pub fn subject(pattern: impl Into<String>) -> Self {
        Subscription {
            subject: Some(pattern.into()),
            ..Subscription::default()
        }
    }

    /// In the queue group `group`.
    pub fn with_queue_group(mut self, group: impl Into<String>) -> Self {
        self.queue_group = Some(group.into());
        self
    }

    /// Of the durable or named consumer `name`.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// What a JetStream consumer's info says: its filter subject (when it has one), its
    /// durable or user-given name (an ephemeral consumer's generated name is left out: one
    /// per consumer, not a bounded name), its deliver group.
    pub fn of_jetstream(info: &async_nats::jetstream::consumer::Info) -> Self {
        let config = &info.config;
        let subject = (!config.filter_subject.is_empty()).then(|| config.filter_subject.clone());
        let name = config.durable_name.clone().or_else(|| config.name.clone());
        Subscription {
            subject,
            queue_group: config.deliver_group.clone(),
            name,
        }
    }
}

/// Any stream of NATS messages (a core [`Subscriber`], a JetStream push, ordered or pull
/// consumer's messages) whose messages come in a [`Processing`]; made by
/// [`Consumer::stream`] and the consumer's other wrappers.
pub struct TracedStream<S> {
    inner: S,
    shared: ConsumerShared,
    resolving: Resolving,
}

/// A core [`Subscriber`] (plain or queue group), traced.
pub type TracedSubscriber = TracedStream<Subscriber>;

/// A JetStream pull consumer's message stream, traced.
pub type TracedMessages = TracedStream<async_nats::jetstream::consumer::pull::Stream>;

impl<S> std::fmt::Debug for TracedStream<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TracedStream")
            .field("shared", &self.shared.0)
            .finish_non_exhaustive()
    }
}

impl<S> TracedStream<S> {
    /// The wrapped stream (unsubscribe, drain).
    pub fn inner_mut(&mut self) -> &mut S {
        &mut self.inner
    }
}

/// A message (or a stream's `Result` of one) a [`TracedStream`] yields in a [`Processing`]
/// (sealed).
pub trait Delivery: sealed::Sealed {
    /// What the traced stream yields for it.
    type Traced;
    /// Starts the message's `process` span.
    #[doc(hidden)]
    fn trace(self, consumer: &ConsumerShared) -> Self::Traced;
}

/// What a [`TracedStream`]'s messages are traced with (opaque).
#[doc(hidden)]
#[derive(Debug)]
pub struct ConsumerShared(Arc<Shared>);

impl Delivery for async_nats::Message {
    type Traced = Processing<async_nats::Message>;
    fn trace(self, consumer: &ConsumerShared) -> Self::Traced {
        consumer.0.process(self, &Context::current(), None)
    }
}

impl Delivery for async_nats::jetstream::Message {
    type Traced = Processing<async_nats::jetstream::Message>;
    fn trace(self, consumer: &ConsumerShared) -> Self::Traced {
        consumer.0.process(self, &Context::current(), None)
    }
}

impl<M: NatsMessage + Delivery<Traced = Processing<M>>, E> Delivery for Result<M, E> {
    type Traced = Result<Processing<M>, E>;
    fn trace(self, consumer: &ConsumerShared) -> Self::Traced {
        self.map(|message| message.trace(consumer))
    }
}

impl<S> Stream for TracedStream<S>
where
    S: Stream + Unpin,
    S::Item: Delivery,
{
    type Item = <S::Item as Delivery>::Traced;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if poll_resolved(&this.shared.0, &mut this.resolving, cx).is_pending() {
            return Poll::Pending;
        }
        match Pin::new(&mut this.inner).poll_next(cx) {
            Poll::Ready(Some(item)) => Poll::Ready(Some(item.trace(&this.shared))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The messages of one `receive` ([`Consumer::receive`]): iterate to process them, each
/// `process` span started when its message is taken, linked to the `receive` span.
pub struct ReceivedBatch {
    messages: VecDeque<async_nats::jetstream::Message>,
    receive_cx: Option<Context>,
    shared: Arc<Shared>,
    error: Option<async_nats::Error>,
}

impl std::fmt::Debug for ReceivedBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReceivedBatch")
            .field("messages", &self.messages.len())
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl ReceivedBatch {
    /// How many messages are left to process.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether every message was taken (or none came).
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The error that ended the batch early, after the messages it holds arrived.
    pub fn error(&self) -> Option<&async_nats::Error> {
        self.error.as_ref()
    }

    /// The `receive` span's span context (none when the filter gave the batch no span).
    pub fn receive_span_context(&self) -> Option<opentelemetry::trace::SpanContext> {
        self.receive_cx
            .as_ref()
            .map(|cx| cx.span().span_context().clone())
    }
}

impl Iterator for ReceivedBatch {
    type Item = Processing<async_nats::jetstream::Message>;

    fn next(&mut self) -> Option<Self::Item> {
        let message = self.messages.pop_front()?;
        // Processing begins under what is current now (the batch's `receive` span has ended:
        // linked, not a parent).
        Some(
            self.shared
                .process(message, &Context::current(), self.receive_cx.as_ref()),
        )
    }
}
