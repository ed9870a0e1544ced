//! The one context, carriers, stock propagator and extract floor that `propagation.rs` and
//! `ab_ratios.rs` both measure: a sampled span, a tracestate of 2 members, 3 baggage entries.

use std::collections::HashMap;
use std::hint::black_box;

use http::{HeaderMap, HeaderName, HeaderValue};
use opentelemetry::baggage::{Baggage, BaggageExt};
use opentelemetry::propagation::TextMapCompositePropagator;
use opentelemetry::trace::{SpanContext, TraceContextExt, TraceFlags, TraceState};
use opentelemetry::{Context, SpanId, TraceId};
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};

pub(crate) const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
pub(crate) const TRACESTATE: &str = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE";
pub(crate) const BAGGAGE: &str = "user_id=12345,session=abc-def,tier=gold";

/// Stock opentelemetry_sdk: `TextMapCompositePropagator[TraceContextPropagator, BaggagePropagator]`.
pub(crate) fn stock() -> TextMapCompositePropagator {
    TextMapCompositePropagator::new(vec![
        Box::new(TraceContextPropagator::new()),
        Box::new(BaggagePropagator::new()),
    ])
}

const HEADERS: [(&str, &str); 3] = [
    ("traceparent", TRACEPARENT),
    ("tracestate", TRACESTATE),
    ("baggage", BAGGAGE),
];

/// The three headers in a `HashMap<String, String>`.
pub(crate) fn incoming_map() -> HashMap<String, String> {
    HEADERS
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// The three headers in an `http::HeaderMap`.
pub(crate) fn incoming_headers() -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in HEADERS {
        h.insert(HeaderName::from_static(k), HeaderValue::from_static(v));
    }
    h
}

/// The values of the three headers, already parsed: what the extract floor starts from.
pub(crate) struct Parsed {
    trace_id: TraceId,
    span_id: SpanId,
    tracestate: [(&'static str, &'static str); 2],
    baggage: [(&'static str, &'static str); 3],
}

impl Parsed {
    pub(crate) fn new() -> Self {
        Parsed {
            trace_id: TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
            span_id: SpanId::from_hex("00f067aa0ba902b7").unwrap(),
            tracestate: [("rojo", "00f067aa0ba902b7"), ("congo", "t61rcWkgMzE")],
            baggage: [
                ("user_id", "12345"),
                ("session", "abc-def"),
                ("tier", "gold"),
            ],
        }
    }

    /// opentelemetry's values built from the parsed ones: the span context with its
    /// `TraceState`, and the `Baggage`.
    pub(crate) fn otel_values(&self) -> (SpanContext, Baggage) {
        let state = TraceState::from_key_value(self.tracestate.iter().copied()).unwrap();
        let sc = SpanContext::new(
            black_box(self.trace_id),
            self.span_id,
            TraceFlags::SAMPLED,
            true,
            state,
        );
        let mut b = Baggage::new();
        for (k, v) in &self.baggage {
            b.insert((*k).to_owned(), (*v).to_owned());
        }
        (sc, b)
    }

    /// The floor of extract: the same Context built from the values already parsed.
    pub(crate) fn floor_context(&self) -> Context {
        let (sc, b) = self.otel_values();
        Context::new().with_remote_span_context(sc).with_baggage(b)
    }
}
