//! The sending side: a PRODUCER `send` span per message, its context in a context frame or a
//! carrier field.

use lens_core::OutboundPolicy;
use lens_core::carrier::{Carrier, CarrierField};
use lens_span::messaging::{Operation, OperationStatus, OperationType};
use lens_span::metrics::Instruments;
use lens_span::{LiveSpan, MessageCarrier, SpanOptions};
use opentelemetry::Context;
use opentelemetry::propagation::Injector;

use crate::adapter::{MessageInfo, Zmq};
use crate::attributes::SYSTEM;
use crate::span_end;

/// The knobs of the sending side. [`Producer::start_send`] starts one message's `send` span;
/// its [`Sending`] writes the context frame or the carrier field, and ends the span once the
/// socket took the message.
///
/// ```
/// use lens_zmq::Producer;
///
/// let producer = Producer::new();
/// let mut frames = vec![b"payload".to_vec()];
/// // A PRODUCER span `send engine.requests`; the context frame appended as the last frame.
/// let sending = producer.send_frames("engine.requests", &mut frames);
/// assert_eq!(frames.len(), 2);
/// // ... socket.send_multipart(frames, 0) ...
/// sending.end();
/// ```
pub struct Producer {
    options: SpanOptions<Zmq, OutboundPolicy>,
}

impl std::fmt::Debug for Producer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Producer")
            .field("options", &self.options)
            .finish()
    }
}

lens_span::span_knobs!(Producer, request: MessageInfo<'_>, response: OperationStatus,
    status: OperationStatus, policy: with_outbound_policy(OutboundPolicy));

impl Producer {
    /// Spans from the global tracer provider (scope `lens-zmq`), lens's propagator, context and
    /// baggage sent to every destination, no hooks.
    pub fn new() -> Self {
        let mut options = SpanOptions::global(
            "lens-zmq",
            env!("CARGO_PKG_VERSION"),
            OutboundPolicy::default(),
        );
        options.set_instruments(Instruments::Messaging);
        Producer { options }
    }

    fn options_mut(&mut self) -> &mut SpanOptions<Zmq, OutboundPolicy> {
        &mut self.options
    }

    /// Starts the `send` span of one message to `destination` (the name both sides give the
    /// channel: ZeroMQ has none of its own), as a child of the current Context, when the
    /// filter wants one. The outbound policy decides by `destination` what of the context the
    /// message may carry.
    pub fn start_send(&self, destination: &str, body_size: Option<usize>) -> Sending<'_> {
        let info = MessageInfo {
            destination,
            body_size,
            operation: OperationType::Send,
        };
        let decision = self.options.filter_decision(&info);
        let parent = Context::current();
        let span = decision.span.then(|| {
            let mut operation = Operation::new(SYSTEM, "send", OperationType::Send)
                .with_destination(destination, false);
            operation.body_size = body_size;
            self.options
                .start_operation(&info, &operation, &parent, Vec::new())
        });
        let (trace_context, baggage) = if decision.inject {
            let outbound = self.options.policy().decide(destination);
            (outbound.trace_context, outbound.baggage)
        } else {
            (false, false)
        };
        if let Some(span) = &span {
            self.options.record_baggage_sent(span, baggage);
        }
        Sending {
            producer: self,
            cx: match &span {
                Some(span) => span.context().clone(),
                None => parent,
            },
            span,
            trace_context,
            baggage,
        }
    }

    /// [`Producer::start_send`], then the context frame appended to `frames` (as their last
    /// frame); the body size is the frames' total length.
    pub fn send_frames(&self, destination: &str, frames: &mut Vec<Vec<u8>>) -> Sending<'_> {
        let size = frames.iter().map(Vec::len).sum();
        let sending = self.start_send(destination, Some(size));
        frames.push(sending.context_frame());
        sending
    }
}

/// One message on its way: the `send` span (when the filter wanted one) and what the message
/// may carry of its context. Ends the span when dropped; [`Sending::fail`] records a failure.
#[must_use = "the send span ends when the Sending is dropped: keep it until the socket took the message"]
pub struct Sending<'p> {
    producer: &'p Producer,
    span: Option<LiveSpan>,
    cx: Context,
    trace_context: bool,
    baggage: bool,
}

impl std::fmt::Debug for Sending<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sending")
            .field("span", &self.span)
            .field("trace_context", &self.trace_context)
            .field("baggage", &self.baggage)
            .finish()
    }
}

/// lens-core's [`Carrier`] as lens-span's message carrier.
struct Fields<'a>(&'a mut Carrier);

impl Injector for Fields<'_> {
    fn set(&mut self, key: &str, value: String) {
        Injector::set(self.0, key, value);
    }
}

impl MessageCarrier for Fields<'_> {
    fn remove(&mut self, field: &str) {
        self.0.remove(field);
    }
}

impl Sending<'_> {
    /// The Context the message carries: the `send` span's, or the caller's without one.
    pub fn context(&self) -> &Context {
        &self.cx
    }

    /// Writes the message's context into `carrier` (`traceparent`, `tracestate`, `baggage`,
    /// as the outbound policy allows), replacing the trace-context fields it held.
    pub fn inject_into(&self, carrier: &mut Carrier) {
        let decision = lens_core::policy::OutboundDecision {
            trace_context: self.trace_context,
            baggage: self.baggage,
        };
        self.producer.options.propagation().inject_message(
            decision,
            &self.cx,
            &mut Fields(carrier),
        );
    }

    /// The message's context as a carrier field (vLLM's `trace_headers`): the carrier
    /// [`Sending::inject_into`] writes.
    pub fn carrier_field(&self) -> CarrierField {
        let mut carrier = Carrier::with_capacity(3);
        self.inject_into(&mut carrier);
        CarrierField::Carrier(carrier)
    }

    /// The message's context as a context frame ([`crate::frame`]), to send as the message's
    /// last frame.
    pub fn context_frame(&self) -> Vec<u8> {
        // traceparent, tracestate, baggage: room for all three, one allocation.
        let mut carrier = Carrier::with_capacity(3);
        self.inject_into(&mut carrier);
        crate::frame::context_frame(&carrier)
    }

    /// Ends the span: the socket took the message.
    pub fn end(self) {}

    /// Records that sending failed (`error_type` is a low-cardinality name for why, the
    /// description the error's text) and ends the span.
    pub fn fail(mut self, error_type: &'static str, error: &dyn std::fmt::Display) {
        span_end::finish(
            &self.producer.options,
            &mut self.span,
            span_end::failed(error_type, error),
        );
    }
}

impl Drop for Sending<'_> {
    fn drop(&mut self) {
        span_end::finish(&self.producer.options, &mut self.span, OperationStatus::Ok);
    }
}
