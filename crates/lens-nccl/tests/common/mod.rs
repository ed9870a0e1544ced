//! Shared helpers of the vector tests: loading the vector files, building the "active" contexts
//! they describe, and comparing a Context with a recorded context description.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    dead_code,
    unreachable_pub
)]

use base64::Engine as _;
use lens_core::{Carrier, LensContextExt};
use opentelemetry::trace::{
    Link, SpanContext, SpanId, SpanKind, TraceContextExt, TraceFlags, TraceId, TraceState,
    Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{
    IdGenerator, Sampler, SamplingDecision, SamplingResult, SdkTracerProvider, ShouldSample,
};
use serde_json::Value;

pub const PUBLIC: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/vectors/nemo-lens-public.json"
);
pub const EXPECTED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/vectors/lens-expected-public.json"
);

/// Cases whose recorded trace flags carry unknown bits (`ff`): SPEC.md §9 row "unknown trace-flag
/// bits" masks them on outgoing headers; a received context may hold them as received or masked
/// (the cases' notes in lens-expected-public.json).
pub const FLAGS_AS_RECEIVED_OR_MASKED: &[&str] = &["ser-010", "ext-valid-011", "ext-valid-014"];

pub fn load(path: &str) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("vector file {path} is missing or unreadable: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("vector file {path} is not JSON: {e}"))
}

/// One case: the recorded Python case and lens's expectation for it.
pub struct Case {
    pub id: String,
    pub group: String,
    pub public: Value,
    pub expected: Value,
}

impl Case {
    pub fn lens(&self) -> &Value {
        &self.expected["lens_expected"]
    }

    pub fn differs_from_python(&self) -> bool {
        self.expected["differs_from_python"].as_bool().unwrap()
    }

