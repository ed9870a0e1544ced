//! The extract floor both fixtures share: the opentelemetry Context an extract gives (span
//! context with its `TraceState`, plus `Baggage`), built from values already parsed.

use std::hint::black_box;

use opentelemetry::baggage::{Baggage, BaggageExt};
use opentelemetry::trace::{SpanContext, TraceContextExt, TraceFlags, TraceState};
use opentelemetry::{Context, SpanId, TraceId};

/// The values of the three headers, already parsed: what the extract floor starts from.
pub(crate) struct Parsed {
    trace_id: TraceId,
    span_id: SpanId,
    tracestate: [(&'static str, &'static str); 2],
    baggage: [(&'static str, &'static str); 3],
}

impl Parsed {
    /// Fixture L's values (`support/fixture.rs`).
    #[allow(dead_code)] // not every bench that includes this file measures fixture L
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

    /// Other values of the same shape (fixture P's).
    #[allow(dead_code)] // not every bench that includes this file measures fixture P
    pub(crate) fn with(
        trace_id: TraceId,
        span_id: SpanId,
        tracestate: [(&'static str, &'static str); 2],
        baggage: [(&'static str, &'static str); 3],
    ) -> Self {
        Parsed {
            trace_id,
            span_id,
            tracestate,
            baggage,
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
