//! Keeping the W3C random flag (Trace Context Level 2) on spans the SDK builds without it.
//!
//! opentelemetry_sdk 0.33 gives a root span flags built from nothing and a dropped
//! (non-sampled) span flags `00`, so a trace's random flag would be lost on the way out
//! (docs/propagation-rules.md#traceparent: an incoming random flag must come out again on every outgoing header of the same
//! trace). [`context_with_span`] puts a span in a Context so that its visible span context carries
//! the flag whenever the trace has it.
//!
//! ```
//! use lens_core::random_flag::context_with_span;
//! use lens_core::{Carrier, extract_context, inject_context_from};
//! use opentelemetry::trace::{Tracer, TracerProvider};
//! use opentelemetry_sdk::trace::SdkTracerProvider;
//!
//! let tracer = SdkTracerProvider::builder().build().tracer("doc");
//! let mut incoming = Carrier::new();
//! incoming.insert("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-02");
//! let parent = extract_context(&incoming);
//!
//! let span = tracer.start_with_context("work", &parent);
//! let cx = context_with_span(&parent, span, true);
//! let mut out = Carrier::new();
//! inject_context_from(&cx, &mut out);
//! assert!(out.get("traceparent").unwrap().ends_with("-02") || out.get("traceparent").unwrap().ends_with("-03"));
//! ```

use std::borrow::Cow;
use std::time::SystemTime;

use opentelemetry::trace::{Span, SpanContext, Status, TraceContextExt, TraceFlags};
use opentelemetry::{Context, KeyValue};

use crate::traceparent::FLAG_RANDOM;

/// A span shown with the random flag set; everything else goes to the real span.
#[derive(Debug)]
pub struct RandomFlagSpan<S> {
    inner: S,
    span_context: SpanContext,
}

impl<S: Span> RandomFlagSpan<S> {
    /// Wraps `inner` when its span context is valid and lacks the random flag; otherwise gives
    /// it back unchanged.
    pub fn wrap(inner: S) -> Result<Self, S> {
        let sc = inner.span_context();
        if !sc.is_valid() || sc.trace_flags().to_u8() & FLAG_RANDOM != 0 {
            return Err(inner);
        }
        let span_context = SpanContext::new(
            sc.trace_id(),
            sc.span_id(),
            TraceFlags::new(sc.trace_flags().to_u8() | FLAG_RANDOM),
            sc.is_remote(),
            sc.trace_state().clone(),
        );
        Ok(RandomFlagSpan {
            inner,
            span_context,
        })
    }
}

/// Whether a span started under `parent` belongs to a trace with the random flag: the parent's
/// flag when it has a valid span, else `new_traces_random` (opentelemetry_sdk's default id
/// generator draws trace ids at random, so lens marks new traces random unless told otherwise).
pub fn trace_is_random(parent: &Context, new_traces_random: bool) -> bool {
    let span = parent.span();
    let sc = span.span_context();
    if sc.is_valid() {
        sc.trace_flags().to_u8() & FLAG_RANDOM != 0
    } else {
        new_traces_random
    }
}

/// `parent` with `span` as its current span, the span showing the random flag when its trace
/// has it (see [`trace_is_random`]).
pub fn context_with_span<S>(parent: &Context, span: S, new_traces_random: bool) -> Context
where
    S: Span + Send + Sync + 'static,
{
    context_with_span_in(parent, parent, span, new_traces_random)
}

/// `base` with `span` (started under `parent`) as its current span, the span showing the random
/// flag when the trace of `parent` has it: for a span parented on one Context but made current
/// in another (a Ray-style remote call keeps the caller's Context, with the carrier's span as
/// parent).
pub fn context_with_span_in<S>(
    base: &Context,
    parent: &Context,
    span: S,
    new_traces_random: bool,
) -> Context
where
    S: Span + Send + Sync + 'static,
{
    if trace_is_random(parent, new_traces_random) {
        match RandomFlagSpan::wrap(span) {
            Ok(wrapped) => base.with_span(wrapped),
            Err(span) => base.with_span(span),
        }
    } else {
        base.with_span(span)
    }
}

impl<S: Span> Span for RandomFlagSpan<S> {
    fn add_event_with_timestamp<T>(
        &mut self,
        name: T,
        timestamp: SystemTime,
        attributes: Vec<KeyValue>,
    ) where
        T: Into<Cow<'static, str>>,
    {
        self.inner
            .add_event_with_timestamp(name, timestamp, attributes);
    }

    fn span_context(&self) -> &SpanContext {
        &self.span_context
    }

    fn is_recording(&self) -> bool {
        self.inner.is_recording()
    }

    fn set_attribute(&mut self, attribute: KeyValue) {
        self.inner.set_attribute(attribute);
    }

    fn set_status(&mut self, status: Status) {
        self.inner.set_status(status);
    }

    fn update_name<T>(&mut self, new_name: T)
    where
        T: Into<Cow<'static, str>>,
    {
        self.inner.update_name(new_name);
    }

    fn add_link(&mut self, span_context: SpanContext, attributes: Vec<KeyValue>) {
        self.inner.add_link(span_context, attributes);
    }

    fn end_with_timestamp(&mut self, timestamp: SystemTime) {
        self.inner.end_with_timestamp(timestamp);
    }
}

/// Starts a span and returns `parent` with it as the current span (through
/// [`context_with_span`]), for a tracer of any type: what the HTTP and gRPC layers keep as
/// `Arc<dyn SpanStarter>`.
///
/// A `BoxedTracer`'s span is a `BoxedSpan`, which the Context boxes a second time; through this
/// trait the Context boxes the tracer's own span type once (one allocation and one dynamic call
/// per span operation fewer).
///
/// ```
/// use std::sync::Arc;
/// use lens_core::random_flag::SpanStarter;
/// use opentelemetry::Context;
/// use opentelemetry::trace::{SpanBuilder, TraceContextExt, TracerProvider};
/// use opentelemetry_sdk::trace::SdkTracerProvider;
///
/// let provider = SdkTracerProvider::builder().build();
/// let starter: Arc<dyn SpanStarter> = Arc::new(provider.tracer("doc"));
/// let cx = starter.start(SpanBuilder::from_name("work"), &Context::new(), true);
/// assert!(cx.span().span_context().is_valid());
/// ```
pub trait SpanStarter: Send + Sync {
    /// `parent` with the span of `builder` started under it; the span shows the W3C random flag
    /// when its trace has it, or when it starts a new trace and `new_traces_random` is set.
    fn start(
        &self,
        builder: opentelemetry::trace::SpanBuilder,
        parent: &Context,
        new_traces_random: bool,
    ) -> Context {
        self.start_in(builder, parent, parent, new_traces_random)
    }

    /// `base` with the span of `builder` started under `parent` (see [`context_with_span_in`]).
    fn start_in(
        &self,
        builder: opentelemetry::trace::SpanBuilder,
        parent: &Context,
        base: &Context,
        new_traces_random: bool,
    ) -> Context;
}

impl<T> SpanStarter for T
where
    T: opentelemetry::trace::Tracer + Send + Sync,
    T::Span: Send + Sync + 'static,
{
    fn start_in(
        &self,
        builder: opentelemetry::trace::SpanBuilder,
        parent: &Context,
        base: &Context,
        new_traces_random: bool,
    ) -> Context {
        let span = builder.start_with_context(self, parent);
        context_with_span_in(base, parent, span, new_traces_random)
    }
}
