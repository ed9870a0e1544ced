//! The producer side: a PRODUCER `send` span per message, the current context and baggage
//! injected into the message's headers.

use std::sync::Arc;

use async_nats::header::{HeaderMap, NATS_MESSAGE_ID};
use async_nats::jetstream::context::PublishErrorKind as JetStreamErrorKind;
use async_nats::jetstream::message::PublishMessage;
use async_nats::subject::ToSubject;
use async_nats::{Client, PublishErrorKind, RequestErrorKind, Subject};
use bytes::Bytes;
use lens_core::OutboundPolicy;
use lens_core::{BAGGAGE_HEADER, TRACEPARENT_HEADER, TRACESTATE_HEADER};
use lens_span::MessageCarrier as _;
use lens_span::messaging::{
    MessagingErrors, Operation, OperationStatus, OperationType, OutboundDestinationPolicy,
};
use lens_span::metrics::Instruments;
use lens_span::{FilterDecision, LiveSpan, SpanOptions};
use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::{Link, SpanContext, TraceContextExt as _};
use opentelemetry::{Context, KeyValue, StringValue};

use crate::{Broker, MessageInfo, Nats, NatsHeaders, SYSTEM, Server};

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
    names: crate::Names,
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
            names: crate::Names::default(),
        }
    }

    fn options_mut(&mut self) -> &mut SpanOptions<Nats, OutboundDestinationPolicy> {
        &mut self.options
    }

    /// Records `server.address` / `server.port` as these (default: the server the client
    /// connected to, as the URL or options given to `connect` name it, read once before the
    /// first publish). The outbound policy decides by this address.
    pub fn with_server(mut self, address: impl Into<String>, port: Option<u16>) -> Self {
        self.server = Some(Server::new(address.into(), port));
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
            inbox_prefix: crate::inbox_prefix(client),
            options: self.options,
        })
    }
}

/// What every traced publish of one wrapper reads (never written after it is built: no lock).
#[derive(Debug)]
struct Shared {
    options: SpanOptions<Nats, OutboundDestinationPolicy>,
    broker: Broker,
    inbox_prefix: String,
    names: crate::Names,
}

impl Shared {
    /// Starts the `send` span of a message to `subject` (when the filter wants one) and injects
    /// its context, or the caller's, into `headers` (when the filter and the policy let it);
    /// `server` is the broker as `Broker::resolve` gives it. Not async. The core publishes call
    /// its three steps themselves, so that the span is written once, into their future.
    #[inline]
    fn start_send(
        &self,
        server: Option<&Server>,
        subject: &str,
        headers: &mut HeaderMap,
        payload: &[u8],
    ) -> Option<LiveSpan> {
        let decision = self.send_decision(subject, headers, payload);
        let span = self.send_span(decision, server, subject, headers, payload);
        self.inject_send(decision, span.as_ref(), server, subject, headers);
        span
    }

    /// What the filter decides for a message to `subject`.
    #[inline]
    fn send_decision(&self, subject: &str, headers: &HeaderMap, payload: &[u8]) -> FilterDecision {
        self.options.filter_decision(&MessageInfo {
            subject,
            headers: Some(headers),
            payload,
            operation: OperationType::Send,
        })
    }

