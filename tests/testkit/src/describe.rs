//! A Context as the vectors and the interop harness describe it, and the comparisons of the
//! vector tests.

use lens_core::{Carrier, LensContextExt};
use opentelemetry::Context;
use opentelemetry::trace::TraceContextExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::vectors::pairs;

/// What a Context holds: its valid span context, if any, and its baggage in order.
///
/// Serialized as lens-interop and its Python side exchange it (`tests/interop/python/common.py`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextDescription {
    /// The span context, when valid.
    pub span: Option<SpanDescription>,
    /// The baggage entries, in order.
    pub baggage: Vec<(String, String)>,
}

/// The span context part of a [`ContextDescription`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpanDescription {
    /// Lowercase hex.
    pub trace_id: String,
    /// Lowercase hex.
    pub span_id: String,
    /// The trace flags as held.
    pub trace_flags: u8,
    /// The sampled flag.
    pub sampled: bool,
    /// Whether the span context came from another process.
    pub is_remote: bool,
    /// The tracestate header lens sends on (`""` when empty): lens's own copy where
    /// opentelemetry's `TraceState` cannot hold it.
    pub tracestate: String,
}

/// What `cx` holds, as a [`ContextDescription`].
pub fn describe(cx: &Context) -> ContextDescription {
    let span = cx.span();
    let sc = span.span_context();
    let span = sc.is_valid().then(|| {
        let mut carrier = Carrier::with_capacity(2);
        lens_core::propagator().inject_parts(cx, &mut carrier, true, false);
        SpanDescription {
            trace_id: sc.trace_id().to_string(),
            span_id: sc.span_id().to_string(),
            trace_flags: sc.trace_flags().to_u8(),
            sampled: sc.is_sampled(),
            is_remote: sc.is_remote(),
            tracestate: carrier.get("tracestate").unwrap_or_default().to_owned(),
        }
    });
    let baggage = cx
        .lens_baggage()
        .iter()
        .map(|e| (e.key().to_owned(), e.value().to_owned()))
        .collect();
    ContextDescription { span, baggage }
}

/// A tracestate header as `(key, value)` members (empty members skipped).
pub fn tracestate_pairs(header: &str) -> Vec<(String, String)> {
    header
        .split(',')
        .filter(|m| !m.is_empty())
        .map(|m| {
            let (k, v) = m
                .split_once('=')
                .unwrap_or_else(|| panic!("tracestate member without '=': {m:?}"));
            (k.to_owned(), v.to_owned())
        })
        .collect()
}

/// Cases whose recorded trace flags carry unknown bits (`ff`): docs/propagation-rules.md#differences-from-nemo-lens row "unknown trace-flag
/// bits" masks them on outgoing headers; a received context may hold them as received or masked
/// (the cases' notes in lens-expected-public.json).
pub const FLAGS_AS_RECEIVED_OR_MASKED: &[&str] = &["ser-010", "ext-valid-011", "ext-valid-014"];

/// Whether opentelemetry's `TraceState` can hold the key (lens keeps the others beside it).
fn otel_accepts_key(key: &str) -> bool {
    match key.split_once('@') {
        None => true,
        Some((_, vendor)) => {
            !vendor.is_empty()
                && vendor.len() <= 13
                && !vendor.contains('@')
                && vendor
                    .bytes()
                    .next()
                    .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        }
    }
}

