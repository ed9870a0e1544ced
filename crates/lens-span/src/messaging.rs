//! The messaging lifecycle: spans for a message queue per the OpenTelemetry messaging semantic
//! conventions (1.44, status Development: the keys may still change), on top of the same
//! [`SpanOptions`] every adapter uses (filter, span name, attribute hooks, classifier, failure
//! hook, meter).
//!
//! | operation | [`OperationType`] | span kind | span name | parent |
//! | --- | --- | --- | --- | --- |
//! | publish one message | `send` | PRODUCER | `send {destination}` | the caller's Context |
//! | pull a batch | `receive` | CLIENT | `receive {destination}` | the caller's Context; a link to every message's context |
//! | handle one message | `process` | CONSUMER | `process {destination}` | the span current when processing begins, with a link to the message's context, else the message's context ([`ConsumerParent::Ambient`]); the message's context ([`ConsumerParent::Message`]); or a new trace with a link to it ([`ConsumerParent::Links`]) |
//! | ack / nak / term | `settle` | CLIENT | `{operation} {destination}` (`ack orders`) | the process span, when current |
//!
//! A temporary destination (a reply inbox) is left out of the span name (`send`) and of the
//! metrics, and marked `messaging.destination.temporary`.
//!
//! Which context a consumer trusts is the inbound policy's to say, chosen per destination
//! ([`DestinationPolicy`]): Trust (the message's span is the parent, its baggage kept), Link
//! (a new trace with a link to it), Ignore. A CONSUMER span that starts a new trace records
//! `lens.trace.new_root` ([`crate::new_root`]) as the HTTP and gRPC servers do.
//!
//! ```
//! use std::collections::HashMap;
//! use lens_core::InboundPolicy;
//! use lens_span::messaging::{ConsumerParent, DestinationPolicy, Operation, OperationType};
//! use lens_span::{Adapter, SpanOptions};
//! use opentelemetry::Context;
//! use opentelemetry::trace::TracerProvider;
//! use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
//!
//! // What the hooks of this (made-up) adapter see: the destination.
//! struct Demo;
//! impl Adapter for Demo {
//!     type Request<'a> = str;
//!     type Response<'a> = ();
//!     type Status = lens_span::messaging::OperationStatus;
//! }
//!
//! let exporter = InMemorySpanExporter::default();
//! let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
//! let options: SpanOptions<Demo, DestinationPolicy> =
//!     SpanOptions::new(provider.tracer("demo"), DestinationPolicy::new(InboundPolicy::trust_all()));
//!
//! // A message that arrived with its headers, read through lens-core's carrier.
//! let headers = HashMap::from([(
//!     "traceparent".to_owned(),
//!     "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".to_owned(),
//! )]);
//! let carrier = lens_core::MapCarrier(&headers);
//! let operation = Operation::new("demo", "process", OperationType::Process).with_destination("orders", false);
//! let span = options.start_process("orders", &operation, &carrier, ConsumerParent::Message, &Context::current());
//! span.end();
//!
//! let spans = exporter.get_finished_spans().unwrap();
//! assert_eq!(spans[0].name, "process orders");
//! assert_eq!(spans[0].parent_span_id.to_string(), "00f067aa0ba902b7");
//! ```

use std::borrow::Cow;

use lens_core::policy::OutboundDecision;
use lens_core::policy::{InboundContext, InboundPolicy, InboundRequest};
use lens_core::{InboundDecision, LensContextExt, OutboundPolicy};
use opentelemetry::propagation::Extractor;
use opentelemetry::trace::{Link, SpanKind, TraceContextExt};
use opentelemetry::{Context, KeyValue, StringValue};
use opentelemetry_semantic_conventions::attribute as semconv;

use crate::classify::{Classify, Outcome};
use crate::destination_rules::DestinationRules;
use crate::{Adapter, LiveSpan, SpanOptions};

/// The kind of a messaging operation (`messaging.operation.type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OperationType {
    /// A message created to be sent later (batch publishing): PRODUCER.
    Create,
    /// One message (or a batch) sent to the broker: PRODUCER.
    Send,
    /// Messages pulled from the broker: CLIENT.
    Receive,
    /// One message handled by the application: CONSUMER.
    Process,
    /// A message settled with the broker (ack, nak, term): CLIENT.
    Settle,
}

