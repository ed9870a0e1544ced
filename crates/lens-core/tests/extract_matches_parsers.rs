//! Property tests: what the propagator's extract keeps (opentelemetry's `TraceState` and
//! `Baggage`, lens's ordered baggage, and what inject sends again) is exactly what the reference
//! parsers `TraceStateList::parse` and `BaggageList::parse` give for the same lines, under any
//! limits. extract takes shortcuts for common input; these tests hold it to the general path.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::HashMap;

use http::{HeaderMap, HeaderValue};
use lens_core::baggage::BaggageList;
use lens_core::tracestate::TraceStateList;
use lens_core::{HeaderCarrier, LensContextExt, Limits, MapCarrier, W3cPropagator};
use opentelemetry::baggage::BaggageExt;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{TraceContextExt, TraceState};
use proptest::prelude::*;

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn ows() -> impl Strategy<Value = &'static str> {
    prop_oneof![6 => Just(""), 1 => Just(" "), 1 => Just("\t "),]
}

/// One baggage member, mostly well formed, with optional whitespace, escapes, `+` and
/// properties, sometimes broken.
fn baggage_member() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("k"),
        Just("a"),
        Just("b"),
        Just("user_id"),
        Just("x+y%z"),
        Just("bad key"),
        Just(""),
    ];
    let value = prop_oneof![
        Just("v1"),
        Just("a-b.c~"),
        Just(""),
        Just("%20x%20"),
        Just("%2"),
        Just("%C3%A9"),
        Just("%FF"),
        // Escapes that are already what lens sends, and near misses: lowercase hex, an
        // escaped unreserved byte, canonical escapes of bytes that are not UTF-8.
        Just("a%20b%2C%3B"),
        Just("%c3%a9"),
        Just("%41"),
        Just("%F0%9F%98"),
        Just("%E2%82%AC%25"),
        Just("a+b"),
        Just("x/y:z="),
        Just("a b"),
        Just("\"q\""),
        Just("é"),
    ];
    let properties = prop_oneof![
        4 => Just(""),
        1 => Just(";p1"),
        1 => Just(";p1;p2=x"),
        1 => Just("; p1 ; p2 = x "),
        1 => Just(";"),
        1 => Just(";bad prop"),
    ];
    (ows(), key, ows(), ows(), value, ows(), properties)
        .prop_map(|(o1, k, o2, o3, v, o4, p)| format!("{o1}{k}{o2}={o3}{v}{o4}{p}"))
}

/// A baggage line: members joined by `,` with optional whitespace, empty members, and
/// sometimes raw junk.
fn baggage_line() -> impl Strategy<Value = String> {
    let part = prop_oneof![
        8 => baggage_member(),
        1 => Just(String::new()),
        1 => Just("nokey".to_owned()),
        1 => Just("==".to_owned()),
    ];
    (proptest::collection::vec((part, ows()), 0..8)).prop_map(|parts| {
        parts
            .into_iter()
            .map(|(p, o)| format!("{p}{o}"))
            .collect::<Vec<_>>()
            .join(",")
    })
}

/// Tracestate text: valid members (including keys opentelemetry rejects), repeats, whitespace,
/// empty members and invalid pieces.
fn tracestate_line() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("rojo=00f067aa0ba902b7"),
        Just("congo=t61rcWkgMzE"),
        Just("rojo=1"),
        Just("t@1v=x"),
        Just("foo@@bar=y"),
        Just("vendor@abcdefghijklmn=z"),
        Just("a=  lead"),
        Just(","),
        Just(" "),
        Just("\t"),
        Just("BAD=1"),
        Just("k=v=w"),
        Just("nokey"),
        Just("x=1"),
        Just("y=2"),
        Just("z=3"),
    ];
    proptest::collection::vec(piece, 0..14).prop_map(|p| p.concat())
}

fn limits() -> impl Strategy<Value = Limits> {
    (1usize..12, 1usize..80, 1usize..12, 1usize..120).prop_map(|(tm, tb, bm, bb)| {
        Limits::default()
            .with_tracestate_members(tm)
            .with_tracestate_bytes(tb)
            .with_baggage_members(bm)
            .with_baggage_bytes(bb)
    })
}

fn headers(tracestate: &[String], baggage: &[String]) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("traceparent", HeaderValue::from_static(TRACEPARENT));
    for line in tracestate {
        if let Ok(v) = HeaderValue::from_str(line) {
            h.append("tracestate", v);
        }
    }
    for line in baggage {
        if let Ok(v) = HeaderValue::from_str(line) {
            h.append("baggage", v);
        }
    }
    h
}

