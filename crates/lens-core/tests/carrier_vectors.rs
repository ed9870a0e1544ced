//! The JSON carrier against the reference vectors (`shared/vectors`, see its README.md).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lens_core::carrier::Carrier;
use lens_testkit::{b64, cases};

/// Cases whose `lens_expected.deserialize_context.json` shows a key the carrier leaves out,
/// because it means the same as no key (the vectors' README says so in the case's note).
const SAME_AS_ABSENT: &[(&str, &str)] = &[(
    "ext-carrier_types-014",
    "an empty array holds no line: same as no key (docs/propagation-rules.md#carriers)",
)];

#[test]
fn deserialize_context_cases_match_lens_expectations() {
    let (mut rejected, mut accepted, mut pairs_checked) = (0, 0, 0);
    for case in cases() {
        let id = case.id.as_str();
        let Some(want) = case.lens().get("deserialize_context") else {
            continue;
        };
        let bytes = case.input_bytes();
        let got = Carrier::from_json_bytes(&bytes);
        match want["outcome"].as_str() {
            Some("none") => {
                assert!(got.is_err(), "{id}: expected rejection, got {got:?}");
                rejected += 1;
            }
            Some("value") => {
                let carrier = got.unwrap_or_else(|e| panic!("{id}: expected a carrier, got {e}"));
                let json = want["json"].as_str().expect("json");
                let encoded = String::from_utf8(carrier.to_json_bytes()).unwrap();
                if let Some((_, why)) = SAME_AS_ABSENT.iter().find(|(case, _)| *case == id) {
                    let carrier_of_want = Carrier::from_json_bytes(json.as_bytes()).unwrap();
                    assert_eq!(carrier, carrier_of_want, "{id}: {why}");
                    assert_eq!(encoded, "{}", "{id}: {why}");
                } else {
                    assert_eq!(encoded, json, "{id}: re-encoded carrier");
                }
                if let Some(want_pairs) = want.get("string_map_pairs") {
                    let want_pairs: Vec<(String, String)> =
                        serde_json::from_value(want_pairs.clone()).expect("pairs");
                    let got_pairs: Vec<(String, String)> = carrier
                        .iter()
                        .map(|(k, lines)| (k.to_owned(), lines[0].clone()))
                        .collect();
                    assert_eq!(got_pairs, want_pairs, "{id}: string_map_pairs");
                    pairs_checked += 1;
                }
                accepted += 1;
            }
            other => panic!("{id}: unknown deserialize_context outcome {other:?}"),
        }
    }
    println!(
        "deserialize_context: {rejected} rejected, {accepted} accepted ({pairs_checked} with string_map_pairs)"
    );
    assert!(
        rejected >= 20,
        "only {rejected} rejection cases found: vectors changed?"
    );
    assert!(
        accepted >= 100,
        "only {accepted} accepted cases found: vectors changed?"
    );
}

#[test]
fn serialize_context_bytes_round_trip() {
    let mut checked = 0;
    for case in cases() {
        if case.group != "serialize_context" {
            continue;
        }
        let id = case.id.as_str();
        let want = case.lens();
        let utf8 = want["bytes_utf8"].as_str().expect("bytes_utf8");
        let decoded = b64(want["bytes_b64"].as_str().expect("bytes_b64"));
        assert_eq!(
            utf8.as_bytes(),
            decoded,
            "{id}: bytes_utf8 and bytes_b64 agree"
        );
        let carrier = Carrier::from_json_bytes(utf8.as_bytes())
            .unwrap_or_else(|e| panic!("{id}: serialized bytes rejected: {e}"));
        assert_eq!(carrier.to_json_bytes(), utf8.as_bytes(), "{id}: round trip");
        let want_pairs: Vec<(String, String)> =
            serde_json::from_value(want["carrier_pairs"].clone()).expect("carrier_pairs");
        let got_pairs: Vec<(String, String)> = carrier
            .iter()
            .map(|(k, lines)| (k.to_owned(), lines[0].clone()))
            .collect();
        assert_eq!(got_pairs, want_pairs, "{id}: carrier_pairs");
        // Building the carrier from its pairs gives the same bytes (docs/propagation-rules.md#json-byte-format encoding).
        let built: Carrier = want_pairs.into_iter().collect();
        assert_eq!(built.to_json_bytes(), utf8.as_bytes(), "{id}: encoding");
        checked += 1;
    }
    println!("serialize_context: {checked} cases round-tripped");
    assert!(
        checked >= 30,
        "only {checked} serialize cases found: vectors changed?"
    );
}

#[test]
fn recorded_python_serialize_bytes_decode() {
    // The bytes Python sent (which may differ from lens's, docs/propagation-rules.md#differences-from-nemo-lens) are all accepted.
    let mut checked = 0;
    for case in cases() {
        if case.group != "serialize_context" {
            continue;
        }
        let id = case.id.as_str();
        let bytes = b64(case.python()["bytes_b64"].as_str().expect("bytes_b64"));
        let carrier = Carrier::from_json_bytes(&bytes)
            .unwrap_or_else(|e| panic!("{id}: Python's bytes rejected: {e}"));
        assert_eq!(
            carrier.to_json_bytes(),
            bytes,
            "{id}: Python's bytes re-encode"
        );
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} cases");
}
