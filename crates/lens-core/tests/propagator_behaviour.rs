//! The propagator's behaviour over whole carriers (docs/propagation-rules.md#traceparent, docs/propagation-rules.md#tracestate, docs/propagation-rules.md#baggage, docs/propagation-rules.md#carriers, docs/propagation-rules.md#extract-and-inject, docs/propagation-rules.md#opentelemetry-types).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use http::{HeaderMap, HeaderValue};
use lens_core::{
    Carrier, HeaderCarrier, LensContextExt, MapCarrier, W3cPropagator, extract_context,
    extract_context_with, inject_context, inject_context_from,
};
use opentelemetry::baggage::BaggageExt;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{
    SpanContext, TraceContextExt, TraceFlags, TraceState, Tracer, TracerProvider,
};
use opentelemetry::{Context, KeyValue, SpanId, TraceId};
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::collections::HashMap;

const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn headers(lines: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in lines {
        h.append(
            http::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            HeaderValue::from_str(v).unwrap(),
        );
    }
    h
}

fn injected(cx: &Context) -> HashMap<String, String> {
    let mut out = HashMap::new();
    inject_context_from(cx, &mut MapCarrier(&mut out));
    out
}

#[test]
fn extract_starts_from_an_empty_context() {
    let _guard = Context::new()
        .with_baggage(vec![KeyValue::new("caller", "x")])
        .attach();
    let cx = extract_context(&Carrier::new());
    assert!(cx.baggage().is_empty());
    assert!(!cx.span().span_context().is_valid());
}

#[test]
fn invalid_traceparent_keeps_baggage_and_drops_tracestate() {
    let mut c = Carrier::new();
    c.insert("traceparent", "00-bad");
    c.insert("tracestate", "a=1");
    c.insert("baggage", "k=v");
    let cx = extract_context(&c);
    assert!(!cx.span().span_context().is_valid());
    let out = injected(&cx);
    assert_eq!(out.get("baggage").map(String::as_str), Some("k=v"));
    assert!(!out.contains_key("tracestate"));
}

#[test]
fn header_names_are_case_insensitive_and_every_line_is_read() {
    let h = headers(&[
        ("TraceParent", TP),
        ("tracestate", "a=1"),
        ("TRACESTATE", "b=2"),
        ("baggage", "x=1"),
        ("Baggage", "y=2"),
    ]);
    let cx = extract_context(&HeaderCarrier(&h));
    let out = injected(&cx);
    assert_eq!(out["traceparent"], TP);
    assert_eq!(out["tracestate"], "a=1,b=2");
    assert_eq!(out["baggage"], "x=1,y=2");
}

#[test]
fn look_alike_header_names_are_ignored() {
    let h = headers(&[("trace-parent", TP), ("traceparent1", TP)]);
    assert!(
        !extract_context(&HeaderCarrier(&h))
            .span()
            .span_context()
            .is_valid()
    );
}

#[test]
fn differing_traceparent_lines_give_no_remote_parent() {
    let other = TP.replace("-01", "-00");
    let h = headers(&[("traceparent", TP), ("traceparent", &other)]);
    assert!(
        !extract_context(&HeaderCarrier(&h))
            .span()
            .span_context()
            .is_valid()
    );
}

#[test]
fn identical_traceparent_lines_count_as_one() {
    let h = headers(&[("traceparent", TP), ("traceparent", TP)]);
    assert!(
        extract_context(&HeaderCarrier(&h))
            .span()
            .span_context()
            .is_valid()
    );
}

#[test]
fn plain_maps_are_case_sensitive() {
    let mut m = HashMap::new();
    m.insert("Traceparent".to_string(), TP.to_string());
    assert!(
        !extract_context(&MapCarrier(&m))
            .span()
            .span_context()
            .is_valid()
    );
}

#[test]
fn all_zero_span_id_is_never_injected_but_baggage_is() {
    let sc = SpanContext::new(
        TraceId::from(1),
        SpanId::INVALID,
        TraceFlags::SAMPLED,
        true,
        TraceState::NONE,
    );
    let cx = Context::new()
        .with_remote_span_context(sc)
        .with_baggage_entry("k", "v")
        .unwrap();
    let out = injected(&cx);
    assert!(!out.contains_key("traceparent") && !out.contains_key("tracestate"));
    assert_eq!(out["baggage"], "k=v");
}

#[test]
fn unknown_flag_bits_are_not_sent_on() {
    let mut c = Carrier::new();
    c.insert("traceparent", TP.replace("-01", "-ff"));
    assert!(injected(&extract_context(&c))["traceparent"].ends_with("-03"));
}

