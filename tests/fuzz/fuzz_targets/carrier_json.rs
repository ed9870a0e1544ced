//! `Carrier::from_json_bytes` on arbitrary bytes: no panic, no unbounded recursion; an accepted
//! carrier serialises to ASCII bytes (Python `json.dumps`) that decode to the same carrier; the
//! Context extracted from it round-trips, within the limits; `W3cPropagator::extract_json` (no
//! `Carrier` built) accepts and rejects exactly the same bytes and extracts the same Context.
#![no_main]

use lens_core::{Carrier, Limits, MapCarrier, W3cPropagator, extract_context};
use opentelemetry::Context;
use opentelemetry::propagation::TextMapPropagator;
use lens_fuzz::{check_roundtrip, via_headers, via_json};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limits = Limits::DEFAULT;
    let parsed = Carrier::from_json_bytes(data);
    let propagator = W3cPropagator::new();
    let direct = propagator.extract_json(&Context::new(), data);
    match (&parsed, &direct) {
        (Ok(carrier), Ok(cx)) => {
            let via_carrier = propagator.extract_with_context(&Context::new(), carrier);
            let (mut a, mut b) = (
                std::collections::BTreeMap::new(),
                std::collections::BTreeMap::new(),
            );
            propagator.inject_context(cx, &mut MapCarrier(&mut a));
            propagator.inject_context(&via_carrier, &mut MapCarrier(&mut b));
            assert_eq!(a, b, "extract_json and the Carrier path differ");
        }
        (Err(a), Err(b)) => assert_eq!(a, b),
        _ => panic!("extract_json and Carrier::from_json_bytes disagree on acceptance"),
    }
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