    /// The `send` span of a message to `subject` when `decision` wants one, under the current
    /// Context. Returned as it is built (a `LiveSpan` is large: the caller's `let` is where it
    /// is written, not a copy of it).
    #[inline(never)]
    fn send_span(
        &self,
        decision: FilterDecision,
        server: Option<&Server>,
        subject: &str,
        headers: &HeaderMap,
        payload: &[u8],
    ) -> Option<LiveSpan> {
        if !decision.span {
            return None;
        }
        let info = MessageInfo {
            subject,
            headers: Some(headers),
            payload,
            operation: OperationType::Send,
        };
        // Set field by field (each `with_*` would move the whole operation).
        let mut operation = Operation::new(SYSTEM, "send", OperationType::Send);
        operation.destination = Some(subject);
        operation.temporary = crate::is_temporary(&self.inbox_prefix, subject);
        operation.destination_in_metrics = self.names.subjects_in_metrics;
        operation.template = self.names.templates.template_for(subject);
        operation.body_size = self.names.body_size.then_some(payload.len());
        operation.message_id = crate::carrier::value_of(headers, &NATS_MESSAGE_ID);
        if let Some(server) = server {
            operation.server_address = Some(server.address.clone());
            operation.server_port = server.port;
        }
        // A relay's message: the send span links to the context it forwards, which its own
        // context replaces in the headers. A plain publish's headers are new and empty:
        // nothing to look at.
        let links = if headers.is_empty() {
            Vec::new()
        } else {
            forwarded_span_context(headers)
                .map(|sc| vec![Link::with_context(sc)])
                .unwrap_or_default()
        };
        // Under the current Context, borrowed: a clone of it would cost two atomic increments
        // and two decrements per message.
        Some(Context::map_current(|parent| {
            self.options
                .start_operation(&info, &operation, parent, links)
        }))
    }

    /// Injects the context of `span`, else the caller's, into `headers` when `decision` and the
    /// outbound policy let it, and records on `span` the baggage keys sent.
    #[inline]
    fn inject_send(
        &self,
        decision: FilterDecision,
        span: Option<&LiveSpan>,
        server: Option<&Server>,
        subject: &str,
        headers: &mut HeaderMap,
    ) {
        let mut baggage_sent = false;
        if decision.inject {
            let current;
            let cx = match span {
                Some(span) => span.context(),
                None => {
                    current = Context::current();
                    &current
                }
            };
            let outbound = self
                .options
                .policy()
                .decide(server.map_or("", |s| s.address.as_str()), subject);
            // The policy decides for forwarded trace headers too: what it withholds from this
            // subject and server does not go out because the caller put it there.
            if !headers.is_empty() {
                let mut carrier = NatsHeaders(&mut *headers);
                if !outbound.trace_context {
                    carrier.remove(TRACEPARENT_HEADER);
                    carrier.remove(TRACESTATE_HEADER);
                }
                if !outbound.baggage {
                    carrier.remove(BAGGAGE_HEADER);
                }
            }
            self.options
                .propagation()
                .inject_message(outbound, cx, &mut NatsHeaders(headers));
            baggage_sent = outbound.baggage;
        }
        if let Some(span) = span {
            self.options.record_baggage_sent(span, baggage_sent);
        }
    }

    /// The CLIENT `receive` span of a request's wait for its reply on `inbox`.
    fn start_reply_wait(&self, inbox: &str) -> Option<LiveSpan> {
        let info = MessageInfo {
            subject: inbox,
            headers: None,
            payload: &[],
            operation: OperationType::Receive,
        };
        self.options.filter_decision(&info).span.then(|| {
            let mut operation = Operation::new(SYSTEM, "receive", OperationType::Receive)
                .with_destination(inbox, true);
            if let Some(server) = self.broker.get() {
                operation = operation.with_server(server.address.clone(), server.port);
            }
            self.options
                .start_operation(&info, &operation, &Context::current(), Vec::new())
        })
    }

    /// The CLIENT `publish_ack` span of a JetStream publish to `subject`, under its `send`
    /// span (`parent`).
    fn start_ack(&self, subject: &str, parent: &Context) -> Option<LiveSpan> {
        let info = MessageInfo {
            subject,
            headers: None,
            payload: &[],
            operation: OperationType::Settle,
        };
        self.options.filter_decision(&info).span.then(|| {
            let mut operation = Operation::new(SYSTEM, "publish_ack", OperationType::Settle)
                .with_destination(subject, false)
                .with_destination_in_metrics(self.names.subjects_in_metrics);
            if let Some(template) = self.names.templates.template_for(subject) {
                operation = operation.with_template(template);
            }
            if let Some(server) = self.broker.get() {
                operation = operation.with_server(server.address.clone(), server.port);
            }
            self.options
                .start_operation(&info, &operation, parent, Vec::new())
        })
    }

    /// Records how the operation ended (the classifier, the response hook) and ends the span.
    #[inline]
    fn finish(&self, mut span: Option<LiveSpan>, status: OperationStatus) {
        self.record(&mut span, status);
    }

