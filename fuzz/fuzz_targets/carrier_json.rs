//! `Carrier::from_json_bytes` on arbitrary bytes: no panic, no unbounded recursion; an accepted
//! carrier serialises to ASCII bytes (Python `json.dumps`) that decode to the same carrier; the
//! Context extracted from it round-trips, within the limits.
#![no_main]

use lens_core::{Carrier, Limits, extract_context};
use lens_fuzz::{check_roundtrip, via_headers, via_json};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limits = Limits::DEFAULT;
    let parsed = Carrier::from_json_bytes(data);
    if data.len() > limits.carrier_bytes {
        assert!(
            parsed.is_err(),
            "a carrier over the byte limit was accepted"
        );
    }
    let Ok(carrier) = parsed else {
        return;
    };
    let bytes = carrier.to_json_bytes();
    assert!(bytes.is_ascii());
    if bytes.len() <= limits.carrier_bytes {
        let back = Carrier::from_json_bytes(&bytes).expect("lens reads what it writes");
        assert_eq!(back, carrier);
    }
    let cx = extract_context(&carrier);
    check_roundtrip(&cx, via_headers);
    check_roundtrip(&cx, via_json);
});
