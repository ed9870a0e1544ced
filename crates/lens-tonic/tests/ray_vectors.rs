//! The Ray helpers against the shared reference vectors: `extract_ray_context` over every
//! extract case (`extract_*` groups, and the `current_context` case of `extract_ray_context`),
//! `inject_ray_context` over every `serialize_context` case. Expectations come from
//! `lens-expected-public.json`; the cases where lens knowingly differs from Python are listed, with
//! the docs/propagation-rules.md rows that explain them, in `lens_testkit::vectors::SECTION_9` (checked here for these
//! groups).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lens_core::Carrier;
use lens_testkit::describe::reserialize;
use lens_testkit::fixtures::caller_context;
use lens_testkit::vectors::assert_section_9;
use lens_testkit::{
    active_context, assert_reserialized, assert_same_context, cases, check_context,
};
use lens_tonic::{extract_ray_context, inject_ray_context};
use serde_json::Value;

#[test]
fn extract_ray_context_matches_every_extract_case() {
    let cases = cases();
    let caller = caller_context();
    let _guard = caller.clone().attach();
    let mut ran = 0;
    for case in cases.iter().filter(|c| c.group.starts_with("extract_")) {
        let id = &case.id;
        // What a Ray actor receives: the carrier, or nothing when it could not be decoded.
        let carrier = Carrier::from_json_bytes(&case.input_bytes()).ok();
        let lens = case.lens();
        let parsed = lens["deserialize_context"]["outcome"] == "value";
        assert_eq!(carrier.is_some(), parsed, "{id}: carrier accepted");

        let cx = extract_ray_context(carrier.as_ref());
        let want = &lens["extract"];
        match want["outcome"].as_str().unwrap() {
            "current_context" => assert_same_context(id, &cx, &caller),
            "context" => {
                check_context(id, &cx, &want["context"]);
                let got = String::from_utf8(reserialize(&cx)).unwrap();
                assert_reserialized(id, &got, want["reserialized"].as_str().unwrap());
            }
            other => panic!("{id}: unexpected outcome {other}"),
        }
        ran += 1;
    }
    assert!(ran >= 100, "only {ran} extract cases ran");
    assert_section_9(cases.iter().filter(|c| c.group.starts_with("extract_")));
}

#[test]
fn extract_ray_context_none_gives_the_callers_context() {
    let mut ran = 0;
    for case in cases()
        .iter()
        .filter(|c| c.input()["function"] == "extract_ray_context")
    {
        let id = &case.id;
        assert_eq!(case.input()["carrier"], Value::Null, "{id}");
        let (active, _provider) = active_context(&case.input()["active"]);
        let _guard = active.attach();
        let cx = extract_ray_context(None);
        check_context(id, &cx, &case.lens()["context"]);
        ran += 1;
    }
    assert!(ran >= 1, "no extract_ray_context current_context case");
}

#[test]
fn inject_ray_context_matches_every_serialize_case() {
    let cases = cases();
    let mut ran = 0;
    for case in cases.iter().filter(|c| c.group == "serialize_context") {
        let id = &case.id;
        let (cx, _provider) = active_context(&case.input()["active"]);
        let carrier = {
            let _guard = cx.attach();
            inject_ray_context()
        };
        let lens = case.lens();
        let pairs: Vec<Value> = carrier
            .iter()
            .map(|(k, lines)| {
                assert_eq!(lines.len(), 1, "{id}: one line per key");
                serde_json::json!([k, lines[0]])
            })
            .collect();
        assert_eq!(
            Value::Array(pairs),
            lens["carrier_pairs"],
            "{id}: carrier pairs"
        );
        assert_eq!(
            String::from_utf8(carrier.to_json_bytes()).unwrap(),
            lens["bytes_utf8"].as_str().unwrap(),
            "{id}: the bytes Python's json.dumps gives"
        );
        ran += 1;
    }
    assert!(ran >= 30, "only {ran} serialize cases ran");
    assert_section_9(cases.iter().filter(|c| c.group == "serialize_context"));
}
