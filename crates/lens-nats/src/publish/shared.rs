//! What every traced publish of one wrapper reads, and the spans it starts: `send` (with the
//! injection of its context), a request's reply wait, a JetStream publish's ack.

use async_nats::header::{HeaderMap, NATS_MESSAGE_ID};
use lens_core::{BAGGAGE_HEADER, TRACEPARENT_HEADER, TRACESTATE_HEADER};
use lens_span::MessageCarrier as _;
use lens_span::messaging::{
    MessagingErrors, Operation, OperationStatus, OperationType, OutboundDestinationPolicy,
};
use lens_span::{FilterDecision, LiveSpan, SpanOptions};
use opentelemetry::Context;
use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::{Link, SpanContext, TraceContextExt as _};

use crate::adapter::{MessageInfo, Nats};
use crate::attributes::SYSTEM;
use crate::broker::Broker;
use crate::carrier::NatsHeaders;
use crate::inbox::is_temporary;
use crate::names::Names;
use crate::server::Server;

/// What every traced publish of one wrapper reads (never written after it is built: no lock).
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) options: SpanOptions<Nats, OutboundDestinationPolicy>,
    pub(super) broker: Broker,
    pub(super) inbox_prefix: String,
    pub(super) names: Names,
}

impl Shared {
    /// Starts the `send` span of a message to `subject` (when the filter wants one) and injects
    /// its context, or the caller's, into `headers` (when the filter and the policy let it);
    /// `server` is the broker as `Broker::resolve` gives it. Not async. The core publishes call
    /// its three steps themselves, so that the span is written once, into their future.
    #[inline]
    pub(super) fn start_send(
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
    pub(super) fn send_decision(
        &self,
        subject: &str,
        headers: &HeaderMap,
        payload: &[u8],
    ) -> FilterDecision {
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
    pub(super) fn send_span(
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
        operation.temporary = is_temporary(&self.inbox_prefix, subject);
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
    pub(super) fn inject_send(
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
    pub(super) fn start_reply_wait(&self, inbox: &str) -> Option<LiveSpan> {
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
    pub(super) fn start_ack(&self, subject: &str, parent: &Context) -> Option<LiveSpan> {
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
    pub(super) fn finish(&self, mut span: Option<LiveSpan>, status: OperationStatus) {
        self.record(&mut span, status);
    }

    /// Records how the operation ended on `span` where it is: it ends where its owner drops
    /// it. A hot path's span stays in place in its future rather than being moved out to end.
    #[inline]
    pub(super) fn record(&self, span: &mut Option<LiveSpan>, status: OperationStatus) {
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
