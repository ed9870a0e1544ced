//! The Ray helpers against the shared reference vectors: `extract_ray_context` over every
//! extract case (`extract_*` groups, and the `current_context` case of `extract_ray_context`),
//! `inject_ray_context` over every `serialize_context` case. Expectations come from
//! `lens-expected-public.json`; the cases where lens knowingly differs from Python are listed in
//! `DIFFERS` with the SPEC rows that explain them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;

use base64::Engine;
use lens_core::{Carrier, LensContextExt, inject_context_from};
use lens_tonic::{extract_ray_context, inject_ray_context};
use opentelemetry::Context;
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use serde_json::Value;

const INPUTS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/vectors/nemo-lens-public.json"
);
const EXPECTED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/vectors/lens-expected-public.json"
);

/// Cases of the groups run here whose lens expectation differs from recorded Python, with the
/// SPEC.md rows that explain each (as `lens-expected-public.json` gives them).
const DIFFERS: &[(&str, &str)] = &[
    ("ser-010", "§9 flags: unknown bits masked"),
    ("ser-013", "§9/§5 all-zero ids: no traceparent"),
    ("ser-014", "§9/§5 all-zero ids: no traceparent"),
    (
        "ser-020",
        "§9/§3 space on inject: %20; §9/§3 + in a value kept",
    ),
    (
        "ser-022",
        "§9/§3 space on inject: %20; §9/§3 + in a value kept",
    ),
    (
        "ser-026",
        "§9/§3 space on inject: %20; §9/§3 + in a value kept",
    ),
    (
        "ser-028",
        "§9/§3 key taken literally; §9/§3 non-token keys refused when set",
    ),
    ("ser-031", "§9/§3 non-token keys refused when set"),
    ("ser-037", "§9/§3 member over 4096 kept"),
    ("ext-valid-005", "§9/§3 + in a value kept"),
    ("ext-valid-011", "§9 flags: unknown bits masked"),
    ("ext-valid-014", "§9 flags: unknown bits masked"),
    (
        "ext-traceparent-037",
        "§9/§1 trailing \\n / control characters: invalid",
    ),
    (
        "ext-traceparent-038",
        "§9/§1 trailing \\n / control characters: invalid",
    ),
    (
        "ext-traceparent-044",
        "§9/§1 trailing \\n / control characters: invalid",
    ),
    ("ext-traceparent-053", "§9/§8 traceparent 512 bytes"),
    ("ext-tracestate-014", "§9/§2 tracestate W3C key grammar"),
    (
        "ext-tracestate-034",
        "§9/§2 repeated tracestate key: first kept",
    ),
    ("ext-baggage-004", "§9/§3 space on inject: %20"),
    ("ext-baggage-007", "§9/§3 key taken literally"),
    ("ext-baggage-008", "§9/§3 key taken literally"),
    ("ext-baggage-016", "§9/§3 properties as metadata"),
    ("ext-baggage-019", "§9/§3 properties as metadata"),
    ("ext-baggage-035", "§9/§3 key taken literally"),
    (
        "ext-baggage-037",
        "§9/§3 space on inject: %20; §9/§3 encoded spaces at the ends of a value kept",
    ),
    (
        "ext-baggage-038",
        "§9/§3 space on inject: %20; §9/§3 encoded spaces at the ends of a value kept",
    ),
    ("ext-baggage-040", "§9/§3 member over 4096 kept"),
    (
        "ext-baggage-044",
        "§9/§3 limits on the header lens would send",
    ),
    (
        "ext-baggage-046",
        "§9/§3 limits on the header lens would send",
    ),
    (
        "ext-baggage-047",
        "§9/§3 limits on the header lens would send",
    ),
    (
        "ext-baggage-049",
        "§9/§3 baggage lines: one list; §9/§4 JSON value of another type ignored",
    ),
    (
        "ext-carrier_types-001",
        "§9/§1 differing traceparent lines: invalid; §9/§4 JSON value of another type ignored",
    ),
    (
        "ext-carrier_types-005",
        "§9/§4 JSON value of another type ignored",
    ),
    (
        "ext-carrier_types-007",
        "§9/§4 JSON value of another type ignored",
    ),
    (
        "ext-carrier_types-008",
        "§9/§4 JSON value of another type ignored",
    ),
    (
        "ext-carrier_types-010",
        "§9/§4 JSON value of another type ignored",
    ),
    (
        "ext-bytes-022",
        "§9/§4 strict JSON (NaN, Infinity, lone surrogates, depth 32, 64 KiB)",
    ),
    ("ext-bytes-028", "§4/§5 not a JSON object: caller's context"),
    ("ext-bytes-029", "§4/§5 not a JSON object: caller's context"),
    ("ext-bytes-031", "§4/§5 not a JSON object: caller's context"),
    ("ext-bytes-032", "§4/§5 not a JSON object: caller's context"),
    (
        "ext-bytes-034",
        "§9/§4 strict JSON (NaN, Infinity, lone surrogates, depth 32, 64 KiB)",
    ),
    (
        "ext-bytes-035",
        "§9/§4 strict JSON (NaN, Infinity, lone surrogates, depth 32, 64 KiB)",
    ),
    (
        "ext-bytes-038",
        "§9/§4 strict JSON (NaN, Infinity, lone surrogates, depth 32, 64 KiB)",
    ),
    (
        "ext-bytes-040",
        "§9/§4 strict JSON (NaN, Infinity, lone surrogates, depth 32, 64 KiB); §4/§5 not a JSON object: caller's context",
    ),
];

