//! [`LiveSpan`]: a started span, its outcome, and its end (exactly once).

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use opentelemetry::trace::{SpanRef, Status, TraceContextExt};
use opentelemetry::{Context, ContextGuard, KeyValue};
use opentelemetry_semantic_conventions::attribute::ERROR_TYPE;

use crate::classify::{Failure, Outcome};
use crate::genai::GenAi;
use crate::metrics::{BodyBytes, CallMetrics};

use super::adapter::OnFailureFn;

/// A started span until it ends: ends when [`LiveSpan::end`] or [`LiveSpan::end_with`] is
/// called or when it is dropped (the response was dropped, the call cancelled), whichever comes
/// first, so that every path ends it exactly once. Made only by the lifecycle
/// ([`SpanOptions::start_server`](crate::SpanOptions::start_server), [`SpanOptions::start_client`](crate::SpanOptions::start_client), [`in_span`](crate::in_span)).
///
/// With metrics on ([`SpanOptions::set_meter`](crate::SpanOptions::set_meter)), the call's duration is recorded when the span
/// ends, with the metric attributes the adapter set ([`LiveSpan::set_attribute`], `error.type`).
pub struct LiveSpan {
    pub(super) cx: Context,
    /// The GenAI operation the call is, when the user said so ([`crate::genai`]).
    pub(super) gen_ai: Option<Arc<GenAi>>,
    /// When the span started (the time its record carries).
    pub(super) start: SystemTime,
    pub(super) on_failure: Option<Arc<OnFailureFn>>,
    pub(super) metrics: Option<CallMetrics>,
}

impl fmt::Debug for LiveSpan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LiveSpan")
            .field("span", &self.cx.span().span_context())
            .field("on_failure", &self.on_failure.is_some())
            .field("metrics", &self.metrics.is_some())
            .finish()
    }
}

impl LiveSpan {
    /// The Context holding the span (the parent of the work done for the call).
    pub fn context(&self) -> &Context {
        &self.cx
    }

    /// The span.
    pub fn span(&self) -> SpanRef<'_> {
        self.cx.span()
    }

    /// When the span started: the start time its record carries.
    pub fn start_time(&self) -> SystemTime {
        self.start
    }

    /// The call is the GenAI operation `gen_ai` ([`crate::genai`]): its attributes go on the
    /// span now, its figures when the response is streamed (replacing an operation set before).
    pub fn set_gen_ai(&mut self, gen_ai: Arc<GenAi>) {
        let mut attributes = Vec::with_capacity(3);
        gen_ai.push_attributes(&mut attributes);
        self.cx.span().set_attributes(attributes);
        self.gen_ai = Some(gen_ai);
    }

    /// The first chunk passed `seconds` after the span started ([`crate::stream`]).
    pub(crate) fn first_chunk(&mut self, seconds: f64) {
        let Some(gen_ai) = &self.gen_ai else {
            return;
        };
        self.cx.span().set_attribute(KeyValue::new(
            crate::genai::RESPONSE_TIME_TO_FIRST_CHUNK,
            seconds,
        ));
        if let Some(metrics) = &self.metrics {
            metrics.record_time_to_first_chunk(gen_ai, seconds);
        }
    }

    /// A streamed response of `chunks` chunks, the first at `first`, ended complete now.
    pub(crate) fn stream_completed(&mut self, first: SystemTime, chunks: u64) {
        let (Some(gen_ai), Some(metrics)) = (&self.gen_ai, &self.metrics) else {
            return;
        };
        if chunks < 2 {
            return;
        }
        let elapsed = opentelemetry::time::now()
            .duration_since(first)
            .unwrap_or_default()
            .as_secs_f64();
        metrics.record_time_per_chunk(gen_ai, elapsed / (chunks - 1) as f64);
    }

    pub(super) fn attach(&self) -> ContextGuard {
        self.cx.clone().attach()
    }

    /// Runs `f` with the span's Context current (a service's `call`, which may do work of its
    /// own before it returns its future).
    #[inline]
    pub fn in_scope<R>(&self, f: impl FnOnce() -> R) -> R {
        let _guard = self.attach();
        f()
    }

    /// Sets `attribute` on the span, and on the call's metrics when it is one of theirs (a
    /// response status code).
    pub fn set_attribute(&mut self, attribute: KeyValue) {
        if let Some(metrics) = &mut self.metrics {
            metrics.set(&attribute);
        }
        self.cx.span().set_attribute(attribute);
    }

    /// `n` more bytes of the response body went out (counted for the body-size metric, when it
    /// is on).
    #[inline]
    pub fn add_body_bytes(&mut self, n: usize) {
        if let Some(metrics) = &mut self.metrics {
            metrics.add_body_bytes(n);
        }
    }

    /// The request body has `n` bytes, known before it is sent (a client's buffered body):
    /// recorded as the request body size when the span ends, with body sizes on.
    #[inline]
    pub fn set_request_body_size(&mut self, n: u64) {
        if let Some(metrics) = &mut self.metrics {
            metrics.set_request_body_size(n);
        }
    }

    /// With body sizes on, a counter of the request body's bytes as they are read (wrap the
    /// body in a [`CountedBody`](crate::CountedBody) with it): the bytes read when the span
    /// ends are recorded as the request body size (a body the handler read in part, or not at
    /// all, records what was read). `None` with body sizes off: leave the body as it is.
    pub fn count_request_body(&mut self) -> Option<BodyBytes> {
        self.metrics.as_mut()?.count_request_body()
    }

    /// With body sizes on, a counter for a response body that outlives the span (an adapter
    /// that ends its span before the body, unlike [`TracedBody`](crate::TracedBody)): the size is recorded, with the span's metric
    /// attributes as they are now, when the body ends or the counter is dropped. Call it once
    /// the status code and the outcome are recorded. `None` with body sizes off.
    pub fn count_response_body(&mut self) -> Option<BodyBytes> {
        self.metrics.as_mut()?.count_response_body()
    }

    /// Messaging: the operation sent or delivered `n` messages, counted by
    /// `messaging.client.sent.messages` / `messaging.client.consumed.messages` when the span
    /// ends (1 unless set).
    #[inline]
    pub fn set_messages(&mut self, n: u64) {
        if let Some(metrics) = &mut self.metrics {
            metrics.set_messages(n);
        }
    }

    /// Records `outcome`: on a failure, `error.type` (on the span and the call's metrics) and
    /// status Error, then the failure hook.
    pub fn record(&mut self, outcome: Outcome) {
        if let Outcome::Failure {
            error_type,
            description,
        } = outcome
        {
            let error_type = KeyValue::new(ERROR_TYPE, error_type);
            if let Some(metrics) = &mut self.metrics {
                metrics.set(&error_type);
            }
            let span = self.cx.span();
            let error_type = error_type.value;
            span.set_attribute(KeyValue::new(ERROR_TYPE, error_type.clone()));
            if let Some(hook) = &self.on_failure {
                hook(
                    &Failure {
                        error_type: &error_type,
                        description: &description,
                    },
                    &span,
                );
            }
            span.set_status(Status::Error { description });
        }
    }

    /// Records `outcome` and ends the span.
    pub fn end_with(mut self, outcome: Outcome) {
        self.record(outcome);
    }

    /// Ends the span.
    pub fn end(self) {}
}

impl Drop for LiveSpan {
    fn drop(&mut self) {
        // The metrics first: whoever sees the span ended sees its duration recorded.
        if let Some(metrics) = self.metrics.take() {
            metrics.end();
        }
        self.cx.span().end();
    }
}