#[test]
fn random_flag_survives_into_child_spans() {
    let provider = SdkTracerProvider::builder().build();
    let tracer = provider.tracer("test");
    let mut c = Carrier::new();
    c.insert("traceparent", TP.replace("-01", "-03"));
    let parent = extract_context(&c);
    let span = tracer.start_with_context("child", &parent);
    let cx = parent.with_span(span);
    let out = injected(&cx);
    assert!(
        out["traceparent"].ends_with("-03"),
        "{}",
        out["traceparent"]
    );
    assert_ne!(
        &out["traceparent"][36..52],
        "00f067aa0ba902b7",
        "child has its own span id"
    );
}

#[test]
fn tracestate_keys_opentelemetry_rejects_survive_child_spans() {
    let provider = SdkTracerProvider::builder().build();
    let tracer = provider.tracer("test");
    let mut c = Carrier::new();
    c.insert("traceparent", TP);
    c.insert("tracestate", "foo@@bar=1,ok=2,t@vendorwith14ch=3");
    let parent = extract_context(&c);
    assert_eq!(parent.span().span_context().trace_state().header(), "ok=2");
    let cx = parent.with_span(tracer.start_with_context("child", &parent));
    assert_eq!(
        injected(&cx)["tracestate"],
        "foo@@bar=1,ok=2,t@vendorwith14ch=3"
    );
}

#[test]
fn a_changed_opentelemetry_tracestate_wins_over_the_copy() {
    let mut c = Carrier::new();
    c.insert("traceparent", TP);
    c.insert("tracestate", "a=1");
    let cx = extract_context(&c);
    let sc = cx.span().span_context().clone();
    let changed = SpanContext::new(
        sc.trace_id(),
        sc.span_id(),
        sc.trace_flags(),
        true,
        sc.trace_state().insert("b", "2").unwrap(),
    );
    let cx = cx.with_remote_span_context(changed);
    assert_eq!(injected(&cx)["tracestate"], "b=2,a=1");
}

#[test]
fn a_new_trace_does_not_inherit_the_tracestate_copy() {
    let mut c = Carrier::new();
    c.insert("traceparent", TP);
    c.insert("tracestate", "foo@@bar=1");
    let cx = extract_context(&c);
    let other = SpanContext::new(
        TraceId::from(7),
        SpanId::from(9),
        TraceFlags::SAMPLED,
        false,
        TraceState::NONE,
    );
    let out = injected(&cx.with_remote_span_context(other));
    assert!(!out.contains_key("tracestate"));
}

#[test]
fn baggage_beyond_64_entries_is_kept_in_order() {
    let header: Vec<String> = (0..100).map(|i| format!("k{i}=v{i}")).collect();
    let mut c = Carrier::new();
    c.insert("baggage", header.join(","));
    let cx = extract_context(&c);
    assert_eq!(cx.baggage().len(), 64, "opentelemetry holds what it can");
    assert_eq!(cx.lens_baggage().len(), 100);
    assert_eq!(injected(&cx)["baggage"], header.join(","));
}

#[test]
fn baggage_set_through_opentelemetry_replaces_the_copy() {
    let mut c = Carrier::new();
    c.insert("baggage", "a=1,b=2");
    let cx = extract_context(&c).with_baggage(vec![KeyValue::new("z", "9 9")]);
    assert_eq!(injected(&cx)["baggage"], "z=9%209");
}

#[test]
fn baggage_properties_are_sent_after_the_value() {
    let mut c = Carrier::new();
    c.insert("baggage", "k=v ; p1 ; p2=x");
    let cx = extract_context(&c);
    assert_eq!(
        cx.baggage().get_with_metadata("k").unwrap().1.as_str(),
        "p1;p2=x"
    );
    assert_eq!(injected(&cx)["baggage"], "k=v;p1;p2=x");
}

#[test]
fn plus_as_space_is_opt_in() {
    let mut c = Carrier::new();
    c.insert("baggage", "k=a+b");
    assert_eq!(extract_context(&c).baggage_value("k").unwrap(), "a+b");
    let p = W3cPropagator::new().with_plus_as_space(true);
    assert_eq!(p.extract(&c).baggage_value("k").unwrap(), "a b");
}

#[test]
fn inject_uses_the_current_context() {
    let mut c = Carrier::new();
    c.insert("traceparent", TP);
    let _guard = extract_context(&c).attach();
    let mut out = Carrier::new();
    inject_context(&mut out);
    assert_eq!(out.get("traceparent"), Some(TP));
}

#[test]
fn extract_context_with_keeps_the_given_context_without_valid_headers() {
    let base = Context::new().with_baggage_entry("keep", "me").unwrap();
    let cx = extract_context_with(&base, &Carrier::new());
    assert_eq!(cx.baggage_value("keep").as_deref(), Some("me"));
}

