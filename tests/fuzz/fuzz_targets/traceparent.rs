//! `TraceParent::parse` on arbitrary text: no panic; a value it accepts encodes to a 55-byte
//! version-00 header that parses back to the same ids and the kept flags; a whole extract with
//! that traceparent round-trips through HTTP headers and the JSON carrier.
#![no_main]

use lens_core::traceparent::TraceParent;
use lens_core::{Carrier, Limits, extract_context};
use lens_fuzz::{TRACEPARENT_LEN, check_roundtrip, via_headers, via_json};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(value) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = TraceParent::parse(value);
    if value.len() > Limits::DEFAULT.traceparent_bytes {
        assert!(parsed.is_err(), "a value over 512 bytes was accepted");
    }
    if let Ok(tp) = &parsed {
        let header = tp.to_header_string();
        assert_eq!(header.len(), TRACEPARENT_LEN);
        assert!(header.starts_with("00-"));
        let back = TraceParent::parse(&header).expect("lens parses what it writes");
        assert_eq!(back.trace_id, tp.trace_id);
        assert_eq!(back.parent_id, tp.parent_id);
        assert_eq!(
            back.flags,
            tp.flags & 0x03,
            "only sampled and random are sent on"
        );
        assert_eq!(back.to_header_string(), header);
    }
    let mut carrier = Carrier::new();
    carrier.insert("traceparent", value);
    let cx = extract_context(&carrier);
    use opentelemetry::trace::TraceContextExt;
    assert_eq!(cx.span().span_context().is_valid(), parsed.is_ok());
    check_roundtrip(&cx, via_headers);
    check_roundtrip(&cx, via_json);
});