impl OperationType {
    /// The value of `messaging.operation.type`.
    pub fn as_str(self) -> &'static str {
        match self {
            OperationType::Create => "create",
            OperationType::Send => "send",
            OperationType::Receive => "receive",
            OperationType::Process => "process",
            OperationType::Settle => "settle",
        }
    }

    /// The span kind the conventions give the operation.
    pub fn span_kind(self) -> SpanKind {
        match self {
            OperationType::Create | OperationType::Send => SpanKind::Producer,
            OperationType::Receive | OperationType::Settle => SpanKind::Client,
            OperationType::Process => SpanKind::Consumer,
        }
    }
}

/// What a single-message `process` span descends from, chosen per consumer
/// (docs/messaging.md#parent-or-link has a waterfall of each).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ConsumerParent {
    /// What the messaging conventions (1.44) recommend, the default: when a span is current
    /// as processing begins (a poll loop's span, a batch's `receive` span), it is the parent
    /// and the `process` span links to the message's context (when the policy lets it); with
    /// no span current, the message's context is the parent, as with
    /// [`ConsumerParent::Message`]. The message's baggage is current when the policy trusts
    /// it.
    #[default]
    Ambient,
    /// The child of the context the message carried (when the policy trusts it), with a link
    /// to the span current when processing began, if any: one trace from producer to
    /// consumer, what NeMo Lens's `extract_context` + `attach` and most Python
    /// instrumentations give.
    Message,
    /// A new trace with a link to the message's context (and to the span current when
    /// processing began): for consumers whose work is not part of the producer's (a message
    /// handled long after it was sent, or one of many feeding a single piece of work).
    /// `lens.trace.new_root` is `linked`.
    Links,
}

/// What the classifier of a messaging adapter sees: how an operation ended.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OperationStatus {
    /// The operation succeeded (a publish acknowledged, a settlement sent).
    Ok,
    /// The operation failed; `error_type` is the adapter's low-cardinality name for why.
    Failed {
        /// The `error.type` of the failure.
        error_type: Cow<'static, str>,
        /// A description for the span status.
        description: String,
    },
}

/// The default classifier of messaging operations: a failed operation is an error, nothing
/// else is.
#[derive(Clone, Copy, Debug, Default)]
pub struct MessagingErrors;

impl Classify<OperationStatus> for MessagingErrors {
    fn classify(&self, status: &OperationStatus) -> Outcome {
        match status {
            OperationStatus::Ok => Outcome::Success,
            OperationStatus::Failed {
                error_type,
                description,
            } => Outcome::failure(error_type.clone(), description.clone()),
        }
    }
}

/// One messaging operation as the conventions describe it: the attributes and the name of its
/// span. Built by an adapter per operation; what is borrowed is copied into the span's
/// attributes only.
#[derive(Clone, Debug)]
pub struct Operation<'a> {
    /// `messaging.system` (`nats`, `kafka`, `rabbitmq`).
    pub system: &'static str,
    /// `messaging.operation.name`: the system's own name (`send`, `receive`, `process`,
    /// `ack`); the first word of the span name.
    pub name: &'static str,
    /// `messaging.operation.type`.
    pub operation_type: OperationType,
    /// `messaging.destination.name`: a subject, topic or queue.
    pub destination: Option<&'a str>,
    /// Whether the destination is temporary (a reply inbox): left out of the span name and
    /// the metrics, `messaging.destination.temporary` set.
    pub temporary: bool,
    /// Whether the metrics see `messaging.destination.name` (true unless the adapter says
    /// otherwise: its destinations may be many, a subject per job or per user).
    pub destination_in_metrics: bool,
    /// `messaging.destination.template`: the pattern the destination is one of
    /// (`rollout.jobs.*`); the span name's destination and a metric attribute when known.
    pub template: Option<&'a str>,
    /// `messaging.consumer.group.name`: the consumer group (NATS: the queue group).
    pub consumer_group: Option<&'a str>,
    /// `messaging.destination.subscription.name`: a durable or named subscription (a
    /// JetStream durable consumer).
    pub subscription: Option<&'a str>,
    /// `messaging.message.id`, where the broker gives one.
    pub message_id: Option<&'a str>,
    /// `messaging.message.body.size` (bytes).
    pub body_size: Option<usize>,
    /// `messaging.batch.message_count` (batch operations).
    pub batch_count: Option<usize>,
    /// `server.address` (shared text: cloned without copying).
    pub server_address: Option<StringValue>,
    /// `server.port`.
    pub server_port: Option<u16>,
}

