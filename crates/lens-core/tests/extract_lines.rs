//! `W3cPropagator::extract_lines` gives exactly what extracting from a carrier holding the same
//! header lines gives: same span context, same baggage, same headers on re-inject.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod extract_support;
use extract_support::{TP, observe};

use lens_core::{Carrier, HeaderLines, LensContextExt, W3cPropagator};
use opentelemetry::Context;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use proptest::prelude::*;

fn both_ways(tp: &[&str], ts: &[&str], bg: &[&str]) {
    let mut carrier = Carrier::new();
    for (name, lines) in [("traceparent", tp), ("tracestate", ts), ("baggage", bg)] {
        for line in lines {
            carrier.append(name, *line);
        }
    }
    let propagator = W3cPropagator::new();
    let from_carrier = propagator.extract_with_context(&Context::new(), &carrier);
    let lines = HeaderLines {
        traceparent: tp,
        tracestate: ts,
        baggage: bg,
    };
    let from_lines = propagator.extract_lines(&Context::new(), lines);
    assert_eq!(
        observe(&from_lines),
        observe(&from_carrier),
        "lines {tp:?} {ts:?} {bg:?}"
    );
}

#[test]
fn fixed_cases_match_the_carrier_path() {
    both_ways(
        &[TP],
        &["rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"],
        &["a=1,b=2"],
    );
    both_ways(&[TP], &[], &[]);
    both_ways(&[], &["k=v"], &["a=1"]);
    both_ways(&[TP, TP], &["a=1", "b=2"], &["x=1", "y=hello%20world;p"]);
    both_ways(
        &[
            TP,
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b8-01",
        ],
        &["a=1"],
        &[],
    );
    both_ways(&["not a traceparent"], &["a=1"], &["k=v"]);
    both_ways(&[TP], &["Bad Key=1,good=2"], &["k=v,k=w"]);
}

#[test]
fn empty_lines_are_an_absent_header() {
    let cx = W3cPropagator::new().extract_lines(&Context::new(), HeaderLines::default());
    assert!(!cx.span().span_context().is_valid());
    assert!(cx.lens_baggage().is_empty());
}

proptest! {
    #[test]
    fn any_lines_match_the_carrier_path(
        tp in proptest::collection::vec(prop_oneof![Just(TP.to_owned()), "[ -~]{0,60}"], 0..3),
        ts in proptest::collection::vec("[a-z0-9=,@ ]{0,30}", 0..3),
        bg in proptest::collection::vec("[a-z0-9=,;% +]{0,30}", 0..3),
    ) {
        let tp: Vec<&str> = tp.iter().map(String::as_str).collect();
        let ts: Vec<&str> = ts.iter().map(String::as_str).collect();
        let bg: Vec<&str> = bg.iter().map(String::as_str).collect();
        both_ways(&tp, &ts, &bg);
    }
}
