//! A whole extract over an `http::HeaderMap` with repeated lines, names in any case, and names
//! lens must ignore (see `lens_fuzz::header_map`): no panic; the Context round-trips through a
//! fresh HeaderMap and the JSON carrier, within the limits.
#![no_main]

use lens_core::{HeaderCarrier, extract_context};
use lens_fuzz::{check_roundtrip, header_map, via_headers, via_json};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let headers = header_map(data);
    let cx = extract_context(&HeaderCarrier(&headers));
    check_roundtrip(&cx, via_headers);
    check_roundtrip(&cx, via_json);
});
