//! The Context a case's `input.active` describes (`serialize_context`, `inject_context` and
//! `current_context` cases): a span context as given, a real opentelemetry_sdk span under the
//! named sampler (with an optional remote parent), and baggage set in order.

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

/// The Context `input.active` describes, with the tracer provider of its SDK span (keep it alive
/// while the Context is used). Baggage keys that are not HTTP tokens are refused when set (docs/propagation-rules.md
/// §3, §9) and left out; numbers are set as Python's `str()` gives them.
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
        let tracer = p.tracer("lens-testkit");
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
            // Keys that are not HTTP tokens are refused when set (docs/propagation-rules.md#baggage, docs/propagation-rules.md#differences-from-nemo-lens).
            if let Ok(next) = cx.with_baggage_entry(key, &value) {
                cx = next;
            }
        }
    }
    (cx, provider)
}