impl<'a> Operation<'a> {
    /// An operation of `system` named `name`, of type `operation_type`, nothing else known.
    #[inline]
    pub fn new(system: &'static str, name: &'static str, operation_type: OperationType) -> Self {
        Operation {
            system,
            name,
            operation_type,
            destination: None,
            temporary: false,
            destination_in_metrics: true,
            template: None,
            consumer_group: None,
            subscription: None,
            message_id: None,
            body_size: None,
            batch_count: None,
            server_address: None,
            server_port: None,
        }
    }

    /// Sets the destination, and whether it is temporary.
    #[inline]
    pub fn with_destination(mut self, destination: &'a str, temporary: bool) -> Self {
        self.destination = Some(destination);
        self.temporary = temporary;
        self
    }

    /// Sets the destination's template: the span name's destination, and a metric attribute.
    #[inline]
    pub fn with_template(mut self, template: &'a str) -> Self {
        self.template = Some(template);
        self
    }

    /// Whether the metrics see the destination's name (default: true).
    #[inline]
    pub fn with_destination_in_metrics(mut self, on: bool) -> Self {
        self.destination_in_metrics = on;
        self
    }

    /// Sets the consumer group.
    #[inline]
    pub fn with_consumer_group(mut self, group: &'a str) -> Self {
        self.consumer_group = Some(group);
        self
    }

    /// Sets the subscription's name.
    #[inline]
    pub fn with_subscription(mut self, name: &'a str) -> Self {
        self.subscription = Some(name);
        self
    }

    /// Sets the message id.
    #[inline]
    pub fn with_message_id(mut self, id: &'a str) -> Self {
        self.message_id = Some(id);
        self
    }

    /// Sets the body size.
    #[inline]
    pub fn with_body_size(mut self, bytes: usize) -> Self {
        self.body_size = Some(bytes);
        self
    }

    /// Sets the batch's message count.
    #[inline]
    pub fn with_batch_count(mut self, count: usize) -> Self {
        self.batch_count = Some(count);
        self
    }

    /// Sets the broker's address and port.
    #[inline]
    pub fn with_server(mut self, address: StringValue, port: Option<u16>) -> Self {
        self.server_address = Some(address);
        self.server_port = port;
        self
    }

    /// The span name the conventions give the operation: `{operation name} {destination}`,
    /// the destination being the template when known, else the destination's name; the
    /// operation name alone for a temporary or unknown destination.
    pub fn span_name(&self) -> Cow<'static, str> {
        let destination = if self.temporary {
            None
        } else {
            self.template.or(self.destination)
        };
        match destination {
            Some(destination) => {
                // Sized once: `format!` would grow its buffer, a second allocation per span.
                let mut name = String::with_capacity(self.name.len() + 1 + destination.len());
                name.push_str(self.name);
                name.push(' ');
                name.push_str(destination);
                Cow::Owned(name)
            }
            _ => Cow::Borrowed(self.name),
        }
    }

    /// The span's attributes, and how many of the first of them the metrics see (those the
    /// conventions name for the messaging metrics).
    pub(crate) fn attributes(&self) -> (Vec<KeyValue>, usize) {
        let mut attributes = Vec::with_capacity(10);
        attributes.push(KeyValue::new(semconv::MESSAGING_SYSTEM, self.system));
        attributes.push(KeyValue::new(semconv::MESSAGING_OPERATION_NAME, self.name));
        attributes.push(KeyValue::new(
            semconv::MESSAGING_OPERATION_TYPE,
            self.operation_type.as_str(),
        ));
        if let Some(address) = &self.server_address {
            attributes.push(KeyValue::new(semconv::SERVER_ADDRESS, address.clone()));
        }
        if let Some(port) = self.server_port {
            attributes.push(KeyValue::new(semconv::SERVER_PORT, i64::from(port)));
        }
        if let Some(template) = self.template.filter(|_| !self.temporary) {
            attributes.push(KeyValue::new(
                semconv::MESSAGING_DESTINATION_TEMPLATE,
                template.to_owned(),
            ));
        }
        if let Some(group) = self.consumer_group {
            attributes.push(KeyValue::new(
                semconv::MESSAGING_CONSUMER_GROUP_NAME,
                group.to_owned(),
            ));
        }
        if let Some(name) = self.subscription {
            attributes.push(KeyValue::new(
                semconv::MESSAGING_DESTINATION_SUBSCRIPTION_NAME,
                name.to_owned(),
            ));
        }
        // One copy of the destination (no clone of it): before the metrics' share of the
        // attributes, or after it for a temporary one or one the metrics must not see.
        let destination = self
            .destination
            .map(|d| KeyValue::new(semconv::MESSAGING_DESTINATION_NAME, d.to_owned()));
        let metric_attributes = match destination {
            Some(destination) if !self.temporary && self.destination_in_metrics => {
                attributes.push(destination);
                attributes.len()
            }
            Some(destination) if !self.temporary => {
                let metric_attributes = attributes.len();
                attributes.push(destination);
                metric_attributes
            }
            Some(destination) => {
                let metric_attributes = attributes.len();
                attributes.push(destination);
                attributes.push(KeyValue::new(
                    semconv::MESSAGING_DESTINATION_TEMPORARY,
                    true,
                ));
                metric_attributes
            }
            None => attributes.len(),
        };
        if let Some(id) = self.message_id {
            attributes.push(KeyValue::new(semconv::MESSAGING_MESSAGE_ID, id.to_owned()));
        }
        if let Some(size) = self.body_size {
            attributes.push(KeyValue::new(
                semconv::MESSAGING_MESSAGE_BODY_SIZE,
                i64::try_from(size).unwrap_or(i64::MAX),
            ));
        }
        if let Some(count) = self.batch_count {
            attributes.push(KeyValue::new(
                semconv::MESSAGING_BATCH_MESSAGE_COUNT,
                i64::try_from(count).unwrap_or(i64::MAX),
            ));
        }
        (attributes, metric_attributes)
    }
}

