//! Every lens-core-relevant case of the recorded NeMo Lens vectors (`../shared/vectors/`):
//! the extract groups and the inject group, checked against what SPEC.md expects of lens
//! (`lens-expected-public.json`). Cases where lens knowingly differs from Python are listed in
//! [`SPEC_SECTION_9`] with the SPEC rows that explain them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use lens_core::{Carrier, MapCarrier, extract_context, inject_context_from};
use lens_testkit::describe::reserialize;
use lens_testkit::vectors::{assert_differs_listed, is_carrier_extract_group};
use lens_testkit::{Case, active_context, assert_reserialized, cases, check_context, pairs};
use opentelemetry::Context;
use std::collections::{BTreeMap, HashMap};

/// Cases of the groups checked here whose lens expectation differs from the recorded Python
/// value, with the SPEC.md §9 rows that explain each. The test asserts this list is exactly what
/// the expectation file marks, rows included, so neither can drift.
const SPEC_SECTION_9: &[(&str, &[&str])] = &[
    ("inj-005", &["§9/§3 member over 4096 kept"]),
    ("ext-valid-005", &["§9/§3 + in a value kept"]),
    ("ext-valid-011", &["§9 flags: unknown bits masked"]),
    ("ext-valid-014", &["§9 flags: unknown bits masked"]),
    (
        "ext-traceparent-037",
        &["§9/§1 trailing \\n / control characters: invalid"],
    ),
    (
        "ext-traceparent-038",
        &["§9/§1 trailing \\n / control characters: invalid"],
    ),
    (
        "ext-traceparent-044",
        &["§9/§1 trailing \\n / control characters: invalid"],
    ),
    ("ext-traceparent-053", &["§9/§8 traceparent 512 bytes"]),
    ("ext-tracestate-014", &["§9/§2 tracestate W3C key grammar"]),
    (
        "ext-tracestate-034",
        &["§9/§2 repeated tracestate key: first kept"],
    ),
    ("ext-baggage-004", &["§9/§3 space on inject: %20"]),
    ("ext-baggage-007", &["§9/§3 key taken literally"]),
    ("ext-baggage-008", &["§9/§3 key taken literally"]),
    ("ext-baggage-016", &["§9/§3 properties as metadata"]),
    ("ext-baggage-019", &["§9/§3 properties as metadata"]),
    ("ext-baggage-035", &["§9/§3 key taken literally"]),
    (
        "ext-baggage-037",
        &[
            "§9/§3 space on inject: %20",
            "§9/§3 encoded spaces at the ends of a value kept",
        ],
    ),
    (
        "ext-baggage-038",
        &[
            "§9/§3 space on inject: %20",
            "§9/§3 encoded spaces at the ends of a value kept",
        ],
    ),
    ("ext-baggage-040", &["§9/§3 member over 4096 kept"]),
    (
        "ext-baggage-044",
        &["§9/§3 limits on the header lens would send"],
    ),
    (
        "ext-baggage-046",
        &["§9/§3 limits on the header lens would send"],
    ),
    (
        "ext-baggage-047",
        &["§9/§3 limits on the header lens would send"],
    ),
    (
        "ext-baggage-049",
        &[
            "§9/§3 baggage lines: one list",
            "§9/§4 JSON value of another type ignored",
        ],
    ),
    (
        "ext-carrier_types-001",
        &[
            "§9/§1 differing traceparent lines: invalid",
            "§9/§4 JSON value of another type ignored",
        ],
    ),
    (
        "ext-carrier_types-005",
        &["§9/§4 JSON value of another type ignored"],
    ),
    (
        "ext-carrier_types-007",
        &["§9/§4 JSON value of another type ignored"],
    ),
    (
        "ext-carrier_types-008",
        &["§9/§4 JSON value of another type ignored"],
    ),
    (
        "ext-carrier_types-010",
        &["§9/§4 JSON value of another type ignored"],
    ),
];

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
    assert_differs_listed(
        cases
            .iter()
            .filter(|c| is_carrier_extract_group(&c.group) || c.group == "inject_context"),
        SPEC_SECTION_9,
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
