//! `W3cPropagator::extract_json` accepts and rejects exactly what `Carrier::from_json_bytes`
//! does, and extracts exactly what extracting from that `Carrier` gives.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod extract_support;
use extract_support::{TP, observe};

use lens_core::{Carrier, Limits, W3cPropagator};
use opentelemetry::Context;
use opentelemetry::propagation::TextMapPropagator;
use proptest::prelude::*;

fn same_as_carrier(json: &[u8]) {
    let propagator = W3cPropagator::new();
    let direct = propagator.extract_json(&Context::new(), json);
    let via_carrier = Carrier::from_json_bytes_with_limits(json, &Limits::DEFAULT)
        .map(|carrier| propagator.extract_with_context(&Context::new(), &carrier));
    match (direct, via_carrier) {
        (Ok(a), Ok(b)) => assert_eq!(
            observe(&a),
            observe(&b),
            "{}",
            String::from_utf8_lossy(json)
        ),
        (Err(a), Err(b)) => assert_eq!(a, b, "{}", String::from_utf8_lossy(json)),
        (a, b) => panic!(
            "{}: extract_json {:?}, carrier {:?}",
            String::from_utf8_lossy(json),
            a.is_ok(),
            b.is_ok()
        ),
    }
}

#[test]
fn fixed_cases_match_the_carrier_path() {
    let cases = [
        format!(r#"{{"traceparent": "{TP}", "tracestate": "a=1", "baggage": "k=v"}}"#),
        format!(r#"{{"traceparent": "{TP}", "baggage": ["a=1", "b=hello%20world"]}}"#),
        // Escapes in keys and values are decoded.
        format!(r#"{{"trace\u0070arent": "{TP}", "baggage": "k=caf\u00e9,x=\"q\""}}"#),
        // The last value of a repeated key wins; an ignored type makes the key absent.
        format!(r#"{{"baggage": "a=1", "traceparent": "{TP}", "baggage": "b=2"}}"#),
        format!(r#"{{"baggage": "a=1", "traceparent": "{TP}", "baggage": 3}}"#),
        format!(r#"{{"traceparent": ["{TP}", 1], "baggage": []}}"#),
        format!(r#"{{"other": {{"deep": [1, 2, {{"x": null}}]}}, "traceparent": "{TP}"}}"#),
        "{}".to_owned(),
        " { \"baggage\" : \"k=v\" } ".to_owned(),
        // Rejected whole.
        "null".to_owned(),
        "[1]".to_owned(),
        format!(r#"{{"traceparent": "{TP}""#),
        format!(r#"{{"traceparent": "{TP}"}} x"#),
        r#"{"baggage": "\ud800"}"#.to_owned(),
        r#"{"baggage": NaN}"#.to_owned(),
        "\u{feff}{}".to_owned(),
    ];
    for case in &cases {
        same_as_carrier(case.as_bytes());
    }
    same_as_carrier(b"{\"baggage\": \"\xff\"}");
    let deep = format!("{{\"a\": {}1{}}}", "[".repeat(40), "]".repeat(40));
    same_as_carrier(deep.as_bytes());
    let big = format!(r#"{{"baggage": "{}"}}"#, "k=v,".repeat(20_000));
    same_as_carrier(big.as_bytes());
}

fn carrier_strategy() -> impl Strategy<Value = Vec<(String, Vec<String>)>> {
    let key = prop_oneof![
        Just("traceparent".to_owned()),
        Just("tracestate".to_owned()),
        Just("baggage".to_owned()),
        "[a-z]{1,8}",
    ];
    let line = prop_oneof![Just(TP.to_owned()), "[ -~é\u{1F600}\\\\\"]{0,24}"];
    proptest::collection::vec((key, proptest::collection::vec(line, 0..3)), 0..6)
}

proptest! {
    #[test]
    fn any_carrier_matches_the_carrier_path(entries in carrier_strategy(), cut in 0usize..400) {
        let mut carrier = Carrier::new();
        for (key, lines) in &entries {
            for line in lines {
                carrier.append(key.as_str(), line.as_str());
            }
        }
        let json = carrier.to_json_bytes();
        same_as_carrier(&json);
        // And a truncated copy, which is mostly rejected.
        same_as_carrier(&json[..cut.min(json.len())]);
    }

    #[test]
    fn arbitrary_bytes_match_the_carrier_path(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        same_as_carrier(&bytes);
    }
}