/// The inbound policy of a consumer, chosen per destination instead of per peer: the first
/// rule whose pattern matches the message's destination, else the default.
///
/// Patterns are dot-separated tokens as NATS writes subjects: `*` matches one token, a final
/// `>` matches one or more; any other token matches itself exactly.
///
/// ```
/// use lens_core::{InboundDecision, InboundPolicy};
/// use lens_span::messaging::DestinationPolicy;
///
/// let policy = DestinationPolicy::new(InboundPolicy::trust_all())
///     .for_destination("partner.>", InboundPolicy::link_all())
///     .for_destination("public.*.events", InboundPolicy::ignore_all());
/// assert!(format!("{:?}", policy.policy_for("partner.orders.new")).contains("Link"));
/// assert!(format!("{:?}", policy.policy_for("public.a.events")).contains("Ignore"));
/// assert!(format!("{:?}", policy.policy_for("orders")).contains("Trust"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct DestinationPolicy {
    default: InboundPolicy,
    rules: DestinationRules<InboundPolicy>,
}

impl From<InboundPolicy> for DestinationPolicy {
    /// `policy` for every destination.
    fn from(policy: InboundPolicy) -> Self {
        DestinationPolicy::new(policy)
    }
}

impl DestinationPolicy {
    /// `default` for every destination no rule names.
    pub fn new(default: InboundPolicy) -> Self {
        DestinationPolicy {
            default,
            rules: DestinationRules::default(),
        }
    }

    /// `policy` for destinations matching `pattern` (after the rules added before it).
    pub fn for_destination(mut self, pattern: impl Into<String>, policy: InboundPolicy) -> Self {
        self.rules = self.rules.with(pattern.into(), policy);
        self
    }

    /// The policy for `destination`.
    #[inline]
    pub fn policy_for(&self, destination: &str) -> &InboundPolicy {
        self.rules
            .find(destination)
            .map_or(&self.default, |(_, policy)| policy)
    }
}

/// The outbound policy of a producer, chosen per destination as well as per server: one broker
/// carries internal and external destinations, so the first rule whose pattern matches the
/// message's destination decides (by the server's address, as lens-core's [`OutboundPolicy`]
/// does), else the default. Patterns are those of [`DestinationPolicy`].
///
/// ```
/// use lens_core::OutboundPolicy;
/// use lens_span::messaging::OutboundDestinationPolicy;
///
/// let policy = OutboundDestinationPolicy::new(
///     // Context to the company's brokers only...
///     OutboundPolicy::default().trace_context_only_to(["*.internal"]),
/// )
/// // ...and never on the subjects partners read, whichever broker carries them.
/// .for_destination(
///     "partner.>",
///     OutboundPolicy::default().trace_context_only_to(Vec::<String>::new()).no_baggage(),
/// );
///
/// assert!(policy.decide("nats.internal", "jobs.rollout").trace_context);
/// assert!(!policy.decide("nats.internal", "partner.orders").trace_context);
/// assert!(!policy.decide("nats.internal", "partner.orders").baggage);
/// assert!(!policy.decide("broker.example.com", "jobs.rollout").trace_context);
/// ```
#[derive(Clone, Debug, Default)]
pub struct OutboundDestinationPolicy {
    default: OutboundPolicy,
    rules: DestinationRules<OutboundPolicy>,
}

