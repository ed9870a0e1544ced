//! The process-wide propagator and the free functions that use it (NeMo Lens's
//! `inject_context`, `extract_context`).

use std::sync::OnceLock;

use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};

use super::w3c::{PropagatorConfigError, W3cPropagator};

static DEFAULT: OnceLock<W3cPropagator> = OnceLock::new();

/// The propagator lens uses when none is given: the one [`install`] set, else W3C trace context +
/// baggage as `OTEL_PROPAGATORS` selects (an unknown name there falls back to both; [`install`]
/// reports it), even if the application installed no propagator (NeMo Lens's default).
pub fn propagator() -> &'static W3cPropagator {
    DEFAULT.get_or_init(|| W3cPropagator::from_env().unwrap_or_default())
}

/// Reads `OTEL_PROPAGATORS`, makes the result lens's process-wide propagator and opentelemetry's
/// global text-map propagator.
///
/// ```
/// let propagator = lens_core::install().expect("valid OTEL_PROPAGATORS");
/// assert!(propagator.propagates_trace_context());
/// ```
pub fn install() -> Result<&'static W3cPropagator, PropagatorConfigError> {
    install_propagator(W3cPropagator::from_env()?)
}

/// Makes `propagator` lens's process-wide propagator and opentelemetry's global one.
pub fn install_propagator(
    propagator: W3cPropagator,
) -> Result<&'static W3cPropagator, PropagatorConfigError> {
    let installed = DEFAULT.get_or_init(|| propagator.clone());
    if *installed != propagator {
        return Err(PropagatorConfigError::AlreadyInitialized);
    }
    opentelemetry::global::set_text_map_propagator(installed.clone());
    Ok(installed)
}

/// Injects the current Context (NeMo Lens `inject_context`).
pub fn inject_context(injector: &mut dyn Injector) {
    Context::map_current(|cx| propagator().inject_context(cx, injector));
}

/// Injects the given Context.
pub fn inject_context_from(cx: &Context, injector: &mut dyn Injector) {
    propagator().inject_context(cx, injector);
}

/// Extracts a Context from a carrier, always starting from an empty Context (NeMo Lens
/// `extract_context`, docs/propagation-rules.md#extract-and-inject): without a valid traceparent the result has no remote span.
pub fn extract_context(extractor: &dyn Extractor) -> Context {
    propagator().extract_with_context(&Context::new(), extractor)
}

/// Extracts into the given Context.
pub fn extract_context_with(cx: &Context, extractor: &dyn Extractor) -> Context {
    propagator().extract_with_context(cx, extractor)
}

/// The Context in the bytes of a JSON carrier (NCCL bytes, a Ray-style call's carrier), with the
/// process-wide propagator (docs/propagation-rules.md#carriers, docs/propagation-rules.md#extract-and-inject): bytes holding a carrier are extracted from an empty
/// Context (`{}` gives an empty Context); bytes that are not a valid JSON carrier give the
/// caller's current Context, as NeMo Lens does. The bytes are read in place (see
/// [`W3cPropagator::extract_json`]).
///
/// ```
/// use lens_core::extract_json_context;
/// use opentelemetry::trace::TraceContextExt;
///
/// let json = br#"{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}"#;
/// assert!(extract_json_context(json).span().span_context().is_remote());
/// // Not a JSON object: the caller's Context.
/// assert!(!extract_json_context(b"[1]").span().span_context().is_valid());
/// ```
pub fn extract_json_context(json: &[u8]) -> Context {
    callers_context_unless(propagator().extract_json(&Context::new(), json).ok())
}

/// The Context of a JSON carrier already decoded (docs/propagation-rules.md#extract-and-inject): `Some` is extracted from an empty
/// Context; `None` (no carrier was sent, or its bytes were rejected) gives the caller's current
/// Context, as NeMo Lens does.
///
/// ```
/// use lens_core::{Carrier, extract_carrier_context};
/// use opentelemetry::trace::TraceContextExt;
///
/// let mut carrier = Carrier::new();
/// carrier.insert("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
/// assert!(extract_carrier_context(Some(&carrier)).span().span_context().is_remote());
/// assert!(!extract_carrier_context(None).span().span_context().is_valid());
/// ```
pub fn extract_carrier_context(carrier: Option<&crate::carrier::Carrier>) -> Context {
    callers_context_unless(carrier.map(|carrier| extract_context(carrier)))
}

/// docs/propagation-rules.md#extract-and-inject, written once: no carrier, or one that is rejected, means the caller's Context.
fn callers_context_unless(extracted: Option<Context>) -> Context {
    extracted.unwrap_or_else(Context::current)
}
