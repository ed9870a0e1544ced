//! The span contexts and baggage the tests and benches build again and again.

use lens_core::LensContextExt;
use opentelemetry::Context;
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};

/// The trace id of the W3C Trace Context example (`4bf92f35...`).
pub const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
/// The parent id of the W3C Trace Context example.
pub const SPAN_ID: &str = "00f067aa0ba902b7";
/// `traceparent` of [`TRACE_ID`], [`SPAN_ID`], sampled.
pub const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// The trace id of [`caller_context`].
pub const CALLER_TRACE_ID: &str = "0af7651916cd43dd8448eb211c80319c";
/// The span id of [`caller_context`].
pub const CALLER_SPAN_ID: &str = "b7ad6b7169203331";

/// A sampled span context; panics on ids that are not hex or entries that are not a tracestate.
pub fn span_context(
    trace_id: &str,
    span_id: &str,
    remote: bool,
    tracestate: &[(&str, &str)],
) -> SpanContext {
    SpanContext::new(
        TraceId::from_hex(trace_id).unwrap(),
        SpanId::from_hex(span_id).unwrap(),
        TraceFlags::SAMPLED,
        remote,
        TraceState::from_key_value(tracestate.iter().copied()).unwrap(),
    )
}

/// `sc` as the span of a new Context, with `baggage` set in order (panics on a refused key).
pub fn context(sc: SpanContext, baggage: &[(&str, &str)]) -> Context {
    let mut cx = Context::new().with_remote_span_context(sc);
    for (key, value) in baggage {
        cx = cx.with_baggage_entry(key, value).unwrap();
    }
    cx
}

/// The W3C example span context ([`TRACE_ID`], [`SPAN_ID`], sampled), `remote` or local, with
/// `tracestate` and `baggage`.
pub fn w3c_context(remote: bool, tracestate: &[(&str, &str)], baggage: &[(&str, &str)]) -> Context {
    context(span_context(TRACE_ID, SPAN_ID, remote, tracestate), baggage)
}

/// A caller's Context that no extraction gives by accident: a local sampled span
/// ([`CALLER_TRACE_ID`], [`CALLER_SPAN_ID`]) and the baggage entry `caller=yes` (what the
/// vectors' `current_context` cases use).
pub fn caller_context() -> Context {
    context(
        span_context(CALLER_TRACE_ID, CALLER_SPAN_ID, false, &[]),
        &[("caller", "yes")],
    )
}