#[test]
fn injected_header_map_replaces_a_stale_traceparent() {
    let mut c = Carrier::new();
    c.insert("traceparent", TP);
    let cx = extract_context(&c);
    let mut h = headers(&[("traceparent", "stale"), ("traceparent", "stale2")]);
    inject_context_from(&cx, &mut HeaderCarrier(&mut h));
    let all: Vec<_> = h.get_all("traceparent").iter().collect();
    assert_eq!(all, [TP]);
}

#[test]
fn otel_propagators_names_select_the_parts() {
    let p = W3cPropagator::from_names("baggage").unwrap();
    assert!(!p.propagates_trace_context() && p.propagates_baggage());
    let p = W3cPropagator::from_names(" tracecontext , baggage ").unwrap();
    assert!(p.propagates_trace_context() && p.propagates_baggage());
    let p = W3cPropagator::from_names("none").unwrap();
    assert!(!p.propagates_trace_context() && !p.propagates_baggage());
    assert_eq!(p.fields().count(), 0);
}

/// The header names each configuration answers to (`TextMapPropagator::fields`: what a composite
/// propagator or a carrier that clears old headers asks).
#[test]
fn fields_name_the_headers_of_the_parts_propagated() {
    let fields = |p: &W3cPropagator| p.fields().map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(
        fields(&W3cPropagator::new()),
        ["traceparent", "tracestate", "baggage"]
    );
    assert_eq!(
        fields(&W3cPropagator::trace_context_only()),
        ["traceparent", "tracestate"]
    );
    assert_eq!(fields(&W3cPropagator::baggage_only()), ["baggage"]);
    assert_eq!(
        fields(&W3cPropagator::from_names("baggage,tracecontext").unwrap()),
        ["traceparent", "tracestate", "baggage"]
    );
    assert!(fields(&W3cPropagator::none()).is_empty());
}

/// Two propagators are equal when they propagate the same parts with the same options and
/// limits (what `install_propagator` compares): each setting on its own makes them differ.
#[test]
fn propagators_are_equal_only_with_the_same_parts_options_and_limits() {
    let base = W3cPropagator::new();
    assert_eq!(base, W3cPropagator::new());
    assert_eq!(
        base,
        W3cPropagator::from_names("tracecontext,baggage").unwrap()
    );
    assert_ne!(base, W3cPropagator::trace_context_only(), "baggage differs");
    assert_ne!(base, W3cPropagator::baggage_only(), "trace context differs");
    assert_ne!(base, W3cPropagator::new().with_plus_as_space(true));
    assert_ne!(
        base,
        W3cPropagator::new().with_limits(lens_core::Limits::DEFAULT.with_traceparent_bytes(100))
    );
    assert_eq!(
        base.clone().with_plus_as_space(true),
        W3cPropagator::new().with_plus_as_space(true)
    );
}

/// `limits()` answers with the limits given (the adapters read them to size their own checks).
#[test]
fn the_limits_given_are_the_limits_in_force() {
    let small = lens_core::Limits::DEFAULT.with_traceparent_bytes(100);
    assert_eq!(*W3cPropagator::new().limits(), lens_core::Limits::DEFAULT);
    assert_eq!(*W3cPropagator::new().with_limits(small).limits(), small);
    assert_eq!(
        *W3cPropagator::baggage_only().with_limits(small).limits(),
        small
    );
}

/// `extract_baggage` gives the carrier's baggage as lens's list, in order, under the
/// propagator's options; no header is `None`, a header without a valid member an empty list.
#[test]
fn extract_baggage_gives_the_members_in_order() {
    let mut c = Carrier::new();
    c.insert("baggage", "b=2,a=1;p");
    c.append("baggage", "c=x+y, bad key=1");
    let list = W3cPropagator::new()
        .extract_baggage(&c)
        .expect("a baggage header");
    let members: Vec<(&str, &str, &str)> = list
        .iter()
        .map(|e| (e.key(), e.value(), e.properties()))
        .collect();
    assert_eq!(members, [("b", "2", ""), ("a", "1", "p"), ("c", "x+y", "")]);
    let plus = W3cPropagator::new()
        .with_plus_as_space(true)
        .extract_baggage(&c)
        .expect("a baggage header");
    assert_eq!(plus.get("c").map(|e| e.value()), Some("x y"));
    let mut invalid = Carrier::new();
    invalid.insert("baggage", "bad key=1");
    let empty = W3cPropagator::new().extract_baggage(&invalid);
    assert!(empty.is_some_and(|l| l.is_empty()));
    assert!(
        W3cPropagator::new()
            .extract_baggage(&Carrier::new())
            .is_none()
    );
}

#[test]
fn unknown_propagator_name_is_a_clear_error() {
    let e = W3cPropagator::from_names("tracecontext,b3").unwrap_err();
    assert!(e.to_string().contains("\"b3\""), "{e}");
}

