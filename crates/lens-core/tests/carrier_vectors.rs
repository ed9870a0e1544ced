//! The JSON carrier against the reference vectors (`shared/vectors`, see its README.md).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use lens_core::carrier::Carrier;
use serde_json::Value;
use std::collections::HashMap;

const VECTORS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/vectors/");

/// Cases whose `lens_expected.deserialize_context.json` shows a key the carrier leaves out,
/// because it means the same as no key (the vectors' README says so in the case's note).
const SAME_AS_ABSENT: &[(&str, &str)] = &[(
    "ext-carrier_types-014",
    "an empty array holds no line: same as no key (SPEC §4)",
)];

fn load(name: &str) -> Value {
    let path = format!("{VECTORS}{name}");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "reference vectors missing: cannot read {path}: {e} (they must be present, not skipped)"
        )
    });
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path} is not JSON: {e}"))
}

fn cases(doc: &Value) -> &Vec<Value> {
    doc["cases"].as_array().expect("`cases` array")
}

/// Input bytes of every case of the recorded reference file, by id.
fn inputs() -> HashMap<String, Vec<u8>> {
    let reference = load("nemo-lens-public.json");
    cases(&reference)
        .iter()
        .filter_map(|case| {
            let b64 = case["input"]["bytes_b64"].as_str()?;
            let bytes = STANDARD.decode(b64).expect("input.bytes_b64 is base64");
            Some((case["id"].as_str().expect("id").to_owned(), bytes))
        })
        .collect()
}

#[test]
fn deserialize_context_cases_match_lens_expectations() {
    let inputs = inputs();
    let expected = load("lens-expected-public.json");
    let (mut rejected, mut accepted, mut pairs_checked) = (0, 0, 0);
    for case in cases(&expected) {
        let id = case["id"].as_str().expect("id");
        let Some(want) = case["lens_expected"].get("deserialize_context") else {
            continue;
        };
        let bytes = inputs
            .get(id)
            .unwrap_or_else(|| panic!("{id}: no input.bytes_b64 in nemo-lens-public.json"));
        let got = Carrier::from_json_bytes(bytes);
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
    let expected = load("lens-expected-public.json");
    let mut checked = 0;
    for case in cases(&expected) {
        if case["group"] != "serialize_context" {
            continue;
        }
        let id = case["id"].as_str().expect("id");
        let want = &case["lens_expected"];
        let utf8 = want["bytes_utf8"].as_str().expect("bytes_utf8");
        let b64 = STANDARD
            .decode(want["bytes_b64"].as_str().expect("bytes_b64"))
            .unwrap();
        assert_eq!(utf8.as_bytes(), b64, "{id}: bytes_utf8 and bytes_b64 agree");
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
        // Building the carrier from its pairs gives the same bytes (SPEC §6 encoding).
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
    // The bytes Python sent (which may differ from lens's, SPEC §9) are all accepted.
    let reference = load("nemo-lens-public.json");
    let mut checked = 0;
    for case in cases(&reference) {
        if case["group"] != "serialize_context" {
            continue;
        }
        let id = case["id"].as_str().expect("id");
        let bytes = STANDARD
            .decode(case["expected"]["bytes_b64"].as_str().expect("bytes_b64"))
            .unwrap();
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
