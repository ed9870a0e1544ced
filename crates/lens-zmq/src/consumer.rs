//! The receiving side: a CONSUMER `process` span per message, from its context frame or its
//! carrier field.

use lens_core::Limits;
use lens_core::carrier::{Carrier, CarrierField};
use lens_span::messaging::{
    ConsumerParent, DestinationPolicy, Operation, OperationStatus, OperationType,
};
use lens_span::metrics::Instruments;
use lens_span::{LiveSpan, SpanOptions};
use opentelemetry::{Context, ContextGuard};

use crate::adapter::{MessageInfo, Zmq};
use crate::attributes::SYSTEM;
use crate::span_end;

/// The knobs of the receiving side. [`Consumer::process_frames`] and [`Consumer::process_field`]
/// start one message's `process` span from what it carried; the message itself is never
/// changed beyond taking its context frame off, and never lost, whatever the context held.
///
/// ```
/// use lens_zmq::{Consumer, Producer};
///
/// let (producer, consumer) = (Producer::new(), Consumer::new());
/// let mut frames = vec![b"payload".to_vec()];
/// producer.send_frames("engine.requests", &mut frames).end();
///
/// // The receiving end: the context frame taken off, the rest as sent.
/// let processing = consumer.process_frames("engine.requests", &mut frames);
/// assert_eq!(frames, [b"payload".to_vec()]);
/// processing.in_scope(|| { /* work in the `process engine.requests` span */ });
/// ```
pub struct Consumer {
    options: SpanOptions<Zmq, DestinationPolicy>,
    parent: ConsumerParent,
    limits: Limits,
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("options", &self.options)
            .field("parent", &self.parent)
            .field("limits", &self.limits)
            .finish()
    }
}

lens_span::span_knobs!(Consumer, request: MessageInfo<'_>, response: OperationStatus,
    status: OperationStatus, policy: with_inbound_policy(DestinationPolicy));

impl Consumer {
    /// Spans from the global tracer provider (scope `lens-zmq`), lens's propagator, every
    /// message's context trusted, `process` spans children of their message's context.
    pub fn new() -> Self {
        let mut options = SpanOptions::global(
            "lens-zmq",
            env!("CARGO_PKG_VERSION"),
            DestinationPolicy::default(),
        );
        options.set_instruments(Instruments::Messaging);
        Consumer {
            options,
            parent: ConsumerParent::Message,
            limits: Limits::DEFAULT,
        }
    }

    fn options_mut(&mut self) -> &mut SpanOptions<Zmq, DestinationPolicy> {
        &mut self.options
    }

    /// Whether a `process` span is the child of its message's context
    /// ([`ConsumerParent::Message`], the default) or starts a new trace that links to it
    /// ([`ConsumerParent::Links`]); docs/messaging.md says when to choose which.
    pub fn with_consumer_parent(mut self, parent: ConsumerParent) -> Self {
        self.parent = parent;
        self
    }

    /// Decodes context frames within `limits` (default: [`Limits::DEFAULT`]). A carrier field
    /// is decoded by serde, within the default limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Takes the context frame off the end of `frames` when there is one
    /// ([`crate::frame::take_context_frame`]) and starts the message's `process` span from it;
    /// the body size is the remaining frames' total length.
    pub fn process_frames<F: AsRef<[u8]>>(
        &self,
        destination: &str,
        frames: &mut Vec<F>,
    ) -> Processing<'_> {
        let field = crate::frame::take_context_frame(frames, &self.limits);
        let size = frames.iter().map(|f| f.as_ref().len()).sum();
        self.process_field(destination, &field, Some(size))
    }

    /// Starts the `process` span of one message from `destination` whose context came in
    /// `field` (a carrier field such as vLLM's `trace_headers`, or what
    /// [`crate::frame::read_context_frame`] read), under the policy for `destination` and the
    /// consumer's [`ConsumerParent`]. A rejected field starts a new trace whose
    /// `lens.trace.new_root` is `rejected:json-carrier` (not a map / object) or
    /// `rejected:json-carrier-rejected` (not UTF-8, not JSON, over the limits); no field at
    /// all, `none`.
    pub fn process_field(
        &self,
        destination: &str,
        field: &CarrierField,
        body_size: Option<usize>,
    ) -> Processing<'_> {
        let info = MessageInfo {
            destination,
            body_size,
            operation: OperationType::Process,
        };
        let decision = self.options.filter_decision(&info);
        if !decision.span {
            return Processing {
                consumer: self,
                span: None,
            };
        }
        let mut operation = Operation::new(SYSTEM, "process", OperationType::Process)
            .with_destination(destination, false);
        operation.body_size = body_size;
        let current = Context::current();
        let span = match field {
            CarrierField::Carrier(carrier) => {
                self.options
                    .start_process(&info, &operation, carrier, self.parent, &current)
            }
            CarrierField::Rejected(error) => self.options.start_process_rejected(
                &info,
                &operation,
                crate::frame::rejection_anchor(error),
                &current,
            ),
            // No context: read from an empty carrier (no allocation), `none` recorded.
            _ => self.options.start_process(
                &info,
                &operation,
                &Carrier::new(),
                self.parent,
                &current,
            ),
        };
        Processing {
            consumer: self,
            span: Some(span),
        }
    }
}

/// One message being processed: its CONSUMER `process` span (when the filter wanted one),
/// ended when dropped; [`Processing::fail`] records a failure.
#[must_use = "the process span ends when the Processing is dropped: keep it while the message is handled"]
pub struct Processing<'c> {
    consumer: &'c Consumer,
    span: Option<LiveSpan>,
}

impl std::fmt::Debug for Processing<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Processing")
            .field("span", &self.span)
            .finish()
    }
}

impl Processing<'_> {
    /// The Context of the `process` span (the parent of the work done for the message, and of
    /// a reply's `send` span); the current Context without one.
    pub fn context(&self) -> Context {
        match &self.span {
            Some(span) => span.context().clone(),
            None => Context::current(),
        }
    }

    /// Makes the `process` span's Context current until the guard is dropped.
    pub fn attach(&self) -> Option<ContextGuard> {
        self.span
            .as_ref()
            .map(|span| span.context().clone().attach())
    }

    /// Runs `f` with the `process` span's Context current.
    pub fn in_scope<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.span {
            Some(span) => span.in_scope(f),
            None => f(),
        }
    }

    /// Ends the span: the message was handled.
    pub fn end(self) {}

    /// Records that handling the message failed and ends the span.
    pub fn fail(mut self, error_type: &'static str, error: &dyn std::fmt::Display) {
        span_end::finish(
            &self.consumer.options,
            &mut self.span,
            span_end::failed(error_type, error),
        );
    }
}

impl Drop for Processing<'_> {
    fn drop(&mut self) {
        span_end::finish(&self.consumer.options, &mut self.span, OperationStatus::Ok);
    }
}
