//! Checks shared by the lens fuzz targets (`fuzz_targets/*.rs`).
//!
//! Beyond "no panic", every target checks two properties on whatever the fuzzer feeds it:
//!
//! * **round trip**: injecting an extracted Context and extracting it again gives the same
//!   Context ([`observe`] compares what a Context would send on, its span context and its
//!   ordered baggage entries);
//! * **limits**: what lens sends on stays within docs/propagation-rules.md#limits (traceparent 55 bytes, tracestate
//!   32 members / 8192 bytes, baggage 180 members / 8192 bytes), and every header value it writes
//!   is printable ASCII, so nothing received can smuggle a CR/LF (header injection) into an
//!   outgoing request.
//!
//! A failed check panics: libFuzzer records the input as a crash under `tests/fuzz/artifacts/`.
#![forbid(unsafe_code)]
#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use http::{HeaderMap, HeaderName, HeaderValue};
use lens_core::baggage::BaggageList;
use lens_core::tracestate::TraceStateList;
use lens_core::{
    Carrier, HeaderCarrier, LensContextExt, Limits, extract_context, inject_context_from,
};
use opentelemetry::Context;
use opentelemetry::trace::TraceContextExt;

/// Length of a version-00 traceparent.
pub const TRACEPARENT_LEN: usize = 55;

/// Everything observable about a Context for propagation: what it injects, its span context
/// (flags as lens sends them) and its ordered baggage entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    /// The `traceparent` lens would send.
    pub traceparent: Option<String>,
    /// The `tracestate` lens would send.
    pub tracestate: Option<String>,
    /// The `baggage` lens would send.
    pub baggage: Option<String>,
    /// Trace id, span id and the flags lens keeps (sampled, random), when the span is valid.
    pub span: Option<(String, String, u8)>,
    /// Baggage entries in order: key, value, properties.
    pub entries: Vec<(String, String, String)>,
}

/// What `cx` would send on, and what it holds.
pub fn observe(cx: &Context) -> Observed {
    let mut out = Carrier::new();
    inject_context_from(cx, &mut out);
    let span = cx.span();
    let sc = span.span_context();
    let span = sc.is_valid().then(|| {
        (
            sc.trace_id().to_string(),
            sc.span_id().to_string(),
            sc.trace_flags().to_u8() & 0x03,
        )
    });
    let entries = cx
        .lens_baggage()
        .iter()
        .map(|e| {
            (
                e.key().to_owned(),
                e.value().to_owned(),
                e.properties().to_owned(),
            )
        })
        .collect();
    Observed {
        traceparent: out.get("traceparent").map(str::to_owned),
        tracestate: out.get("tracestate").map(str::to_owned),
        baggage: out.get("baggage").map(str::to_owned),
        span,
        entries,
    }
}

/// Whether every byte is printable ASCII (0x20-0x7E): a valid header value with no CR, LF or NUL.
pub fn is_printable_ascii(value: &str) -> bool {
    value.bytes().all(|b| (0x20..=0x7e).contains(&b))
}

/// Panics unless `o` is within docs/propagation-rules.md#limits and every value is a safe header value.
pub fn check_limits(o: &Observed) {
    let limits = Limits::DEFAULT;
    if let Some(tp) = &o.traceparent {
        assert_eq!(tp.len(), TRACEPARENT_LEN, "traceparent sent: {tp:?}");
        assert!(o.span.is_some(), "a traceparent without a valid span");
        assert!(is_printable_ascii(tp), "traceparent sent: {tp:?}");
    } else {
        assert!(o.tracestate.is_none(), "a tracestate without a traceparent");
    }
    if let Some(ts) = &o.tracestate {
        assert!(!ts.is_empty(), "an empty tracestate header is never sent");
        assert!(
            ts.len() <= limits.tracestate_bytes,
            "tracestate of {} bytes",
            ts.len()
        );
        assert!(is_printable_ascii(ts), "tracestate sent: {ts:?}");
        let again = TraceStateList::parse([ts.as_str()], &limits)
            .unwrap_or_else(|e| panic!("lens sent a tracestate it rejects ({e}): {ts:?}"));
        assert!(again.len() <= limits.tracestate_members);
        assert_eq!(again.header(), ts, "tracestate not in canonical form");
    }
    if let Some(b) = &o.baggage {
        assert!(!b.is_empty(), "an empty baggage header is never sent");
        assert!(
            b.len() <= limits.baggage_bytes,
            "baggage of {} bytes",
            b.len()
        );
        assert!(
            b.bytes().all(|c| (0x21..=0x7e).contains(&c)),
            "baggage sent with a space or control character: {b:?}"
        );
    }
    assert!(
        o.entries.len() <= limits.baggage_members,
        "{} baggage entries",
        o.entries.len()
    );
    assert_eq!(
        o.baggage.is_some(),
        !o.entries.is_empty(),
        "baggage header vs entries: {o:?}"
    );
}