/// Checks `cx` against a context description of the vectors (`ctx` in their README): the span
/// context (ids, flags, sampled, remote, the tracestate lens sends and the part of it
/// opentelemetry's `TraceState` holds), the baggage pairs in order, and `empty`.
pub fn check_context(id: &str, cx: &Context, want: &Value) {
    let got = describe(cx);
    match want.get("span_context") {
        Some(Value::Null) | None => {
            assert_eq!(got.span, None, "{id}: expected no span context");
        }
        Some(w) => {
            let Some(sc) = &got.span else {
                panic!("{id}: expected a span context, got none");
            };
            assert_eq!(
                sc.trace_id,
                w["trace_id"].as_str().unwrap(),
                "{id}: trace id"
            );
            assert_eq!(sc.span_id, w["span_id"].as_str().unwrap(), "{id}: span id");
            let flags = w["trace_flags"].as_u64().unwrap() as u8;
            if FLAGS_AS_RECEIVED_OR_MASKED.contains(&id) {
                assert!(
                    sc.trace_flags == flags || sc.trace_flags == flags & 0x03,
                    "{id}: trace flags {:#x}, want {flags:#x} (or masked)",
                    sc.trace_flags
                );
            } else {
                assert_eq!(sc.trace_flags, flags, "{id}: trace flags");
            }
            assert_eq!(sc.sampled, w["sampled"].as_bool().unwrap(), "{id}: sampled");
            assert_eq!(
                sc.is_remote,
                w["is_remote"].as_bool().unwrap(),
                "{id}: remote"
            );
            let want_ts = pairs(&w["tracestate_entries"]);
            assert_eq!(
                tracestate_pairs(&sc.tracestate),
                want_ts,
                "{id}: tracestate lens sends"
            );
            let otel_ts: Vec<(String, String)> = cx
                .span()
                .span_context()
                .trace_state()
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            let want_otel: Vec<(String, String)> = want_ts
                .into_iter()
                .filter(|(k, _)| otel_accepts_key(k))
                .collect();
            assert_eq!(otel_ts, want_otel, "{id}: opentelemetry TraceState entries");
        }
    }
    assert_eq!(
        got.baggage,
        pairs(&want["baggage_pairs"]),
        "{id}: baggage pairs"
    );
    if want["empty"].as_bool() == Some(true) {
        assert!(
            got.span.is_none() && got.baggage.is_empty(),
            "{id}: expected an empty context"
        );
    }
}

/// Cases whose baggage properties hold spaces, which docs/propagation-rules.md#baggage trims and which are not
/// significant (the case's note in lens-expected-public.json): compared without them.
pub const PROPERTY_WHITESPACE_CASES: &[&str] = &["ext-baggage-016"];

/// A baggage header with the spaces and tabs after the first `;` of each member removed.
pub fn without_property_whitespace(header: &str) -> String {
    header
        .split(',')
        .map(|member| match member.split_once(';') {
            Some((head, props)) => format!("{head};{}", props.replace([' ', '\t'], "")),
            None => member.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Asserts that `got` (a JSON carrier, as `serialize_context()` gives it) is `want`, byte for
/// byte, except for the [`PROPERTY_WHITESPACE_CASES`], whose baggage is compared without
/// [the whitespace inside properties](without_property_whitespace).
pub fn assert_reserialized(id: &str, got: &str, want: &str) {
    if PROPERTY_WHITESPACE_CASES.contains(&id) {
        let normalize = |json: &str| {
            let mut carrier: serde_json::Map<String, Value> = serde_json::from_str(json)
                .unwrap_or_else(|e| panic!("{id}: {json:?} is not a JSON object: {e}"));
            if let Some(Value::String(b)) = carrier.get_mut("baggage") {
                *b = without_property_whitespace(b);
            }
            serde_json::to_string(&carrier).unwrap()
        };
        assert_eq!(
            normalize(got),
            normalize(want),
            "{id}: reserialized (property whitespace ignored)"
        );
    } else {
        assert_eq!(got, want, "{id}: reserialized");
    }
}

/// Checks an `extract` expectation (`outcome` `context` or `current_context`) for `cx`, obtained
/// while `caller` was the current Context; `reserialize` gives the JSON carrier bytes of a
/// Context (the `serialize_context()` of the crate under test).
pub fn check_extract(
    id: &str,
    cx: &Context,
    caller: &Context,
    extract: &Value,
    reserialize: impl FnOnce(&Context) -> Vec<u8>,
) {
    match extract["outcome"].as_str().unwrap() {
        "context" => {
            check_context(id, cx, &extract["context"]);
            let got = String::from_utf8(reserialize(cx))
                .unwrap_or_else(|e| panic!("{id}: reserialized is not UTF-8: {e}"));
            assert_reserialized(id, &got, extract["reserialized"].as_str().unwrap());
        }
        "current_context" => assert_same_context(id, cx, caller),
        other => panic!("{id}: unexpected outcome {other}"),
    }
}

/// Asserts that `cx` is `caller` (same span context, same baggage in order).
pub fn assert_same_context(id: &str, cx: &Context, caller: &Context) {
    assert_eq!(
        cx.span().span_context(),
        caller.span().span_context(),
        "{id}: expected the caller's span context"
    );
    assert_eq!(
        cx.lens_baggage().header(),
        caller.lens_baggage().header(),
        "{id}: expected the caller's baggage"
    );
}

/// The JSON carrier bytes lens injects for `cx` (what `serialize_context()` gives).
pub fn reserialize(cx: &Context) -> Vec<u8> {
    let mut carrier = Carrier::new();
    lens_core::inject_context_from(cx, &mut carrier);
    carrier.to_json_bytes()
}
