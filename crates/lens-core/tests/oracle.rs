//! The one tracestate and baggage codec in `src/` against the plain reference implementations of
//! `oracle_support` (docs/propagation-rules.md#tracestate, docs/propagation-rules.md#baggage) on arbitrary input, under arbitrary small limits: what each
//! parser keeps, what it rejects, and the header lens sends again, by every path (lens's lists,
//! extract from header lines straight into opentelemetry's types, inject from opentelemetry's
//! own `TraceState` and `Baggage`).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod oracle_support;

use std::collections::HashMap;

use lens_core::baggage::BaggageList;
use lens_core::tracestate::TraceStateList;
use lens_core::{HeaderLines, LensContextExt, Limits, MapCarrier, W3cPropagator};
use opentelemetry::baggage::{BaggageExt, BaggageMetadata};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanContext, TraceContextExt, TraceFlags, TraceState};
use opentelemetry::{Context, KeyValue, SpanId, TraceId};
use proptest::prelude::*;

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// Text made mostly of the characters the grammars care about.
fn text(max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            8 => proptest::char::ranges(vec!['a'..='e', '0'..='3'].into()),
            2 => Just('='),
            2 => Just(','),
            1 => Just(';'),
            1 => Just(' '),
            1 => Just('\t'),
            1 => Just('%'),
            1 => Just('+'),
            1 => proptest::char::ranges(vec!['A'..='F'].into()),
            1 => prop_oneof![Just('@'), Just('*'), Just('/'), Just('_'), Just('-')],
            1 => prop_oneof![Just('"'), Just('\\'), Just('é'), Just('\u{7f}'), Just('~')],
        ],
        0..max,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

/// Keys opentelemetry's `TraceState` takes (so that the state is not refused whole), short
/// enough to repeat: up to 8 members go through inject's inline path, more through its list.
fn otel_key() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-c0-1][a-c0-1_*/-]{0,2}(@[a-c][a-c0-1]{0,2})?")
        .expect("a valid regex")
}

fn lines() -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(text(40), 1..4)
}

fn tracestate_limits() -> impl Strategy<Value = Limits> {
    (1usize..8, 1usize..90).prop_map(|(members, bytes)| {
        Limits::default()
            .with_tracestate_members(members)
            .with_tracestate_bytes(bytes)
    })
}

fn baggage_limits() -> impl Strategy<Value = Limits> {
    (1usize..8, 1usize..90).prop_map(|(members, bytes)| {
        Limits::default()
            .with_baggage_members(members)
            .with_baggage_bytes(bytes)
    })
}

