//! Fixture P, plain OpenTelemetry: the context a trainer or client that starts its own trace
//! builds with opentelemetry's API alone (no lens): a sampled SDK span, child of a remote parent
//! whose `TraceState` has 2 members, and 3 baggage entries set through opentelemetry, one value
//! with a space.

use opentelemetry::baggage::BaggageExt;
use opentelemetry::trace::{
    SpanContext, TraceContextExt, TraceFlags, TraceState, Tracer, TracerProvider,
};
use opentelemetry::{Context, KeyValue, SpanId, TraceId};
use opentelemetry_sdk::trace::SdkTracerProvider;

pub(crate) const P_TRACESTATE: [(&str, &str); 2] =
    [("rojo", "00f067aa0ba902b7"), ("congo", "t61rcWkgMzE")];
pub(crate) const P_BAGGAGE: [(&str, &str); 3] = [
    ("user_id", "12345"),
    ("session", "abc def"),
    ("tier", "gold"),
];

/// The tracer provider of fixture P's span (sampled: the default sampler follows the sampled
/// remote parent). Kept alive by the caller for as long as the span is used.
pub(crate) fn p_provider() -> SdkTracerProvider {
    SdkTracerProvider::builder().build()
}

/// Fixture P's Context, its span started from `provider`.
pub(crate) fn p_context(provider: &SdkTracerProvider) -> Context {
    let parent = SpanContext::new(
        TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
        SpanId::from_hex("00f067aa0ba902b7").unwrap(),
        TraceFlags::SAMPLED,
        true,
        TraceState::from_key_value(P_TRACESTATE).unwrap(),
    );
    let parent = Context::new().with_remote_span_context(parent);
    let span = provider
        .tracer("fixture-p")
        .start_with_context("step", &parent);
    let cx = parent.with_span(span);
    assert!(cx.span().span_context().is_sampled());
    cx.with_baggage(P_BAGGAGE.map(|(k, v)| KeyValue::new(k, v)))
}
