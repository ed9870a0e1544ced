//! A span whose visible span context carries the W3C random flag the SDK leaves out.

use std::borrow::Cow;
use std::time::SystemTime;

use lens_core::traceparent::FLAG_RANDOM;
use opentelemetry::KeyValue;
use opentelemetry::global::BoxedSpan;
use opentelemetry::trace::{Span, SpanContext, Status, TraceFlags};

/// opentelemetry_sdk 0.33 builds a root span's flags from nothing and a dropped span's flags as
/// `00`, so the random flag (Trace Context Level 2) of the trace would be lost on the way out.
/// This wrapper shows the same span with the flag set; everything else goes to the real span.
#[derive(Debug)]
pub(crate) struct RandomFlagSpan {
    inner: BoxedSpan,
    span_context: SpanContext,
}

impl RandomFlagSpan {
    /// Wraps `inner` when its span context is valid and lacks the random flag.
    pub(crate) fn wrap(inner: BoxedSpan) -> Result<Self, BoxedSpan> {
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

impl Span for RandomFlagSpan {
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
