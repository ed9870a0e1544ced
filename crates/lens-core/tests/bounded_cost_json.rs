//! A 10 MiB JSON carrier (NCCL bytes, remote calls) is rejected without allocating in proportion
//! to it; a carrier just within the 64 KiB limit, however it is shaped (deep nesting, many keys,
//! escapes), allocates at most a constant times that limit (16 at peak, 32 in total).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod bounded_cost_support;

use bounded_cost_support::measure;
use lens_core::{Carrier, Limits, extract_context};

const MIB: usize = 1 << 20;

/// Hostile JSON shapes of about `n` bytes.
fn shapes(n: usize) -> Vec<(&'static str, Vec<u8>)> {
    let mut many_keys = b"{".to_vec();
    let mut i = 0;
    while many_keys.len() + 16 < n {
        if i > 0 {
            many_keys.extend_from_slice(b", ");
        }
        many_keys.extend_from_slice(format!("\"k{i}\": 1").as_bytes());
        i += 1;
    }
    many_keys.push(b'}');
    let long_string = format!(
        "{{\"baggage\": \"k={}\"}}",
        "x".repeat(n.saturating_sub(20))
    );
    let escapes = format!(
        "{{\"baggage\": \"{}\"}}",
        "\\u00e9".repeat(n.saturating_sub(20) / 6)
    );
    let depth = n / 2;
    let deep = [
        b"{\"a\": ".to_vec(),
        b"[".repeat(depth - 8),
        b"]".repeat(depth - 8),
        b"}".to_vec(),
    ]
    .concat();
    let lines = format!(
        "{{\"baggage\": [{}]}}",
        vec!["\"a=1\""; n.saturating_sub(20) / 7].join(", ")
    );
    vec![
        ("many keys", many_keys),
        ("one long string", long_string.into_bytes()),
        ("escapes", escapes.into_bytes()),
        ("deep nesting", deep),
        ("many baggage lines", lines.into_bytes()),
    ]
}

#[test]
fn a_10_mib_carrier_is_rejected_without_allocating_for_it() {
    let _ = Carrier::from_json_bytes(b"{}");
    for (shape, bytes) in shapes(10 * MIB) {
        assert!(bytes.len() > 10 * MIB - 64, "{shape}");
        let mut too_large = false;
        let allocated = measure(|| {
            let result = Carrier::from_json_bytes(&bytes);
            too_large = result.as_ref().is_err_and(|e| e.is_too_large());
            result
        });
        assert!(too_large, "{shape}");
        assert!(allocated.total <= 1024, "{shape}: {allocated:?}");
    }
}

#[test]
fn carriers_within_the_limit_allocate_a_constant_times_the_limit() {
    let limits = Limits::DEFAULT;
    let _ = Carrier::from_json_bytes(b"{}");
    for (shape, bytes) in shapes(limits.carrier_bytes - 64) {
        assert!(bytes.len() <= limits.carrier_bytes, "{shape}");
        let allocated = measure(|| {
            let carrier = Carrier::from_json_bytes(&bytes);
            let cx = carrier.as_ref().ok().map(|c| extract_context(c));
            (carrier, cx)
        });
        println!("{shape}: {} bytes, {allocated:?}", bytes.len());
        // Measured worst case (one `String` per key or line, keys indexed for duplicates): many
        // tiny keys, about 11 times the limit at peak and 21 times in total.
        assert!(
            allocated.peak <= 16 * limits.carrier_bytes,
            "{shape}: {allocated:?}"
        );
        assert!(
            allocated.total <= 32 * limits.carrier_bytes,
            "{shape}: {allocated:?}"
        );
    }
}