impl From<OutboundPolicy> for OutboundDestinationPolicy {
    /// `policy` for every destination.
    fn from(policy: OutboundPolicy) -> Self {
        OutboundDestinationPolicy::new(policy)
    }
}

impl OutboundDestinationPolicy {
    /// `default` for every destination no rule names.
    pub fn new(default: OutboundPolicy) -> Self {
        OutboundDestinationPolicy {
            default,
            rules: DestinationRules::default(),
        }
    }

    /// `policy` for destinations matching `pattern` (after the rules added before it).
    pub fn for_destination(mut self, pattern: impl Into<String>, policy: OutboundPolicy) -> Self {
        self.rules = self.rules.with(pattern.into(), policy);
        self
    }

    /// The policy for `destination`.
    #[inline]
    pub fn policy_for(&self, destination: &str) -> &OutboundPolicy {
        self.rules
            .find(destination)
            .map_or(&self.default, |(_, policy)| policy)
    }

    /// What a message to `destination` on the broker at `server` may carry.
    #[inline]
    pub fn decide(&self, server: &str, destination: &str) -> OutboundDecision {
        self.policy_for(destination).decide(server)
    }
}

/// The destination templates a producer declares (`rollout.jobs.*`): a message's destination
/// matching one is named by it in the span name and the metrics
/// (`messaging.destination.template`), so that a destination per job or per run makes no new
/// span name or metric series. Patterns are those of [`DestinationPolicy`]; the first match
/// wins.
///
/// ```
/// use lens_span::messaging::DestinationTemplates;
///
/// let templates = DestinationTemplates::default().with("rollout.jobs.*");
/// assert_eq!(templates.template_for("rollout.jobs.7f3a"), Some("rollout.jobs.*"));
/// assert_eq!(templates.template_for("orders"), None);
/// ```
#[derive(Clone, Debug, Default)]
pub struct DestinationTemplates {
    patterns: DestinationRules<()>,
}

impl DestinationTemplates {
    /// Adds `pattern` (after those added before it).
    pub fn with(mut self, pattern: impl Into<String>) -> Self {
        self.patterns = self.patterns.with(pattern.into(), ());
        self
    }

    /// The first declared template `destination` matches.
    #[inline]
    pub fn template_for(&self, destination: &str) -> Option<&str> {
        self.patterns.find(destination).map(|(pattern, ())| pattern)
    }

    /// Whether no template is declared.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }
}

impl<A: Adapter, P> SpanOptions<A, P> {
    /// Starts the span of a `send`, `receive` or `settle` operation (its kind from the
    /// operation's type) for `request` under `parent`, with `links` (a batch receive's links
    /// to its messages). Named by the span-name hook, else [`Operation::span_name`]; with the
    /// operation's attributes, then the request hook's. With a meter, the operation's
    /// duration and message count are recorded when the span ends.
    #[inline]
    pub fn start_operation(
        &self,
        request: &A::Request<'_>,
        operation: &Operation<'_>,
        parent: &Context,
        links: Vec<Link>,
    ) -> LiveSpan {
        self.start_kind(
            request,
            || operation.span_name(),
            operation.attributes(),
            operation.operation_type.span_kind(),
            parent,
            links,
        )
    }
}

impl<A: Adapter> SpanOptions<A, DestinationPolicy> {
    /// Decides with the policy for `destination` and extracts what it allows from a message's
    /// headers (`carrier`, read through lens-core's propagator or the global one).
    #[inline]
    pub fn extract_message(&self, destination: &str, carrier: &dyn Extractor) -> InboundContext {
        let policy: &InboundPolicy = self.policy().policy_for(destination);
        self.propagation()
            .extract(policy, &InboundRequest::new(carrier))
    }

    /// The link a batch `receive` span has to one of its messages: to the message's span
    /// context when the policy for `destination` trusts or links it, none when it ignores it
    /// or the message carried no valid context.
    pub fn message_link(&self, destination: &str, carrier: &dyn Extractor) -> Option<Link> {
        let inbound = self.extract_message(destination, carrier);
        let sc = match inbound.decision {
            InboundDecision::Trust => inbound.remote_span_context(),
            InboundDecision::Link => inbound.link,
            InboundDecision::Ignore => None,
        }?;
        Some(Link::with_context(sc))
    }

