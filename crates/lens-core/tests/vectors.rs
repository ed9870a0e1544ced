//! Every lens-core-relevant case of the recorded NeMo Lens vectors (`../shared/vectors/`):
//! the extract groups and the inject group, checked against what docs/propagation-rules.md expects of lens
//! (`lens-expected-public.json`). Cases where lens knowingly differs from Python are listed, with
//! the docs/propagation-rules.md rows that explain them, in `lens_testkit::vectors::SECTION_9`; the test checks that
//! list for these groups against the file, rows included, so neither can drift.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use lens_core::{Carrier, MapCarrier, extract_context, inject_context_from};
use lens_testkit::describe::reserialize;
use lens_testkit::vectors::{assert_section_9, is_carrier_extract_group};
use lens_testkit::{Case, active_context, assert_reserialized, cases, check_context, pairs};
use opentelemetry::Context;
use std::collections::{BTreeMap, HashMap};

fn extract_cases() -> Vec<Case> {
    cases()
        .into_iter()
        .filter(|c| is_carrier_extract_group(&c.group))
        .collect()
}

fn reserialized(cx: &Context) -> String {
    String::from_utf8(reserialize(cx)).unwrap()
}

#[test]
fn section_9_list_matches_the_expectation_file() {
    let cases = cases();
    assert_section_9(
        cases
            .iter()
            .filter(|c| is_carrier_extract_group(&c.group) || c.group == "inject_context"),
    );
}

#[test]
fn extract_cases_match_the_spec_expectations() {
    let mut checked = 0;
    for case in extract_cases() {
        let id = &case.id;
        let want = &case.lens()["extract"];
        let parsed = Carrier::from_json_bytes(&case.input_bytes());
        if want["outcome"] == "current_context" {
            assert!(parsed.is_err(), "{id}: carrier should be rejected");
            checked += 1;
            continue;
        }
        assert_eq!(want["outcome"], "context", "{id}");
        let carrier = parsed.unwrap_or_else(|e| panic!("{id}: carrier rejected: {e}"));
        let cx = extract_context(&carrier);
        // The span context, the tracestate lens sends, the baggage pairs in order.
        check_context(id, &cx, &want["context"]);
        assert_reserialized(
            id,
            &reserialized(&cx),
            want["reserialized"].as_str().unwrap(),
        );
        checked += 1;
    }
    println!("checked {checked} extract cases");
    assert!(checked >= 100, "only {checked} extract cases found");
}

#[test]
fn string_map_carriers_extract_like_the_json_carrier() {
    let mut checked = 0;
    for case in extract_cases() {
        if case.input()["carrier_is_string_map"] != true {
            continue;
        }
        let id = &case.id;
        let want = &case.lens()["extract"];
        if want["outcome"] != "context" {
            continue;
        }
        let map: HashMap<String, String> = case.input()["carrier"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
            .collect();
        let tree: BTreeMap<String, String> = map.clone().into_iter().collect();
        for cx in [
            extract_context(&MapCarrier(&map)),
            extract_context(&MapCarrier(&tree)),
        ] {
            check_context(id, &cx, &want["context"]);
            let want_json = want["reserialized"].as_str().unwrap();
            assert_reserialized(id, &reserialized(&cx), want_json);
        }
        checked += 1;
    }
    assert!(checked >= 80, "only {checked} string-map cases found");
}

#[test]
fn inject_cases_match_the_spec_expectations() {
    let mut checked = 0;
    for case in cases().iter().filter(|c| c.group == "inject_context") {
        let id = &case.id;
        let (cx, _provider) = active_context(&case.input()["active"]);
        let mut carrier = Carrier::new();
        for (k, val) in pairs(&case.input()["carrier_before_pairs"]) {
            carrier.insert(k, val);
        }
        inject_context_from(&cx, &mut carrier);
        let after: Vec<(String, String)> = carrier
            .iter()
            .map(|(k, lines)| (k.to_owned(), lines.join(",")))
            .collect();
        let want = pairs(&case.lens()["carrier_after_pairs"]);
        assert_eq!(after, want, "{id}");
        checked += 1;
    }
    assert!(checked >= 4);
}