    /// Records how the operation ended on `span` where it is: it ends where its owner drops
    /// it. A hot path's span stays in place in its future rather than being moved out to end.
    #[inline]
    fn record(&self, span: &mut Option<LiveSpan>, status: OperationStatus) {
        if let Some(span) = span {
            self.options
                .responder()
                .respond(span, &status, &status, &MessagingErrors);
        }
    }
}

/// The valid span context of a `traceparent` the caller already put in `headers`.
fn forwarded_span_context(headers: &HeaderMap) -> Option<SpanContext> {
    let cx = lens_core::propagator().extract(&NatsHeaders(headers));
    let sc = cx.span().span_context().clone();
    sc.is_valid().then_some(sc)
}

pub(crate) fn failed_status(
    error_type: &'static str,
    error: &dyn std::fmt::Display,
) -> OperationStatus {
    OperationStatus::Failed {
        error_type: error_type.into(),
        description: error.to_string(),
    }
}

/// An async-nats [`Client`] whose publishes and requests are traced: one PRODUCER span per
/// message, the span's context (and the caller's baggage) in the message's headers beside the
/// caller's own. Cheap to clone; [`TracedClient::inner`] is the client itself, for everything
/// else.
#[derive(Clone, Debug)]
pub struct TracedClient {
    client: Client,
    shared: Arc<Shared>,
}

impl TracedClient {
    /// The wrapped client (subscribe, flush, drain: untraced operations).
    pub fn inner(&self) -> &Client {
        &self.client
    }

    /// Publishes `payload` to `subject` with trace context in new headers. The span ends when
    /// the client has queued the message (core NATS has no acknowledgement).
    pub async fn publish<S: ToSubject>(
        &self,
        subject: S,
        payload: Bytes,
    ) -> Result<(), async_nats::PublishError> {
        // The body of `publish_with_headers` rather than a call to it: one layer of future
        // fewer, which every poll and every move of the caller's future would go through.
        let subject: Subject = subject.to_subject();
        let server = self.shared.broker.resolve().await;
        let mut headers = HeaderMap::new();
        // `start_send` in its three steps: the span is written into this future's state.
        let decision = self.shared.send_decision(&subject, &headers, &payload);
        let mut span = self
            .shared
            .send_span(decision, server, &subject, &headers, &payload);
        self.shared
            .inject_send(decision, span.as_ref(), server, &subject, &mut headers);
        let result = self
            .client
            .publish_with_headers(subject, headers, payload)
            .await;
        // Recorded in place; the span ends as this future completes (dropped here).
        self.shared.record(&mut span, publish_status(&result));
        result
    }

    /// Publishes with the caller's `headers`, trace context added (a stale `traceparent` /
    /// `tracestate` replaced).
    pub async fn publish_with_headers<S: ToSubject>(
        &self,
        subject: S,
        mut headers: HeaderMap,
        payload: Bytes,
    ) -> Result<(), async_nats::PublishError> {
        let subject: Subject = subject.to_subject();
        let server = self.shared.broker.resolve().await;
        // `start_send` in its three steps: the span is written into this future's state.
        let decision = self.shared.send_decision(&subject, &headers, &payload);
        let mut span = self
            .shared
            .send_span(decision, server, &subject, &headers, &payload);
        self.shared
            .inject_send(decision, span.as_ref(), server, &subject, &mut headers);
        let result = self
            .client
            .publish_with_headers(subject, headers, payload)
            .await;
        // Recorded in place; the span ends as this future completes (dropped here).
        self.shared.record(&mut span, publish_status(&result));
        result
    }

    /// Publishes `payload` to `subject`, its replies to go to `reply`: a `send` span as
    /// [`TracedClient::publish`] has it.
    pub async fn publish_with_reply<S: ToSubject, R: ToSubject>(
        &self,
        subject: S,
        reply: R,
        payload: Bytes,
    ) -> Result<(), async_nats::PublishError> {
        self.publish_with_reply_and_headers(subject, reply, HeaderMap::new(), payload)
            .await
    }

