//! What the `extract_*` equivalence tests compare: what a Context sends on and what lens sees of it.

use std::collections::BTreeMap;

use lens_core::{LensContextExt, MapCarrier, W3cPropagator};
use opentelemetry::Context;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;

/// A sampled traceparent.
pub(crate) const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// The span context, the headers lens injects from `cx`, and lens's ordered baggage.
pub(crate) fn observe(cx: &Context) -> (String, BTreeMap<String, String>, Vec<(String, String)>) {
    let mut out = BTreeMap::new();
    W3cPropagator::new().inject_context(cx, &mut MapCarrier(&mut out));
    let baggage = cx
        .lens_baggage()
        .iter()
        .map(|e| (e.key().to_owned(), e.value().to_owned()))
        .collect();
    (format!("{:?}", cx.span().span_context()), out, baggage)
}
