//! The one context, carriers, stock propagator and extract floor that `propagation.rs` and
//! `ab_ratios.rs` both measure: a sampled span, a tracestate of 2 members, 3 baggage entries.

use std::collections::HashMap;

use http::{HeaderMap, HeaderName, HeaderValue};
use opentelemetry::propagation::TextMapCompositePropagator;
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