/// The lines a `HeaderCarrier` reads (visible ASCII only).
fn visible(lines: &[String]) -> Vec<&str> {
    lines
        .iter()
        .filter(|l| HeaderValue::from_str(l).is_ok_and(|v| v.to_str().is_ok()))
        .map(String::as_str)
        .collect()
}

fn check(
    propagator: &W3cPropagator,
    limits: &Limits,
    plus_as_space: bool,
    ts_lines: &[&str],
    bag_lines: &[&str],
    cx: &opentelemetry::Context,
) -> Result<(), TestCaseError> {
    // Tracestate: opentelemetry's copy and the header inject sends.
    let want_ts = TraceStateList::parse(ts_lines.iter().copied(), limits).unwrap_or_default();
    let span = cx.span();
    let sc = span.span_context();
    prop_assert!(sc.is_valid());
    let want_otel = if want_ts.is_empty() {
        TraceState::NONE
    } else {
        want_ts.to_otel()
    };
    prop_assert_eq!(sc.trace_state().header(), want_otel.header());

    // Baggage: lens's ordered list, opentelemetry's entries, and the header inject sends.
    let want_bag = BaggageList::parse(bag_lines.iter().copied(), limits, plus_as_space);
    let have_bag = cx.lens_baggage();
    prop_assert_eq!(have_bag.header(), want_bag.header());
    prop_assert_eq!(have_bag.entries(), want_bag.entries());
    let otel = cx.baggage();
    prop_assert_eq!(otel.len(), want_bag.len().min(64));
    for e in want_bag.iter().take(64) {
        let (v, meta) = otel.get_with_metadata(e.key()).expect("entry mirrored");
        prop_assert_eq!(v.as_str(), e.value());
        prop_assert_eq!(meta.as_str(), e.properties());
        let value = cx.baggage_value(e.key());
        prop_assert_eq!(value.as_deref(), Some(e.value()));
    }

    let mut out = HashMap::new();
    propagator.inject_context(cx, &mut MapCarrier(&mut out));
    prop_assert_eq!(
        out.get("tracestate").map(String::as_str),
        (!want_ts.is_empty()).then_some(want_ts.header())
    );
    prop_assert_eq!(
        out.get("baggage").map(String::as_str),
        (!want_bag.is_empty()).then_some(want_bag.header())
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn single_line_extract_matches_the_parsers(
        ts in tracestate_line(),
        bag in baggage_line(),
        plus_as_space in any::<bool>(),
    ) {
        let limits = Limits::default();
        let propagator = W3cPropagator::new().with_plus_as_space(plus_as_space);
        let mut map = HashMap::new();
        map.insert("traceparent".to_owned(), TRACEPARENT.to_owned());
        map.insert("tracestate".to_owned(), ts.clone());
        map.insert("baggage".to_owned(), bag.clone());
        let cx = propagator.extract(&MapCarrier(&map));
        check(&propagator, &limits, plus_as_space, &[ts.as_str()], &[bag.as_str()], &cx)?;
    }

    #[test]
    fn multi_line_extract_under_any_limits_matches_the_parsers(
        ts in proptest::collection::vec(tracestate_line(), 0..3),
        bag in proptest::collection::vec(baggage_line(), 0..3),
        limits in limits(),
        plus_as_space in any::<bool>(),
    ) {
        let propagator = W3cPropagator::new()
            .with_limits(limits)
            .with_plus_as_space(plus_as_space);
        let h = headers(&ts, &bag);
        let cx = propagator.extract(&HeaderCarrier(&h));
        check(&propagator, &limits, plus_as_space, &visible(&ts), &visible(&bag), &cx)?;
    }

    #[test]
    fn many_members_extract_matches_the_parsers(
        n in 0usize..80,
        repeat in 0usize..80,
        ts_n in 0usize..40,
    ) {
        // Past opentelemetry's 64 baggage entries and lens's inline tracestate members.
        let mut bag: Vec<String> = (0..n).map(|i| format!("k{i}=v{i}")).collect();
        if repeat < n {
            bag.push(format!("k{repeat}=again"));
        }
        let bag = bag.join(",");
        let ts: Vec<String> = (0..ts_n).map(|i| format!("m{i}=v{i}")).collect();
        let ts = ts.join(",");
        let limits = Limits::default();
        let propagator = W3cPropagator::new();
        let mut map = HashMap::new();
        map.insert("traceparent".to_owned(), TRACEPARENT.to_owned());
        map.insert("tracestate".to_owned(), ts.clone());
        map.insert("baggage".to_owned(), bag.clone());
        let cx = propagator.extract(&MapCarrier(&map));
        check(&propagator, &limits, false, &[ts.as_str()], &[bag.as_str()], &cx)?;
    }
}
