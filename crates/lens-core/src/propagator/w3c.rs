//! [`W3cPropagator`] itself: its header names, its configuration, and its `TextMapPropagator`
//! implementation.

use opentelemetry::Context;
use opentelemetry::propagation::text_map_propagator::FieldIter;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};

use crate::context::{extract_baggage, extracted_context};
use crate::limits::Limits;

/// Header name of the trace parent.
pub const TRACEPARENT_HEADER: &str = "traceparent";
/// Header name of the trace state.
pub const TRACESTATE_HEADER: &str = "tracestate";
/// Header name of the baggage.
pub const BAGGAGE_HEADER: &str = "baggage";

/// W3C Trace Context (`traceparent`, `tracestate`) and W3C Baggage (`baggage`) in one
/// [`TextMapPropagator`], with lens's own codec (docs/propagation-rules.md#traceparent, docs/propagation-rules.md#tracestate, docs/propagation-rules.md#baggage, docs/propagation-rules.md#limits).
///
/// ```
/// use std::collections::HashMap;
/// use lens_core::{MapCarrier, W3cPropagator};
/// use opentelemetry::propagation::TextMapPropagator;
/// use opentelemetry::trace::TraceContextExt;
///
/// let mut headers = HashMap::new();
/// headers.insert("traceparent".to_string(),
///     "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".to_string());
/// headers.insert("baggage".to_string(), "user=alice".to_string());
///
/// let propagator = W3cPropagator::new();
/// let cx = propagator.extract(&MapCarrier(&headers));
/// assert_eq!(cx.span().span_context().trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
///
/// let mut out = HashMap::new();
/// propagator.inject_context(&cx, &mut MapCarrier(&mut out));
/// assert_eq!(out["traceparent"], headers["traceparent"]);
/// assert_eq!(out["baggage"], "user=alice");
/// ```
#[derive(Clone, Debug)]
pub struct W3cPropagator {
    pub(super) trace_context: bool,
    pub(super) baggage: bool,
    pub(super) plus_as_space: bool,
    pub(super) limits: Limits,
    pub(super) fields: Vec<String>,
}

impl Default for W3cPropagator {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for W3cPropagator {
    fn eq(&self, other: &Self) -> bool {
        self.trace_context == other.trace_context
            && self.baggage == other.baggage
            && self.plus_as_space == other.plus_as_space
            && self.limits == other.limits
    }
}

impl W3cPropagator {
    /// Trace context and baggage, default limits, `plus_as_space` off.
    pub fn new() -> Self {
        Self::with_parts(true, true)
    }

    fn with_parts(trace_context: bool, baggage: bool) -> Self {
        let mut p = W3cPropagator {
            trace_context,
            baggage,
            plus_as_space: false,
            limits: Limits::DEFAULT,
            fields: Vec::new(),
        };
        p.refresh_fields();
        p
    }

    fn refresh_fields(&mut self) {
        self.fields.clear();
        if self.trace_context {
            self.fields.push(TRACEPARENT_HEADER.to_owned());
            self.fields.push(TRACESTATE_HEADER.to_owned());
        }
        if self.baggage {
            self.fields.push(BAGGAGE_HEADER.to_owned());
        }
    }

    /// Only trace context (`traceparent`, `tracestate`).
    pub fn trace_context_only() -> Self {
        Self::with_parts(true, false)
    }

    /// Only baggage.
    pub fn baggage_only() -> Self {
        Self::with_parts(false, true)
    }

    /// Propagates nothing (`OTEL_PROPAGATORS=none`).
    pub fn none() -> Self {
        Self::with_parts(false, false)
    }

    /// Reads `OTEL_PROPAGATORS`: `tracecontext`, `baggage` and `none`, comma-separated.
    /// Unset or empty gives [`W3cPropagator::new`].
    pub fn from_env() -> Result<Self, PropagatorConfigError> {
        match std::env::var("OTEL_PROPAGATORS") {
            Ok(v) => Self::from_names(&v),
            Err(_) => Ok(Self::new()),
        }
    }

    /// Parses a comma-separated list of propagator names as `OTEL_PROPAGATORS` does.
    pub fn from_names(names: &str) -> Result<Self, PropagatorConfigError> {
        let (mut tc, mut bg, mut any) = (false, false, false);
        for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            any = true;
            match name.to_ascii_lowercase().as_str() {
                "tracecontext" => tc = true,
                "baggage" => bg = true,
                "none" => {}
                _ => return Err(PropagatorConfigError::UnknownPropagator(name.to_owned())),
            }
        }
        Ok(if any {
            Self::with_parts(tc, bg)
        } else {
            Self::new()
        })
    }

    /// Sets the limits (docs/propagation-rules.md#limits).
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Decodes `+` in incoming baggage values as a space, for Python OpenTelemetry senders
    /// (docs/propagation-rules.md#baggage). Off by default.
    pub fn with_plus_as_space(mut self, on: bool) -> Self {
        self.plus_as_space = on;
        self
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Whether trace context is propagated.
    pub fn propagates_trace_context(&self) -> bool {
        self.trace_context
    }

    /// Whether baggage is propagated.
    pub fn propagates_baggage(&self) -> bool {
        self.baggage
    }
}

impl TextMapPropagator for W3cPropagator {
    fn inject_context(&self, cx: &Context, injector: &mut dyn Injector) {
        self.inject_parts(cx, injector, true, true);
    }

    fn extract_with_context(&self, cx: &Context, extractor: &dyn Extractor) -> Context {
        let trace = if self.trace_context {
            self.traceparent_from(extractor).map(|tp| {
                let tracestate = extractor.get_all(TRACESTATE_HEADER);
                self.remote_span(&tp, tracestate.as_deref())
            })
        } else {
            None
        };
        let baggage = if self.baggage {
            extractor
                .get_all(BAGGAGE_HEADER)
                .and_then(|lines| extract_baggage(&lines, &self.limits, self.plus_as_space))
        } else {
            None
        };
        extracted_context(cx, trace, baggage)
    }

    fn fields(&self) -> FieldIter<'_> {
        FieldIter::new(&self.fields)
    }
}

/// A bad propagator configuration.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PropagatorConfigError {
    /// `OTEL_PROPAGATORS` names a propagator lens does not provide.
    #[error(
        "unknown propagator {0:?} in OTEL_PROPAGATORS: lens provides tracecontext, baggage and none"
    )]
    UnknownPropagator(String),
    /// [`install`](crate::install) was called after the process-wide propagator was fixed to another configuration.
    #[error(
        "the lens propagator is already in use with another configuration; call install() before the first inject or extract"
    )]
    AlreadyInitialized,
}