fn pairs(list: &TraceStateList) -> Vec<(String, String)> {
    list.members()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

fn entries(list: &BaggageList) -> Vec<(String, String, String)> {
    list.iter()
        .map(|e| {
            (
                e.key().to_owned(),
                e.value().to_owned(),
                e.properties().to_owned(),
            )
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn tracestate_parser_matches_the_reference(lines in lines(), limits in tracestate_limits()) {
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let expected = oracle_support::tracestate(&lines, &limits);
        let parsed = TraceStateList::parse(lines.iter().copied(), &limits).ok();
        prop_assert_eq!(parsed.as_ref().map(pairs), expected.clone());

        // Extract (the inline path for keys opentelemetry holds, the list otherwise) sends
        // again exactly the reference's members.
        let tp = [TRACEPARENT];
        let cx = W3cPropagator::new().with_limits(limits).extract_lines(
            &Context::new(),
            HeaderLines { traceparent: &tp, tracestate: &lines, baggage: &[] },
        );
        let mut out = HashMap::new();
        W3cPropagator::new().inject_context(&cx, &mut MapCarrier(&mut out));
        let sent = expected
            .filter(|members| !members.is_empty())
            .map(|members| {
                members.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")
            });
        prop_assert_eq!(out.get("tracestate").cloned(), sent);
    }

    #[test]
    fn baggage_parser_matches_the_reference(
        lines in lines(),
        limits in baggage_limits(),
        plus_as_space in any::<bool>(),
    ) {
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let (expected, header) = oracle_support::baggage(&lines, &limits, plus_as_space);
        let list = BaggageList::parse(lines.iter().copied(), &limits, plus_as_space);
        prop_assert_eq!(entries(&list), expected.clone());
        prop_assert_eq!(list.header(), header.as_str());

        // Extract straight into opentelemetry's `Baggage`, then inject: the same header, and
        // opentelemetry holds every member.
        let propagator = W3cPropagator::new()
            .with_limits(limits)
            .with_plus_as_space(plus_as_space);
        let cx = propagator.extract_lines(
            &Context::new(),
            HeaderLines { baggage: &lines, ..HeaderLines::default() },
        );
        let mut out = HashMap::new();
        propagator.inject_context(&cx, &mut MapCarrier(&mut out));
        prop_assert_eq!(out.get("baggage").cloned().unwrap_or_default(), header);
        prop_assert_eq!(entries(&cx.lens_baggage()), expected.clone());
        for (k, v, _) in &expected {
            prop_assert_eq!(cx.baggage().get(k.as_str()).map(|v| v.to_string()), Some(v.clone()));
        }
    }

    #[test]
    fn inject_from_opentelemetry_baggage_matches_the_reference(
        raw in proptest::collection::vec((text(6), text(12), text(6)), 0..6),
        limits in baggage_limits(),
    ) {
        // A Baggage built with opentelemetry's API (which takes keys lens would refuse).
        let mut baggage = opentelemetry::baggage::Baggage::new();
        for (k, v, m) in &raw {
            baggage.insert_with_metadata(k.clone(), v.clone(), BaggageMetadata::from(m.as_str()));
        }
        let cx = Context::new().with_baggage(baggage);
        // The reference: every entry set in opentelemetry's order, refused ones left out.
        let mut list = BaggageList::new();
        for (k, (v, m)) in cx.baggage() {
            let _refused = list.set(k.as_str(), v.as_str(), m.as_str().trim(), &limits);
        }
        let expected: Vec<String> = list
            .iter()
            .map(|e| oracle_support::member(e.key(), e.value(), e.properties()))
            .collect();
        let mut out = HashMap::new();
        W3cPropagator::new()
            .with_limits(limits)
            .inject_context(&cx, &mut MapCarrier(&mut out));
        let sent = out.get("baggage").cloned().unwrap_or_default();
        prop_assert_eq!(sent, expected.join(","));
    }

    #[test]
    fn inject_from_opentelemetry_tracestate_matches_the_reference(
        raw in proptest::collection::vec((otel_key(), text(10)), 0..12),
    ) {
        // opentelemetry's own checks are looser than docs/propagation-rules.md#tracestate for values (empty, control
        // characters, a trailing space) and it keeps repeated keys.
        let state = TraceState::from_key_value(raw.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .unwrap_or_default();
        let sc = SpanContext::new(
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
            SpanId::from_hex("00f067aa0ba902b7").unwrap(),
            TraceFlags::SAMPLED,
            false,
            state.clone(),
        );
        let cx = Context::new().with_remote_span_context(sc);
        let members: Vec<(&str, &str)> = state.into_iter().take(32).collect();
        // Members the rules refuse are left out one by one; then the first of each key is sent
        // (docs/propagation-rules.md#tracestate-from-opentelemetry).
        let mut kept: Vec<String> = Vec::new();
        let mut kept_keys: Vec<&str> = Vec::new();
        for (k, v) in &members {
            // Valid as it stands: the reference keeps exactly this key and value (a value that
            // ends in a space is not one, though a header line may end in spaces).
            let one = oracle_support::tracestate(&[&format!("{k}={v}")], &Limits::default());
            let valid = one == Some(vec![((*k).to_owned(), (*v).to_owned())]);
            if valid && !kept_keys.contains(k) {
                kept_keys.push(k);
                kept.push(format!("{k}={v}"));
            }
        }
        let mut out = HashMap::new();
        W3cPropagator::new().inject_context(&cx, &mut MapCarrier(&mut out));
        let expected = (!kept.is_empty()).then(|| kept.join(","));
        prop_assert_eq!(out.get("tracestate").cloned(), expected);
    }
}

/// `inject_json` gives exactly the bytes of the carrier inject fills, for every kind of value.
#[test]
fn inject_json_is_the_injected_carrier_as_json() {
    let cx = Context::new()
        .with_baggage_entry("user", "Zoë \"q\" \\ 😀")
        .unwrap()
        .with_remote_span_context(SpanContext::new(
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
            SpanId::from_hex("00f067aa0ba902b7").unwrap(),
            TraceFlags::SAMPLED,
            true,
            TraceState::from_key_value([("a", "1 2")]).unwrap(),
        ));
    for cx in [
        Context::new(),
        cx.clone(),
        cx.with_baggage([KeyValue::new("k", "v")]),
    ] {
        let propagator = W3cPropagator::new();
        let mut carrier = lens_core::Carrier::new();
        propagator.inject_context(&cx, &mut carrier);
        let mut out = b"prefix".to_vec();
        propagator.inject_json(&cx, &mut out);
        let mut expected = b"prefix".to_vec();
        expected.extend(carrier.to_json_bytes());
        assert_eq!(out, expected);
    }
}