fn load(path: &str) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("reference vectors missing at {path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path} is not JSON: {e}"))
}

/// (input case, lens expectation) pairs, matched by id.
fn cases() -> Vec<(Value, Value)> {
    let inputs = load(INPUTS);
    let expected = load(EXPECTED);
    let inputs = inputs["cases"].as_array().expect("cases");
    let expected = expected["cases"].as_array().expect("cases");
    assert_eq!(
        inputs.len(),
        expected.len(),
        "the two vector files disagree"
    );
    inputs
        .iter()
        .zip(expected)
        .map(|(i, e)| {
            assert_eq!(i["id"], e["id"]);
            (i.clone(), e.clone())
        })
        .collect()
}

/// The caller's Context while cases run: a local span and one baggage entry (the vectors'
/// `current_context` cases use the same).
fn caller_context() -> Context {
    let sc = SpanContext::new(
        TraceId::from_hex("0af7651916cd43dd8448eb211c80319c").unwrap(),
        SpanId::from_hex("b7ad6b7169203331").unwrap(),
        TraceFlags::SAMPLED,
        false,
        TraceState::NONE,
    );
    Context::new()
        .with_remote_span_context(sc)
        .with_baggage_entry("caller", "yes")
        .unwrap()
}

fn str_of(v: &Value) -> &str {
    v.as_str()
        .unwrap_or_else(|| panic!("expected a string, got {v}"))
}

/// Removes spaces/tabs around `;` and `=` (not significant in baggage properties, and absent
/// from lens's percent-encoded values).
fn normalize_baggage(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c == ';' || c == '=' {
            while out.ends_with([' ', '\t']) {
                out.pop();
            }
        }
        if (c == ' ' || c == '\t') && out.ends_with([';', '=']) {
            continue;
        }
        out.push(c);
    }
    out
}

/// `cx` injected, as the JSON text Python's `serialize_context()` would give.
fn reserialize(cx: &Context) -> Carrier {
    let mut carrier = Carrier::new();
    inject_context_from(cx, &mut carrier);
    carrier
}

fn assert_same_carrier(id: &str, actual: &Carrier, expected_json: &str) {
    let expected = Carrier::from_json_bytes(expected_json.as_bytes())
        .unwrap_or_else(|e| panic!("{id}: expected reserialized is not a carrier: {e}"));
    let keys = |c: &Carrier| c.iter().map(|(k, _)| k.to_owned()).collect::<Vec<_>>();
    assert_eq!(keys(actual), keys(&expected), "{id}: reserialized keys");
    for (key, lines) in expected.iter() {
        let got = actual.get_all(key).unwrap();
        if key == "baggage" {
            let norm = |l: &[String]| l.iter().map(|s| normalize_baggage(s)).collect::<Vec<_>>();
            assert_eq!(norm(got), norm(lines), "{id}: reserialized baggage");
        } else {
            assert_eq!(got, lines, "{id}: reserialized {key}");
        }
    }
}

