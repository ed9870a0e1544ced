//! An adapter under test, and what its harness uses to build calls and report them.

use std::collections::BTreeMap;
use std::future::Future;

use lens_core::Carrier;
use opentelemetry::Context;

use super::call::{Call, Observed, Respond};
use super::setup::{Protocol, Setup, Side};
use crate::metrics::{Metrics, Point};

/// An adapter under test.
pub trait Harness {
    /// Which side it is on.
    fn side(&self) -> Side;
    /// Which conventions its metrics follow.
    fn protocol(&self) -> Protocol;
    /// Whether it can produce `respond` (a client cannot make its peer panic).
    fn supports(&self, respond: Respond) -> bool;
    /// Builds the adapter as `setup` says, sends `call`, waits for `expect_spans` ended spans of
    /// the adapter's kind and reports.
    fn run(&self, setup: Setup, call: Call, expect_spans: usize) -> impl Future<Output = Observed>;
}

/// A meter provider for one call when `setup` asks for metrics (the suite's last knob).
pub fn metrics_for(setup: &Setup) -> Option<Metrics> {
    setup.metrics.then(Metrics::new)
}

/// What `metrics` collected (nothing without metrics): [`Observed::metrics`].
pub fn collected(metrics: &Option<Metrics>) -> Vec<Point> {
    metrics.as_ref().map(Metrics::collect).unwrap_or_default()
}

/// The trace context the current Context would send on: what a handler reports.
pub fn outgoing_of_current() -> Carrier {
    let mut carrier = Carrier::new();
    lens_core::inject_context(&mut carrier);
    carrier
}

/// The caller's Context a client harness makes its call in: `headers` extracted with lens.
pub fn caller_context(headers: &[(&'static str, String)]) -> Context {
    let mut carrier = Carrier::new();
    for (k, v) in headers {
        carrier.insert(*k, v.clone());
    }
    lens_core::extract_context(&carrier)
}

/// The propagation lines of a header map, for [`Observed::outgoing`].
pub fn propagation_lines(headers: &http::HeaderMap) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for name in ["traceparent", "tracestate", "baggage"] {
        let lines: Vec<String> = headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_owned))
            .collect();
        if !lines.is_empty() {
            out.insert(name.to_owned(), lines);
        }
    }
    out
}

/// A [`Carrier`] (a handler's report) as [`Observed::outgoing`].
pub fn carrier_lines(carrier: &Carrier) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for name in ["traceparent", "tracestate", "baggage"] {
        if let Some(v) = carrier.get(name) {
            out.insert(name.to_owned(), vec![v.to_owned()]);
        }
    }
    out
}