    /// [`TracedClient::publish_with_reply`] with the caller's `headers`.
    pub async fn publish_with_reply_and_headers<S: ToSubject, R: ToSubject>(
        &self,
        subject: S,
        reply: R,
        mut headers: HeaderMap,
        payload: Bytes,
    ) -> Result<(), async_nats::PublishError> {
        let subject: Subject = subject.to_subject();
        let server = self.shared.broker.resolve().await;
        // `start_send` in its three steps: the span is written into this future's state.
        let decision = self.shared.send_decision(&subject, &headers, &payload);
        let mut span = self
            .shared
            .send_span(decision, server, &subject, &headers, &payload);
        self.shared
            .inject_send(decision, span.as_ref(), server, &subject, &mut headers);
        let result = self
            .client
            .publish_with_reply_and_headers(subject, reply, headers, payload)
            .await;
        self.shared.record(&mut span, publish_status(&result));
        result
    }

    /// Sends a request and waits for its reply (the client's request timeout): see
    /// [`TracedClient::send_request`].
    pub async fn request<S: ToSubject>(
        &self,
        subject: S,
        payload: Bytes,
    ) -> Result<async_nats::Message, async_nats::RequestError> {
        self.send_request(subject, async_nats::Request::new().payload(payload))
            .await
    }

    /// [`TracedClient::request`] with the caller's `headers`.
    pub async fn request_with_headers<S: ToSubject>(
        &self,
        subject: S,
        headers: HeaderMap,
        payload: Bytes,
    ) -> Result<async_nats::Message, async_nats::RequestError> {
        self.send_request(
            subject,
            async_nats::Request::new().payload(payload).headers(headers),
        )
        .await
    }

    /// Sends `request` (its payload, headers, own timeout and inbox, as async-nats's
    /// `send_request` takes them) and waits for the reply, as two operations of the messaging
    /// conventions: the request message's PRODUCER `send` span, ended once the message is
    /// handed over, and a CLIENT `receive` span for the wait on the reply inbox (a temporary
    /// destination: named `receive`), so that the wait never mixes into the `send` durations.
    /// A traced responder's `process` span is the child of the `send` span, and its reply (sent
    /// inside it) lands in the same trace. The reply inbox is subscribed per request (async-nats
    /// multiplexes one inbox for its own untraced requests).
    pub async fn send_request<S: ToSubject>(
        &self,
        subject: S,
        request: async_nats::Request,
    ) -> Result<async_nats::Message, async_nats::RequestError> {
        use async_nats::RequestError;
        let subject: Subject = subject.to_subject();
        let mut headers = request.headers.unwrap_or_default();
        let payload = request.payload.unwrap_or_default();
        let timeout = request.timeout.unwrap_or_else(|| self.client.timeout());
        let inbox = request.inbox.unwrap_or_else(|| self.client.new_inbox());
        let mut replies = self
            .client
            .subscribe(inbox.clone())
            .await
            .map_err(|e| RequestError::with_source(RequestErrorKind::Other, e))?;
        let server = self.shared.broker.resolve().await;
        let span = self
            .shared
            .start_send(server, &subject, &mut headers, &payload);
        let sent = self
            .client
            .publish_with_reply_and_headers(subject, inbox.clone(), headers, payload)
            .await;
        if let Err(e) = sent {
            let kind = match e.kind() {
                PublishErrorKind::MaxPayloadExceeded => RequestErrorKind::MaxPayloadExceeded,
                PublishErrorKind::InvalidSubject => RequestErrorKind::InvalidSubject,
                PublishErrorKind::Send => RequestErrorKind::Other,
            };
            self.shared
                .finish(span, failed_status(publish_error_type(e.kind()), &e));
            return Err(RequestError::with_source(kind, e));
        }
        self.shared.finish(span, OperationStatus::Ok);

        let mut wait = self.shared.start_reply_wait(&inbox);
        let next = std::future::poll_fn(|cx| {
            futures_core::Stream::poll_next(std::pin::Pin::new(&mut replies), cx)
        });
        let reply = match timeout {
            Some(timeout) => tokio::time::timeout(timeout, next)
                .await
                .map_err(|e| RequestError::with_source(RequestErrorKind::TimedOut, e)),
            None => Ok(next.await),
        };
        let result = match reply {
            Ok(Some(message)) if message.status == Some(async_nats::StatusCode::NO_RESPONDERS) => {
                Err(RequestError::with_source(
                    RequestErrorKind::NoResponders,
                    "no responders",
                ))
            }
            Ok(Some(message)) => Ok(message),
            Ok(None) => Err(RequestError::with_source(
                RequestErrorKind::Other,
                "broken pipe",
            )),
            Err(e) => Err(e),
        };
        let status = match &result {
            Ok(_) => OperationStatus::Ok,
            Err(e) => {
                if let Some(span) = &mut wait {
                    span.set_messages(0);
                }
                failed_status(request_error_type(e.kind()), e)
            }
        };
        self.shared.finish(wait, status);
        result
    }
}

