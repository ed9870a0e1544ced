//! Contexts as JSON both languages read and write: a [`Spec`] to build, a [`Seen`] observed.
//!
//! The Python side is `tests/interop/python/common.py` (`build_context`, `describe`).

use lens_core::LensContextExt;
use opentelemetry::Context;
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A context to build on both sides: a span context (ids, flags, tracestate) and baggage.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct Spec {
    pub(crate) span: Option<SpanSpec>,
    pub(crate) baggage: Vec<(String, String)>,
}

/// The span context of a [`Spec`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct SpanSpec {
    pub(crate) trace_id: String,
    pub(crate) span_id: String,
    pub(crate) trace_flags: u8,
    pub(crate) tracestate: Vec<(String, String)>,
}

/// What one side saw of a Context: its valid span context, if any, and its baggage in order
/// (lens-testkit's description, which the Python side writes in the same JSON).
pub(crate) use lens_testkit::ContextDescription as Seen;
/// The span context part of [`Seen`].
pub(crate) use lens_testkit::SpanDescription as SeenSpan;
/// What a Rust Context holds, as [`Seen`]. The tracestate is the one lens sends on (its own copy
/// where opentelemetry's `TraceState` cannot hold it, docs/propagation-rules.md#opentelemetry-types).
pub(crate) use lens_testkit::describe as seen;

impl Spec {
    pub(crate) fn span(trace_id: &str, span_id: &str, flags: u8) -> Self {
        Spec {
            span: Some(SpanSpec {
                trace_id: trace_id.to_owned(),
                span_id: span_id.to_owned(),
                trace_flags: flags,
                tracestate: Vec::new(),
            }),
            baggage: Vec::new(),
        }
    }

    pub(crate) fn tracestate(mut self, entries: &[(&str, &str)]) -> Self {
        if let Some(span) = &mut self.span {
            span.tracestate = pairs(entries);
        }
        self
    }

    pub(crate) fn baggage(mut self, entries: &[(&str, &str)]) -> Self {
        self.baggage = pairs(entries);
        self
    }

    /// The tracestate header the spec's entries make (`""` without a span).
    pub(crate) fn tracestate_header(&self) -> String {
        self.span.as_ref().map_or_else(String::new, |s| {
            s.tracestate
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        })
    }

    /// The spec as a Rust Context, built through the APIs an application uses:
    /// `SpanContext::new` (with opentelemetry's `TraceState`) and
    /// [`LensContextExt::with_baggage_entry`].
    pub(crate) fn build(&self) -> Result<Context> {
        let mut cx = Context::new();
        if let Some(span) = &self.span {
            let bad = |m: String| Error::Context {
                what: format!("{span:?}"),
                message: m,
            };
            let state = TraceState::from_key_value(
                span.tracestate
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str())),
            )
            .map_err(|e| bad(e.to_string()))?;
            let sc = SpanContext::new(
                TraceId::from_hex(&span.trace_id).map_err(|e| bad(e.to_string()))?,
                SpanId::from_hex(&span.span_id).map_err(|e| bad(e.to_string()))?,
                TraceFlags::new(span.trace_flags),
                false,
                state,
            );
            cx = cx.with_remote_span_context(sc);
        }
        for (k, v) in &self.baggage {
            cx = cx.with_baggage_entry(k, v).map_err(|e| Error::Context {
                what: format!("baggage {k}={v:?}"),
                message: e.to_string(),
            })?;
        }
        Ok(cx)
    }
}

pub(crate) fn pairs(entries: &[(&str, &str)]) -> Vec<(String, String)> {
    entries
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}