/// Compares an extracted Context with an expected context description.
fn assert_context(id: &str, cx: &Context, expected: &Value) {
    let span = cx.span();
    let sc = span.span_context();
    match &expected["span_context"] {
        Value::Null => assert!(!sc.is_valid(), "{id}: expected no span, got {sc:?}"),
        e => {
            assert!(sc.is_valid(), "{id}: expected a span context");
            assert_eq!(
                sc.trace_id().to_string(),
                str_of(&e["trace_id"]),
                "{id}: trace id"
            );
            assert_eq!(
                sc.span_id().to_string(),
                str_of(&e["span_id"]),
                "{id}: span id"
            );
            assert_eq!(Value::Bool(sc.is_sampled()), e["sampled"], "{id}: sampled");
            assert_eq!(Value::Bool(sc.is_remote()), e["is_remote"], "{id}: remote");
            let entries: Vec<Value> = e["tracestate_entries"].as_array().unwrap().clone();
            let got: Vec<Value> = reserialize(cx)
                .get("tracestate")
                .map(|h| {
                    h.split(',')
                        .map(|m| {
                            let (k, v) = m.split_once('=').unwrap();
                            serde_json::json!([k, v])
                        })
                        .collect()
                })
                .unwrap_or_default();
            assert_eq!(got, entries, "{id}: tracestate entries");
        }
    }
    let pairs: Vec<Value> = cx
        .lens_baggage()
        .iter()
        .map(|e| serde_json::json!([e.key(), e.value()]))
        .collect();
    assert_eq!(
        Value::Array(pairs),
        expected["baggage_pairs"],
        "{id}: ordered baggage pairs"
    );
}

fn differs_ids(cases: &[(Value, Value)], groups: impl Fn(&str) -> bool) -> BTreeSet<String> {
    cases
        .iter()
        .filter(|(_, e)| groups(str_of(&e["group"])) && e["differs_from_python"] == true)
        .map(|(_, e)| str_of(&e["id"]).to_owned())
        .collect()
}

fn listed(prefix: &str) -> BTreeSet<String> {
    DIFFERS
        .iter()
        .filter(|(id, _)| id.starts_with(prefix))
        .map(|(id, _)| (*id).to_owned())
        .collect()
}

#[test]
fn extract_ray_context_matches_every_extract_case() {
    let cases = cases();
    let caller = caller_context();
    let _guard = caller.clone().attach();
    let mut ran = 0;
    for (input, expected) in cases
        .iter()
        .filter(|(_, e)| str_of(&e["group"]).starts_with("extract_"))
    {
        let id = str_of(&input["id"]);
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(str_of(&input["input"]["bytes_b64"]))
            .unwrap();
        // What a Ray actor receives: the carrier, or nothing when it could not be decoded.
        let carrier = Carrier::from_json_bytes(&bytes).ok();
        let lens = &expected["lens_expected"];
        let parsed = lens["deserialize_context"]["outcome"] == "value";
        assert_eq!(carrier.is_some(), parsed, "{id}: carrier accepted");

        let cx = extract_ray_context(carrier.as_ref());
        let want = &lens["extract"];
        match str_of(&want["outcome"]) {
            "current_context" => {
                assert_eq!(cx.trace_id(), caller.trace_id(), "{id}: caller's context");
                assert_eq!(cx.baggage_value("caller").as_deref(), Some("yes"), "{id}");
            }
            "context" => {
                assert_context(id, &cx, &want["context"]);
                assert_same_carrier(id, &reserialize(&cx), str_of(&want["reserialized"]));
            }
            other => panic!("{id}: unexpected outcome {other}"),
        }
        ran += 1;
    }
    assert!(ran >= 100, "only {ran} extract cases ran");
    assert_eq!(
        differs_ids(&cases, |g| g.starts_with("extract_")),
        listed("ext-"),
        "the differing extract cases changed: update DIFFERS"
    );
}

#[test]
fn extract_ray_context_none_gives_the_callers_context() {
    let cases = cases();
    let mut ran = 0;
    for (input, expected) in cases
        .iter()
        .filter(|(i, _)| i["input"]["function"] == "extract_ray_context")
    {
        let id = str_of(&input["id"]);
        assert_eq!(input["input"]["carrier"], Value::Null, "{id}");
        let active = active_context(&input["input"]["active"]);
        let _guard = active.attach();
        let cx = extract_ray_context(None);
        assert_context(id, &cx, &expected["lens_expected"]["context"]);
        ran += 1;
    }
    assert!(ran >= 1, "no extract_ray_context current_context case");
}

fn hex_span_context(span: &Value, trace_state: TraceState) -> SpanContext {
    let flags = u8::try_from(span["trace_flags"].as_u64().unwrap()).unwrap();
    SpanContext::new(
        TraceId::from_hex(str_of(&span["trace_id"])).unwrap(),
        SpanId::from_hex(str_of(&span["span_id"])).unwrap(),
        TraceFlags::new(flags),
        span["is_remote"].as_bool().unwrap_or(false),
        trace_state,
    )
}