/// Panics unless `cx` is within the limits, and sending it through `via` (inject into some
/// carrier, extract from it) gives the same Context, twice over.
pub fn check_roundtrip(cx: &Context, via: impl Fn(&Context) -> Context) {
    let first = observe(cx);
    check_limits(&first);
    let again = via(cx);
    let second = observe(&again);
    assert_eq!(first, second, "extract(inject(cx)) differs from cx");
    let third = observe(&via(&again));
    assert_eq!(second, third, "second round trip differs");
}

/// Round trip through an `http::HeaderMap` (the HTTP adapters' carrier).
pub fn via_headers(cx: &Context) -> Context {
    let mut headers = HeaderMap::new();
    inject_context_from(cx, &mut HeaderCarrier(&mut headers));
    for value in headers.values() {
        assert!(
            value.as_bytes().iter().all(|b| (0x20..=0x7e).contains(b)),
            "header value {value:?}"
        );
    }
    extract_context(&HeaderCarrier(&headers))
}

/// Round trip through the JSON carrier bytes (NCCL bytes, remote calls).
pub fn via_json(cx: &Context) -> Context {
    let mut carrier = Carrier::new();
    inject_context_from(cx, &mut carrier);
    let bytes = carrier.to_json_bytes();
    assert!(
        bytes.is_ascii(),
        "JSON carrier bytes are ASCII (Python json.dumps)"
    );
    let back = Carrier::from_json_bytes(&bytes)
        .unwrap_or_else(|e| panic!("lens rejects its own carrier ({e}): {bytes:?}"));
    assert_eq!(back, carrier, "JSON carrier round trip");
    extract_context(&back)
}

/// A Context of which nothing is from the fuzzer: the "caller's current Context" that a rejected
/// NCCL frame or carrier must give back.
pub fn caller_context() -> Context {
    let mut carrier = Carrier::new();
    carrier.insert(
        "traceparent",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    );
    carrier.insert("baggage", "caller=yes");
    extract_context(&carrier)
}

/// Splits fuzzer bytes into header-like lines: `\n` separates lines, invalid UTF-8 is replaced.
pub fn lines(data: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(data)
        .split('\n')
        .map(str::to_owned)
        .collect()
}

/// Header names the structured targets pick from: the three lens reads, in several cases,
/// plus names lens must ignore.
pub const NAMES: [&str; 10] = [
    "traceparent",
    "tracestate",
    "baggage",
    "TraceParent",
    "TRACESTATE",
    "Baggage",
    "traceparent-bin",
    "x-other",
    "baggage",
    "traceparent",
];

/// Builds a header map from fuzzer bytes: records separated by `\n`, each a name-selector byte
/// (index into [`NAMES`]) followed by the raw value bytes. Values that `http` refuses are
/// skipped, as a server would have refused them.
pub fn header_map(data: &[u8]) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for record in data.split(|&b| b == b'\n') {
        let Some((&selector, value)) = record.split_first() else {
            continue;
        };
        let name = NAMES[usize::from(selector) % NAMES.len()];
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_bytes(value),
        ) else {
            continue;
        };
        headers.append(name, value);
    }
    headers
}

/// Panics unless a parsed baggage list is within the limits and its header parses back to the
/// same entries.
pub fn check_baggage_list(list: &BaggageList, limits: &Limits) {
    assert!(list.len() <= limits.baggage_members);
    assert!(list.header().len() <= limits.baggage_bytes);
    assert_eq!(list.is_empty(), list.header().is_empty());
    let again = BaggageList::parse([list.header()], limits, false);
    assert_eq!(
        again.entries(),
        list.entries(),
        "baggage header {:?}",
        list.header()
    );
    assert_eq!(again.header(), list.header());
}