#[test]
fn disabled_parts_are_neither_injected_nor_extracted() {
    let mut c = Carrier::new();
    c.insert("traceparent", TP);
    c.insert("baggage", "k=v");
    let p = W3cPropagator::trace_context_only();
    let cx = p.extract(&c);
    assert!(cx.span().span_context().is_valid());
    assert!(cx.baggage().is_empty());
}

/// The typed entry points (`extract_headers`, `extract_lines`, `extract_json`) leave out the
/// parts a propagator does not propagate, as `extract` does.
#[test]
fn typed_extracts_leave_out_the_disabled_parts() {
    let map = headers(&[("traceparent", TP), ("baggage", "k=v")]);
    let json = format!(r#"{{"traceparent": "{TP}", "baggage": "k=v"}}"#);
    let lines = lens_core::HeaderLines {
        traceparent: &[TP],
        baggage: &["k=v"],
        ..lens_core::HeaderLines::default()
    };
    let empty = Context::new();
    for (p, trace, baggage) in [
        (W3cPropagator::trace_context_only(), true, false),
        (W3cPropagator::baggage_only(), false, true),
        (W3cPropagator::none(), false, false),
        (W3cPropagator::new(), true, true),
    ] {
        for cx in [
            p.extract_headers(&empty, &map),
            p.extract_lines(&empty, lines),
            p.extract_json(&empty, json.as_bytes()).expect("valid JSON"),
            p.extract(&HeaderCarrier(&map)),
        ] {
            assert_eq!(cx.span().span_context().is_valid(), trace, "{p:?}");
            assert_eq!(cx.baggage().len(), usize::from(baggage), "{p:?}");
        }
    }
}

/// A JSON carrier (NCCL bytes, a remote call's `_otel_carrier`) is extracted from an empty
/// Context; no carrier, or bytes that are not one, give the caller's current Context
/// (docs/propagation-rules.md#extract-and-inject).
#[test]
fn a_json_carrier_is_extracted_afresh_and_no_carrier_gives_the_callers_context() {
    let caller = Context::new()
        .with_remote_span_context(SpanContext::new(
            TraceId::from_hex("0af7651916cd43dd8448eb211c80319c").unwrap(),
            SpanId::from_hex("b7ad6b7169203331").unwrap(),
            TraceFlags::SAMPLED,
            true,
            TraceState::NONE,
        ))
        .with_baggage([KeyValue::new("caller", "yes")]);
    let _attached = caller.clone().attach();
    let is_caller = |cx: &Context| {
        cx.span().span_context().span_id() == caller.span().span_context().span_id()
            && cx.baggage().get("caller").is_some()
    };
    let json = format!(r#"{{"traceparent": "{TP}", "baggage": "k=v"}}"#);
    let from_json = lens_core::extract_json_context(json.as_bytes());
    assert_eq!(
        from_json.span().span_context().trace_id().to_string(),
        "4bf92f3577b34da6a3ce929d0e0e4736"
    );
    assert!(
        from_json.baggage().get("caller").is_none(),
        "not the caller's"
    );
    let empty = lens_core::extract_json_context(b"{}");
    assert!(!empty.span().span_context().is_valid() && empty.baggage().is_empty());
    for rejected in [&b"[1]"[..], b"", b"{\"traceparent\": \"00-"] {
        assert!(is_caller(&lens_core::extract_json_context(rejected)));
    }
    let mut carrier = Carrier::new();
    carrier.insert("baggage", "k=v");
    let from_carrier = lens_core::extract_carrier_context(Some(&carrier));
    assert!(!from_carrier.span().span_context().is_valid());
    assert_eq!(from_carrier.baggage().len(), 1);
    assert!(is_caller(&lens_core::extract_carrier_context(None)));
}

/// Extracting into a Context (docs/propagation-rules.md#extract-into-context): a baggage header
/// without one valid member leaves the Context's baggage as it was; a header with a valid member
/// replaces it.
#[test]
fn a_baggage_header_without_a_valid_member_keeps_the_contexts_baggage() {
    let cx = Context::new().with_baggage_entry("caller", "x").unwrap();
    let with_baggage = |header: &str| {
        let mut carrier = HashMap::new();
        carrier.insert("baggage".to_owned(), header.to_owned());
        extract_context_with(&cx, &MapCarrier(&carrier))
    };
    for header in [",, ,", "no-equals, =v, k=\"quoted\""] {
        let out = with_baggage(header);
        assert_eq!(
            out.baggage_value("caller").as_deref(),
            Some("x"),
            "{header}"
        );
        assert_eq!(injected(&out)["baggage"], "caller=x", "{header}");
    }
    let out = with_baggage("k=v");
    assert_eq!(out.baggage_value("caller"), None);
    assert_eq!(injected(&out)["baggage"], "k=v");
}