/// The active Context a `serialize_context` (or `current_context`) case describes.
///
/// `span`: a span context as given. `sdk_span`: the span context the Python SDK gives a new span
/// under the named sampler (trace id from the remote parent when there is one, the sampled bit
/// from the sampler, the random bit from the parent or `random_trace_id`, the parent's
/// tracestate, which nemo-lens's rank-aware sampler drops). `baggage`: entries set in order with
/// `with_baggage_entry` (refused keys stay out; numbers as `str()` gives them).
fn active_context(active: &Value) -> Context {
    let mut cx = Context::new();
    if let Some(tp) = active["remote_parent_traceparent"].as_str() {
        let mut carrier = Carrier::new();
        carrier.insert("traceparent", tp);
        if let Some(ts) = active["remote_parent_tracestate"].as_str() {
            carrier.insert("tracestate", ts);
        }
        cx = lens_core::extract_context(&carrier);
    }
    if let Some(span) = active.get("span") {
        let entries: Vec<(String, String)> = span["tracestate_entries"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|kv| (str_of(&kv[0]).to_owned(), str_of(&kv[1]).to_owned()))
                    .collect()
            })
            .unwrap_or_default();
        // Python's TraceState constructor drops every entry when given more than 32.
        let ts = if entries.len() > 32 {
            TraceState::NONE
        } else {
            TraceState::from_key_value(entries).unwrap_or(TraceState::NONE)
        };
        cx = cx.with_remote_span_context(hex_span_context(span, ts));
    }
    if let Some(sdk) = active.get("sdk_span") {
        let parent = {
            let span = cx.span();
            let sc = span.span_context();
            sc.is_valid().then(|| sc.clone())
        };
        let sampler = str_of(&sdk["sampler"]);
        let sampled = match sampler {
            "always_on" => true,
            "always_off" => false,
            "parentbased_always_on" => parent.as_ref().is_none_or(SpanContext::is_sampled),
            "nemo_rank_aware" => sdk["sample_rate"].as_f64().unwrap() >= 1.0,
            other => panic!("unknown sampler {other}"),
        };
        let random = match &parent {
            Some(p) => p.trace_flags().to_u8() & 0x02 != 0,
            None => sdk["random_trace_id"].as_bool().unwrap_or(false),
        };
        let trace_state = match (&parent, sampler) {
            (Some(p), s) if s != "nemo_rank_aware" => p.trace_state().clone(),
            _ => TraceState::NONE,
        };
        let trace_id = match &parent {
            Some(p) => p.trace_id(),
            None => TraceId::from_hex(str_of(&sdk["trace_id"])).unwrap(),
        };
        let flags = u8::from(sampled) | if random { 0x02 } else { 0 };
        let sc = SpanContext::new(
            trace_id,
            SpanId::from_hex(str_of(&sdk["span_id"])).unwrap(),
            TraceFlags::new(flags),
            false,
            trace_state,
        );
        cx = cx.with_remote_span_context(sc);
    }
    if let Some(pairs) = active["baggage"].as_array() {
        for kv in pairs {
            let value = match &kv[1] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            if let Ok(next) = cx.with_baggage_entry(str_of(&kv[0]), &value) {
                cx = next;
            }
        }
    }
    cx
}

#[test]
fn inject_ray_context_matches_every_serialize_case() {
    let cases = cases();
    let mut ran = 0;
    for (input, expected) in cases
        .iter()
        .filter(|(_, e)| e["group"] == "serialize_context")
    {
        let id = str_of(&input["id"]);
        let cx = active_context(&input["input"]["active"]);
        let carrier = {
            let _guard = cx.attach();
            inject_ray_context()
        };
        let lens = &expected["lens_expected"];
        let pairs: Vec<Value> = carrier
            .iter()
            .map(|(k, lines)| {
                assert_eq!(lines.len(), 1, "{id}: one line per key");
                serde_json::json!([k, lines[0]])
            })
            .collect();
        assert_eq!(
            Value::Array(pairs),
            lens["carrier_pairs"],
            "{id}: carrier pairs"
        );
        assert_eq!(
            String::from_utf8(carrier.to_json_bytes()).unwrap(),
            str_of(&lens["bytes_utf8"]),
            "{id}: the bytes Python's json.dumps gives"
        );
        ran += 1;
    }
    assert!(ran >= 30, "only {ran} serialize cases ran");
    assert_eq!(
        differs_ids(&cases, |g| g == "serialize_context"),
        listed("ser-"),
        "the differing serialize cases changed: update DIFFERS"
    );
}
