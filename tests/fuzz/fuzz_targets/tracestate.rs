//! `TraceStateList::parse` on arbitrary lines (`\n`-separated): no panic; an accepted list holds
//! at most 32 members and 8192 bytes, unique keys, and its header parses back to itself; a whole
//! extract (valid traceparent + these tracestate lines) round-trips through headers and JSON.
#![no_main]

use lens_core::tracestate::TraceStateList;
use lens_core::{Carrier, Limits, extract_context};
use lens_fuzz::{check_roundtrip, lines, via_headers, via_json};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let lines = lines(data);
    let limits = Limits::DEFAULT;
    if let Ok(list) = TraceStateList::parse(lines.iter().map(String::as_str), &limits) {
        assert!(list.len() <= limits.tracestate_members);
        assert!(list.header().len() <= limits.tracestate_bytes);
        assert_eq!(list.members().count(), list.len());
        let keys: Vec<&str> = list.members().map(|(k, _)| k).collect();
        for (i, k) in keys.iter().enumerate() {
            assert!(
                !keys[i + 1..].contains(k),
                "key {k:?} twice in {:?}",
                list.header()
            );
        }
        let again = TraceStateList::parse([list.header()], &limits).expect("reparse");
        assert_eq!(again.header(), list.header());
        assert_eq!(again.len(), list.len());
        // What opentelemetry's TraceState holds is a subset, in order.
        let otel = list.to_otel();
        assert!(list.matches_otel(&otel));
    }
    let mut carrier = Carrier::new();
    carrier.insert(
        "traceparent",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    );
    for line in &lines {
        carrier.append("tracestate", line.as_str());
    }
    let cx = extract_context(&carrier);
    check_roundtrip(&cx, via_headers);
    check_roundtrip(&cx, via_json);
});
