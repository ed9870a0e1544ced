//! Property tests: extract(inject(cx)) == cx for any valid context and baggage; extract never
//! panics and stays within the limits for arbitrary header bytes.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use http::{HeaderMap, HeaderName, HeaderValue};
use lens_core::{
    Carrier, HeaderCarrier, LensContextExt, Limits, extract_context, inject_context_from,
};
use opentelemetry::trace::{SpanContext, TraceContextExt, TraceFlags, TraceState};
use opentelemetry::{Context, SpanId, TraceId};
use proptest::prelude::*;

fn key() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9!#$&'*+.^_`|~-]{1,12}"
}

fn value() -> impl Strategy<Value = String> {
    any::<String>().prop_map(|s| s.chars().take(24).collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn inject_then_extract_gives_the_same_context(
        trace in 1u128..,
        span in 1u64..,
        flags in 0u8..4,
        ts in proptest::collection::vec(("[a-z][a-z0-9_*/@-]{0,10}", "[!-+--<>-~]{1,10}"), 0..5),
        bag in proptest::collection::vec((key(), value()), 0..8),
    ) {
        // A valid tracestate holds each key once (lens sends the first of a repeated key).
        let mut seen = std::collections::HashSet::new();
        let ts: Vec<&(String, String)> = ts.iter().filter(|(k, _)| seen.insert(k.clone())).collect();
        let state = TraceState::from_key_value(ts.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .unwrap_or_default();
        let sc = SpanContext::new(TraceId::from(trace), SpanId::from(span), TraceFlags::new(flags), true, state);
        let mut cx = Context::new().with_remote_span_context(sc.clone());
        for (k, v) in &bag {
            cx = cx.with_baggage_entry(k, v).unwrap();
        }
        let mut carrier = Carrier::new();
        inject_context_from(&cx, &mut carrier);
        let back = extract_context(&carrier);
        let span_ref = back.span();
        let got = span_ref.span_context();
        prop_assert_eq!(got.trace_id(), sc.trace_id());
        prop_assert_eq!(got.span_id(), sc.span_id());
        prop_assert_eq!(got.trace_flags(), sc.trace_flags());
        prop_assert_eq!(got.trace_state().header(), sc.trace_state().header());
        let want: Vec<(String, String)> = cx.lens_baggage().iter().map(|e| (e.key().to_owned(), e.value().to_owned())).collect();
        let have: Vec<(String, String)> = back.lens_baggage().iter().map(|e| (e.key().to_owned(), e.value().to_owned())).collect();
        prop_assert_eq!(have, want);
    }

    #[test]
    fn extract_never_panics_and_stays_within_limits(
        lines in proptest::collection::vec((0usize..3, proptest::collection::vec(any::<u8>(), 0..600)), 0..8),
    ) {
        let names = ["traceparent", "tracestate", "baggage"];
        let mut headers = HeaderMap::new();
        for (n, bytes) in &lines {
            if let Ok(v) = HeaderValue::from_bytes(bytes) {
                headers.append(HeaderName::from_static(names[*n]), v);
            }
        }
        let cx = extract_context(&HeaderCarrier(&headers));
        let limits = Limits::default();
        let baggage = cx.lens_baggage();
        prop_assert!(baggage.len() <= limits.baggage_members);
        prop_assert!(baggage.header().len() <= limits.baggage_bytes);
        let mut out = Carrier::new();
        inject_context_from(&cx, &mut out);
        if let Some(ts) = out.get("tracestate") {
            prop_assert!(ts.len() <= limits.tracestate_bytes);
            prop_assert!(ts.split(',').count() <= limits.tracestate_members);
        }
        // Re-extracting what lens sends gives the same context again.
        let again = extract_context(&out);
        let mut out2 = Carrier::new();
        inject_context_from(&again, &mut out2);
        prop_assert_eq!(out, out2);
    }
}