/// An async-nats JetStream context whose publishes are traced: the PRODUCER span lasts until
/// the stream acknowledges the message, records the ack's stream and sequence
/// (`messaging.nats.stream`, `messaging.nats.stream_sequence`), and classifies a failed publish
/// (`error.type` = `stream_not_found`, `timed_out`, ...).
#[derive(Clone, Debug)]
pub struct TracedJetStream {
    jetstream: async_nats::jetstream::Context,
    shared: Arc<Shared>,
}

impl TracedJetStream {
    /// The wrapped context.
    pub fn inner(&self) -> &async_nats::jetstream::Context {
        &self.jetstream
    }

    /// Publishes `payload` to `subject`: the `send` span ends when the message is handed
    /// over; the returned future resolves to the stream's ack (as async-nats's does: publish
    /// many, then await their acks), which is recorded by a CLIENT `publish_ack` span.
    pub async fn publish<S: ToSubject>(
        &self,
        subject: S,
        payload: Bytes,
    ) -> Result<TracedPublishAck, async_nats::jetstream::context::PublishError> {
        self.publish_with_headers(subject, HeaderMap::new(), payload)
            .await
    }

    /// [`TracedJetStream::publish`] with the caller's `headers` (a `Nats-Msg-Id` among them is
    /// recorded as `messaging.message.id`).
    pub async fn publish_with_headers<S: ToSubject>(
        &self,
        subject: S,
        headers: HeaderMap,
        payload: Bytes,
    ) -> Result<TracedPublishAck, async_nats::jetstream::context::PublishError> {
        self.publish_message(
            subject.to_subject(),
            headers,
            PublishMessage::build(),
            payload,
        )
        .await
    }

    /// Publishes `publish` (async-nats's builder: `message_id`, `expected_last_sequence`, ...)
    /// to `subject`, trace context added to its headers, as [`TracedJetStream::publish`] does.
    /// The builder's own headers are not readable from outside async-nats: the hooks see
    /// none, and a `traceparent` the builder set is replaced.
    pub async fn send_publish<S: ToSubject>(
        &self,
        subject: S,
        publish: PublishMessage,
    ) -> Result<TracedPublishAck, async_nats::jetstream::context::PublishError> {
        self.publish_message(
            subject.to_subject(),
            HeaderMap::new(),
            publish,
            Bytes::new(),
        )
        .await
    }

    async fn publish_message(
        &self,
        subject: Subject,
        mut headers: HeaderMap,
        publish: PublishMessage,
        payload: Bytes,
    ) -> Result<TracedPublishAck, async_nats::jetstream::context::PublishError> {
        let server = self.shared.broker.resolve().await;
        let span = self
            .shared
            .start_send(server, &subject, &mut headers, &payload);
        let mut publish = if payload.is_empty() {
            publish
        } else {
            publish.payload(payload)
        };
        for (name, values) in headers.iter() {
            for value in values {
                publish = publish.header(name.clone(), value.clone());
            }
        }
        let sent = self.jetstream.send_publish(subject.clone(), publish).await;
        let ack = match sent {
            Ok(ack) => ack,
            Err(e) => {
                self.shared
                    .finish(span, failed_status(jetstream_error_type(e.kind()), &e));
                return Err(e);
            }
        };
        let parent = span.as_ref().map(|s| s.context().clone());
        self.shared.finish(span, OperationStatus::Ok);
        let ack_span = parent.map(|parent| self.shared.start_ack(&subject, &parent));
        Ok(TracedPublishAck {
            ack,
            span: ack_span.flatten(),
            shared: Arc::clone(&self.shared),
        })
    }
}