    pub fn spec_rows(&self) -> Vec<String> {
        self.expected["spec_rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_owned())
            .collect()
    }
}

/// Every case, in file order (the two files are checked to line up).
pub fn cases() -> Vec<Case> {
    let public = load(PUBLIC);
    let expected = load(EXPECTED);
    let public = public["cases"].as_array().expect("public cases");
    let expected = expected["cases"].as_array().expect("expected cases");
    assert_eq!(
        public.len(),
        expected.len(),
        "the vector files differ in length"
    );
    assert!(!public.is_empty(), "no cases in the vector files");
    public
        .iter()
        .zip(expected)
        .map(|(p, e)| {
            let id = p["id"].as_str().expect("id").to_owned();
            assert_eq!(e["id"].as_str(), Some(id.as_str()), "case order differs");
            Case {
                id,
                group: p["group"].as_str().expect("group").to_owned(),
                public: p.clone(),
                expected: e.clone(),
            }
        })
        .collect()
}

pub fn cases_of(group: &str) -> Vec<Case> {
    cases().into_iter().filter(|c| c.group == group).collect()
}

pub fn b64(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .unwrap_or_else(|e| panic!("bad base64 {s:?}: {e}"))
}

// ---------------------------------------------------------------------------------------------
// Building the active contexts of `input.active`

/// Python's `TraceState(entries)` constructor: more than 32 entries drops them all (ser-007);
/// opentelemetry-rust's keeps the first 32, so the rule is applied here to describe the same input.
fn python_trace_state(entries: Option<&Value>) -> TraceState {
    let Some(entries) = entries.and_then(Value::as_array) else {
        return TraceState::NONE;
    };
    if entries.len() > 32 {
        return TraceState::NONE;
    }
    let pairs: Vec<(String, String)> = entries
        .iter()
        .map(|p| {
            (
                p[0].as_str().unwrap().to_owned(),
                p[1].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    TraceState::from_key_value(pairs).expect("vector tracestate entries are valid")
}

/// Ids the SDK hands out: the fixed ones of the case.
#[derive(Debug)]
struct FixedIds {
    trace_id: TraceId,
    span_id: SpanId,
}

impl IdGenerator for FixedIds {
    fn new_trace_id(&self) -> TraceId {
        self.trace_id
    }
    fn new_span_id(&self) -> SpanId {
        self.span_id
    }
}

/// NeMo Lens's `RankAwareSampler` as the vectors exercise it (rank 0 of 1): samples at
/// `sample_rate` whatever the parent, and returns no tracestate (so the parent's is lost,
/// ser-049 and ser-050).
#[derive(Clone, Debug)]
struct RankAware {
    sample_rate: f64,
}

impl ShouldSample for RankAware {
    fn should_sample(
        &self,
        _parent: Option<&Context>,
        trace_id: TraceId,
        _name: &str,
        _kind: &SpanKind,
        _attributes: &[KeyValue],
        _links: &[Link],
    ) -> SamplingResult {
        let bound = (self.sample_rate.clamp(0.0, 1.0) * (u64::MAX as f64)) as u64;
        let low = u64::from_be_bytes(trace_id.to_bytes()[8..].try_into().unwrap());
        let sampled = self.sample_rate >= 1.0 || (self.sample_rate > 0.0 && low < bound);
        SamplingResult {
            decision: if sampled {
                SamplingDecision::RecordAndSample
            } else {
                SamplingDecision::Drop
            },
            attributes: Vec::new(),
            trace_state: TraceState::NONE,
        }
    }
}

fn sampler(spec: &Value) -> Box<dyn ShouldSample> {
    match spec["sampler"].as_str().unwrap() {
        "always_on" => Box::new(Sampler::AlwaysOn),
        "always_off" => Box::new(Sampler::AlwaysOff),
        "parentbased_always_on" => Box::new(Sampler::ParentBased(Box::new(Sampler::AlwaysOn))),
        "nemo_rank_aware" => Box::new(RankAware {
            sample_rate: spec["sample_rate"].as_f64().unwrap(),
        }),
        other => panic!("unknown sampler {other}"),
    }
}

/// The Context `input.active` describes. Keeps the tracer provider alive with it.
pub fn active_context(active: &Value) -> (Context, Option<SdkTracerProvider>) {
    let mut provider = None;
    let mut cx = Context::new();

    if let Some(traceparent) = active.get("remote_parent_traceparent") {
        let mut carrier = Carrier::new();
        carrier.insert("traceparent", traceparent.as_str().unwrap());
        if let Some(ts) = active.get("remote_parent_tracestate") {
            carrier.insert("tracestate", ts.as_str().unwrap());
        }
        cx = lens_core::extract_context(&carrier);
        assert!(
            cx.span().span_context().is_valid(),
            "remote parent is valid"
        );
    }

    if let Some(span) = active.get("span") {
        let sc = SpanContext::new(
            TraceId::from_hex(span["trace_id"].as_str().unwrap()).unwrap(),
            SpanId::from_hex(span["span_id"].as_str().unwrap()).unwrap(),
            TraceFlags::new(span["trace_flags"].as_u64().unwrap() as u8),
            span["is_remote"].as_bool().unwrap(),
            python_trace_state(span.get("tracestate_entries")),
        );
        cx = cx.with_remote_span_context(sc);
    }

    if let Some(spec) = active.get("sdk_span") {
        let ids = FixedIds {
            trace_id: TraceId::from_hex(spec["trace_id"].as_str().unwrap()).unwrap(),
            span_id: SpanId::from_hex(spec["span_id"].as_str().unwrap()).unwrap(),
        };
        let p = SdkTracerProvider::builder()
            .with_sampler(sampler(spec))
            .with_id_generator(ids)
            .build();
        let tracer = p.tracer("lens-nccl-vectors");
        let has_parent = cx.span().span_context().is_valid();
        let span = tracer.build_with_context(tracer.span_builder("active"), &cx);
        cx = cx.with_span(span);
        if spec["random_trace_id"].as_bool() == Some(true) && !has_parent {
            // Python's SDK marks a root span whose trace id is random with the W3C random flag
            // (0x02); opentelemetry_sdk 0.33 has no such flag. Describe the same span context.
            let sc = cx.span().span_context().clone();
            let flags = TraceFlags::new(sc.trace_flags().to_u8() | 0x02);
            let sc = SpanContext::new(
                sc.trace_id(),
                sc.span_id(),
                flags,
                false,
                sc.trace_state().clone(),
            );
            cx = cx.with_remote_span_context(sc);
        }
        provider = Some(p);
    }

    if let Some(pairs) = active.get("baggage").and_then(Value::as_array) {
        for pair in pairs {
            let key = pair[0].as_str().unwrap();
            // Python applies str() to the value (ser-032: 42).
            let value = match &pair[1] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            // Keys that are not HTTP tokens are refused when set (SPEC.md §3, §9).
            if let Ok(next) = cx.with_baggage_entry(key, &value) {
                cx = next;
            }
        }
    }
    (cx, provider)
}

// ---------------------------------------------------------------------------------------------
// Comparing

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

fn pairs(v: &Value) -> Vec<(String, String)> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p[0].as_str().unwrap().to_owned(),
                p[1].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Checks `cx` against a context description (`ctx` in the vectors' README).
pub fn check_context(id: &str, cx: &Context, want: &Value) {
    let span = cx.span();
    let sc = span.span_context();
    match want.get("span_context") {
        Some(Value::Null) | None => {
            assert!(!sc.is_valid(), "{id}: expected no span context, got {sc:?}");
        }
        Some(w) => {
            assert!(sc.is_valid(), "{id}: expected a span context");
            assert_eq!(
                sc.trace_id().to_string(),
                w["trace_id"].as_str().unwrap(),
                "{id}: trace id"
            );
            assert_eq!(
                sc.span_id().to_string(),
                w["span_id"].as_str().unwrap(),
                "{id}: span id"
            );
            let flags = w["trace_flags"].as_u64().unwrap() as u8;
            let got = sc.trace_flags().to_u8();
            if FLAGS_AS_RECEIVED_OR_MASKED.contains(&id) {
                assert!(
                    got == flags || got == flags & 0x03,
                    "{id}: trace flags {got:#x}"
                );
            } else {
                assert_eq!(got, flags, "{id}: trace flags");
            }
            assert_eq!(
                sc.is_sampled(),
                w["sampled"].as_bool().unwrap(),
                "{id}: sampled"
            );
            assert_eq!(
                sc.is_remote(),
                w["is_remote"].as_bool().unwrap(),
                "{id}: remote"
            );
            let want_ts: Vec<(String, String)> = pairs(&w["tracestate_entries"])
                .into_iter()
                .filter(|(k, _)| otel_accepts_key(k))
                .collect();
            let got_ts: Vec<(String, String)> = sc
                .trace_state()
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            assert_eq!(got_ts, want_ts, "{id}: tracestate entries");
        }
    }
    let got_bag: Vec<(String, String)> = cx
        .lens_baggage()
        .iter()
        .map(|e| (e.key().to_owned(), e.value().to_owned()))
        .collect();
    assert_eq!(
        got_bag,
        pairs(&want["baggage_pairs"]),
        "{id}: baggage pairs"
    );
    if want["empty"].as_bool() == Some(true) {
        assert!(
            !sc.is_valid() && got_bag.is_empty(),
            "{id}: expected an empty context"
        );
    }
}

/// Checks an `extract` expectation (`outcome` `context` or `current_context`) for a Context
/// obtained while `caller` was the current Context.
pub fn check_extract(id: &str, cx: &Context, caller: &Context, extract: &Value) {
    match extract["outcome"].as_str().unwrap() {
        "context" => {
            check_context(id, cx, &extract["context"]);
            let reserialized = lens_nccl::serialize_context_from(cx);
            let got = String::from_utf8_lossy(&reserialized).into_owned();
            let want = extract["reserialized"].as_str().unwrap();
            if PROPERTY_WHITESPACE_CASES.contains(&id) {
                assert_eq!(
                    without_property_whitespace(&got),
                    without_property_whitespace(want),
                    "{id}: reserialized (property whitespace ignored)"
                );
            } else {
                assert_eq!(got, want, "{id}: reserialized");
            }
        }
        "current_context" => assert_same_context(id, cx, caller),
        other => panic!("{id}: unexpected outcome {other}"),
    }
}

/// Cases whose baggage properties hold spaces, which SPEC.md §3 trims and which are not
/// significant (the case's note in lens-expected-public.json): compared without them.
pub const PROPERTY_WHITESPACE_CASES: &[&str] = &["ext-baggage-016"];

/// A reserialized carrier with the spaces and tabs after the first `;` of each baggage member
/// removed (other keys unchanged).
fn without_property_whitespace(json: &str) -> String {
    let mut carrier: serde_json::Map<String, Value> = serde_json::from_str(json).unwrap();
    if let Some(Value::String(b)) = carrier.get_mut("baggage") {
        *b = b
            .split(',')
            .map(|member| match member.split_once(';') {
                Some((head, props)) => format!("{head};{}", props.replace([' ', '\t'], "")),
                None => member.to_owned(),
            })
            .collect::<Vec<_>>()
            .join(",");
    }
    serde_json::to_string(&carrier).unwrap()
}

/// `cx` is `caller` (same span context, same baggage in order).
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

/// A caller context that no extraction can produce by accident: a local span and baggage.
pub fn caller_context() -> Context {
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
