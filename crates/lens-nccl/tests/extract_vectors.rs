//! `extract_nccl_bytes` vectors (raw bytes, some not UTF-8 or not JSON): `deserialize_context` and
//! `extract_nccl_context`; the extract groups' `input.bytes_b64` through `extract_nccl_context`;
//! and the `current_context` fallbacks.
//!
//! Where lens knowingly differs from Python (docs/propagation-rules.md#carriers, docs/propagation-rules.md#extract-and-inject, docs/propagation-rules.md#differences-from-nemo-lens), the expectation comes from
//! `lens-expected-public.json`; the `extract_nccl_bytes` ones are listed with their docs/propagation-rules.md rows in
//! `lens_testkit::vectors::SECTION_9`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use lens_testkit::vectors::assert_section_9;

use common::{assert_same_context, b64, caller_context, cases, cases_of, check_extract};
use opentelemetry::Context;
use serde_json::Value;

#[test]
fn differing_cases_are_the_listed_ones() {
    assert_section_9(&cases_of("extract_nccl_bytes"));
}

/// Cases with an empty array value, which the carrier holds as no key at all (docs/propagation-rules.md#carriers; the
/// case's note in lens-expected-public.json): compared with those keys left out.
const EMPTY_ARRAY_CASES: &[&str] = &["ext-carrier_types-014"];

fn without_empty_arrays(json: &str) -> String {
    let mut map: serde_json::Map<String, Value> = serde_json::from_str(json).unwrap();
    map.retain(|_, v| v.as_array().is_none_or(|a| !a.is_empty()));
    if map.is_empty() {
        return "{}".to_owned();
    }
    let carrier: lens_core::Carrier = map
        .into_iter()
        .map(|(k, v)| (k, v.as_str().unwrap().to_owned()))
        .collect();
    String::from_utf8(carrier.to_json_bytes()).unwrap()
}

fn check_deserialize(id: &str, bytes: &[u8], want: &Value) {
    let got = lens_nccl::deserialize_context(bytes);
    match want["outcome"].as_str().unwrap() {
        "none" => assert!(got.is_none(), "{id}: expected None, got {got:?}"),
        "value" => {
            let carrier = got.unwrap_or_else(|| panic!("{id}: expected a carrier"));
            let mut want_json = want["json"].as_str().unwrap().to_owned();
            if EMPTY_ARRAY_CASES.contains(&id) {
                want_json = without_empty_arrays(&want_json);
            }
            assert_eq!(
                String::from_utf8_lossy(&carrier.to_json_bytes()),
                want_json,
                "{id}: carrier json"
            );
            if let Some(pairs) = want.get("string_map_pairs").and_then(Value::as_array) {
                let got: Vec<(&str, &str)> = carrier
                    .iter()
                    .map(|(k, lines)| {
                        assert_eq!(lines.len(), 1, "{id}: one line per key");
                        (k, lines[0].as_str())
                    })
                    .collect();
                let want: Vec<(&str, &str)> = pairs
                    .iter()
                    .map(|p| (p[0].as_str().unwrap(), p[1].as_str().unwrap()))
                    .collect();
                assert_eq!(got, want, "{id}: string map pairs");
            }
        }
        other => panic!("{id}: unexpected deserialize outcome {other}"),
    }
}

#[test]
fn extract_nccl_bytes_cases() {
    let caller = caller_context();
    let _guard = caller.clone().attach();
    let mut checked = 0;
    for case in cases_of("extract_nccl_bytes") {
        let bytes = b64(case.public["input"]["bytes_b64"].as_str().unwrap());
        check_deserialize(&case.id, &bytes, &case.lens()["deserialize_context"]);
        let cx = lens_nccl::extract_nccl_context(&bytes);
        check_extract(&case.id, &cx, &caller, &case.lens()["extract"]);
        checked += 1;
    }
    assert!(checked >= 25, "only {checked} extract_nccl_bytes cases");
}

/// Every extract group holds for `extract_nccl_context(bytes)` too (the vectors' README).
#[test]
fn extract_groups_through_nccl_bytes() {
    let caller = caller_context();
    let _guard = caller.clone().attach();
    let mut checked = 0;
    for case in cases() {
        if !case.group.starts_with("extract_") || case.group == "extract_nccl_bytes" {
            continue;
        }
        let Some(b) = case.public["input"]
            .get("bytes_b64")
            .and_then(Value::as_str)
        else {
            continue;
        };
        let cx = lens_nccl::extract_nccl_context(&b64(b));
        if let Some(d) = case.lens().get("deserialize_context") {
            check_deserialize(&case.id, &b64(b), d);
        }
        check_extract(&case.id, &cx, &caller, &case.lens()["extract"]);
        checked += 1;
    }
    assert!(checked >= 100, "only {checked} extract cases with bytes");
}

/// `current_context` cases: bytes that are rejected give the caller's Context; `{}` gives an
/// empty Context; `extract_context` never inherits the caller's span or baggage.
/// (`extract_ray_context` belongs to the remote-call crate and is not checked here.)
#[test]
fn current_context_cases() {
    let mut checked = 0;
    for case in cases_of("current_context") {
        let input = &case.public["input"];
        let (caller, _provider) = common::active_context(&input["active"]);
        let _guard = caller.clone().attach();
        let cx = match input["function"].as_str().unwrap() {
            "extract_nccl_context" => {
                lens_nccl::extract_nccl_context(&b64(input["bytes_b64"].as_str().unwrap()))
            }
            "extract_context" => {
                let json = serde_json::to_vec(&input["carrier"]).unwrap();
                let carrier = lens_core::Carrier::from_json_bytes(&json).unwrap();
                lens_core::extract_context(&carrier)
            }
            _ => continue,
        };
        common::check_context(&case.id, &cx, &case.lens()["context"]);
        checked += 1;
    }
    assert!(checked >= 3, "only {checked} current_context cases");
}

/// With nothing attached, rejected bytes give the (empty) root Context, not a panic.
#[test]
fn rejected_bytes_without_a_caller_context() {
    let cx = lens_nccl::extract_nccl_context(b"\xff{");
    assert_same_context("root", &cx, &Context::new());
}
