//! `BaggageList::parse` on arbitrary lines (`\n`-separated; the first byte's low bit turns
//! `plus_as_space` on): no panic; at most 180 members and an 8192-byte header, which parses back
//! to the same entries; a whole extract round-trips through headers and JSON.
#![no_main]

use lens_core::baggage::BaggageList;
use lens_core::{Carrier, Limits, extract_context};
use lens_fuzz::{check_baggage_list, check_roundtrip, lines, via_headers, via_json};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let lines = lines(rest);
    let limits = Limits::DEFAULT;
    let list = BaggageList::parse(lines.iter().map(String::as_str), &limits, flags & 1 == 1);
    check_baggage_list(&list, &limits);
    // Tighter limits hold too.
    let small = Limits::DEFAULT
        .with_baggage_members(3)
        .with_baggage_bytes(64);
    let short = BaggageList::parse(lines.iter().map(String::as_str), &small, false);
    check_baggage_list(&short, &small);

    let mut carrier = Carrier::new();
    for line in &lines {
        carrier.append("baggage", line.as_str());
    }
    let cx = extract_context(&carrier);
    check_roundtrip(&cx, via_headers);
    check_roundtrip(&cx, via_json);
});