    /// Starts the CONSUMER `process` span of one message read from `carrier`: the policy for
    /// its destination decides, `parent` says whether a trusted context becomes the parent or
    /// a link; the span links to the span of `current` (the Context current when processing
    /// began) when it has one. A span that starts a new trace records `lens.trace.new_root`.
    pub fn start_process(
        &self,
        request: &A::Request<'_>,
        operation: &Operation<'_>,
        carrier: &dyn Extractor,
        parent: ConsumerParent,
        current: &Context,
    ) -> LiveSpan {
        self.start_process_with_links(request, operation, carrier, parent, current, Vec::new())
    }

    /// [`SpanOptions::start_process`] with `links` of the adapter's own besides (a message
    /// taken from a batch: the batch's `receive` span).
    pub fn start_process_with_links(
        &self,
        request: &A::Request<'_>,
        operation: &Operation<'_>,
        carrier: &dyn Extractor,
        parent: ConsumerParent,
        current: &Context,
        mut links: Vec<Link>,
    ) -> LiveSpan {
        let destination = operation.destination.unwrap_or_default();
        let mut inbound = self.extract_message(destination, carrier);
        let (mut attributes, metric_attributes) = operation.attributes();
        let current_span = current.span();
        let current_sc = current_span.span_context();
        // The message's span context (valid only when trusted) is read in place and cloned
        // only where it becomes a link: a clone copies its tracestate, one allocation per
        // member and two per member's text.
        let remote_valid = inbound.parent.span().span_context().is_valid();
        let remote = |inbound: &InboundContext| inbound.parent.span().span_context().clone();
        let (parent_cx, new_root) = match parent {
            ConsumerParent::Ambient if current_sc.is_valid() => {
                // The span current now is the parent; the message's context a link (trusted
                // or, as the policy says, linked only).
                let link = if remote_valid {
                    Some(remote(&inbound))
                } else {
                    inbound.link.take()
                };
                if let Some(sc) = link {
                    links.push(Link::with_context(sc));
                }
                let cx = match inbound.decision {
                    InboundDecision::Trust => {
                        current.with_baggage_list(inbound.parent.lens_baggage().into_owned())
                    }
                    _ => current.clone(),
                };
                (cx, None)
            }
            ConsumerParent::Links if remote_valid => {
                links.push(Link::with_context(remote(&inbound)));
                // The message's baggage stays (the policy trusted it); its span does not parent
                // (not even as an invalid span: a parent-based sampler would read that as an
                // unsampled parent).
                let cx =
                    Context::new().with_baggage_list(inbound.parent.lens_baggage().into_owned());
                (
                    cx,
                    Some(KeyValue::new(
                        crate::new_root::NEW_ROOT,
                        crate::new_root::LINKED,
                    )),
                )
            }
            _ => {
                let new_root = crate::new_root::cause_in(carrier, &inbound);
                if let Some(link) = inbound.link {
                    links.push(Link::with_context(link));
                }
                (inbound.parent, new_root)
            }
        };
        attributes.extend(new_root);
        self.push_baggage_keys(&mut attributes, &parent_cx);
        if current_sc.is_valid()
            && parent_cx.span().span_context() != current_sc
            && !links.iter().any(|l| l.span_context == *current_sc)
        {
            links.push(Link::with_context(current_sc.clone()));
        }
        self.start_kind(
            request,
            || operation.span_name(),
            (attributes, metric_attributes),
            SpanKind::Consumer,
            &parent_cx,
            links,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn span_names_and_temporary_destinations() {
        let op = Operation::new("nats", "send", OperationType::Send);
        assert_eq!(op.span_name(), "send");
        assert_eq!(
            op.clone().with_destination("orders", false).span_name(),
            "send orders"
        );
        let temp = op.with_destination("_INBOX.abc", true);
        assert_eq!(temp.span_name(), "send");
        let (attributes, metric) = temp.attributes();
        // The metrics never see a temporary destination's name.
        assert!(
            attributes[..metric]
                .iter()
                .all(|kv| kv.key.as_str() != semconv::MESSAGING_DESTINATION_NAME)
        );
        assert!(attributes[metric..].iter().any(|kv| {
            kv.key.as_str() == semconv::MESSAGING_DESTINATION_NAME
                && kv.value.as_str() == "_INBOX.abc"
        }));
    }
}