/// The stream's ack of a traced JetStream publish, not yet awaited (async-nats's
/// `PublishAckFuture`, traced): awaiting it gives the [`PublishAck`]. A CLIENT `publish_ack`
/// span (operation type `settle`), the child of the `send` span, lasts from the hand-over to
/// the ack and records the ack's stream and sequence (`messaging.nats.stream`,
/// `messaging.nats.stream_sequence`), whether the stream found it a duplicate
/// (`messaging.nats.duplicate`), or a failure (`error.type` = `stream_not_found`,
/// `timed_out`, ...).
///
/// [`PublishAck`]: async_nats::jetstream::publish::PublishAck
pub struct TracedPublishAck {
    ack: async_nats::jetstream::context::PublishAckFuture,
    span: Option<LiveSpan>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for TracedPublishAck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TracedPublishAck")
            .field("span", &self.span)
            .finish_non_exhaustive()
    }
}

impl std::future::IntoFuture for TracedPublishAck {
    type Output = Result<
        async_nats::jetstream::publish::PublishAck,
        async_nats::jetstream::context::PublishError,
    >;
    type IntoFuture = std::pin::Pin<Box<dyn std::future::Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        let TracedPublishAck {
            ack,
            mut span,
            shared,
        } = self;
        Box::pin(async move {
            let result = ack.await;
            let status = match &result {
                Ok(ack) => {
                    if let Some(span) = &mut span {
                        span.set_attribute(KeyValue::new(
                            crate::STREAM,
                            StringValue::from(ack.stream.clone()),
                        ));
                        span.set_attribute(KeyValue::new(
                            crate::SEQUENCE,
                            i64::try_from(ack.sequence).unwrap_or(i64::MAX),
                        ));
                        span.set_attribute(KeyValue::new(crate::DUPLICATE, ack.duplicate));
                    }
                    OperationStatus::Ok
                }
                Err(e) => failed_status(jetstream_error_type(e.kind()), e),
            };
            shared.finish(span, status);
            result
        })
    }
}

/// How a core NATS publish ended.
fn publish_status(result: &Result<(), async_nats::PublishError>) -> OperationStatus {
    match result {
        Ok(()) => OperationStatus::Ok,
        Err(e) => failed_status(publish_error_type(e.kind()), e),
    }
}

fn publish_error_type(kind: PublishErrorKind) -> &'static str {
    match kind {
        PublishErrorKind::MaxPayloadExceeded => "max_payload_exceeded",
        PublishErrorKind::InvalidSubject => "invalid_subject",
        PublishErrorKind::Send => "send",
    }
}

fn request_error_type(kind: RequestErrorKind) -> &'static str {
    match kind {
        RequestErrorKind::TimedOut => "timed_out",
        RequestErrorKind::NoResponders => "no_responders",
        RequestErrorKind::InvalidSubject => "invalid_subject",
        RequestErrorKind::MaxPayloadExceeded => "max_payload_exceeded",
        RequestErrorKind::Other => "_OTHER",
    }
}

fn jetstream_error_type(kind: JetStreamErrorKind) -> &'static str {
    match kind {
        JetStreamErrorKind::StreamNotFound => "stream_not_found",
        JetStreamErrorKind::WrongLastMessageId => "wrong_last_message_id",
        JetStreamErrorKind::WrongLastSequence => "wrong_last_sequence",
        JetStreamErrorKind::TimedOut => "timed_out",
        JetStreamErrorKind::BrokenPipe => "broken_pipe",
        JetStreamErrorKind::MaxAckPending => "max_ack_pending",
        JetStreamErrorKind::MaxPayloadExceeded => "max_payload_exceeded",
        JetStreamErrorKind::Other => "_OTHER",
    }
}
