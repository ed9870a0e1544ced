//! The Ray helpers against the shared reference vectors: `extract_ray_context` over every
//! extract case (`extract_*` groups, and the `current_context` case of `extract_ray_context`),
//! `inject_ray_context` over every `serialize_context` case. Expectations come from
//! `lens-expected-public.json`; the cases where lens knowingly differs from Python are listed in
//! `DIFFERS` with the SPEC rows that explain them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lens_core::Carrier;
use lens_testkit::describe::reserialize;
use lens_testkit::fixtures::caller_context;
use lens_testkit::vectors::assert_differs_listed;
use lens_testkit::{
    active_context, assert_reserialized, assert_same_context, cases, check_context,
};
use lens_tonic::{extract_ray_context, inject_ray_context};
use serde_json::Value;

/// Cases of the groups run here whose lens expectation differs from recorded Python, with the
/// SPEC.md rows that explain each (as `lens-expected-public.json` gives them).
const DIFFERS: &[(&str, &[&str])] = &[
    ("ser-010", &["§9 flags: unknown bits masked"]),
    ("ser-013", &["§9/§5 all-zero ids: no traceparent"]),
    ("ser-014", &["§9/§5 all-zero ids: no traceparent"]),
    (
        "ser-020",
        &["§9/§3 space on inject: %20", "§9/§3 + in a value kept"],
    ),
    (
        "ser-022",
        &["§9/§3 space on inject: %20", "§9/§3 + in a value kept"],
    ),
    (
        "ser-026",
        &["§9/§3 space on inject: %20", "§9/§3 + in a value kept"],
    ),
    (
        "ser-028",
        &[
            "§9/§3 key taken literally",
            "§9/§3 non-token keys refused when set",
        ],
    ),
    ("ser-031", &["§9/§3 non-token keys refused when set"]),
    ("ser-037", &["§9/§3 member over 4096 kept"]),
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
    (
        "ext-bytes-022",
        &["§9/§4 strict JSON (NaN, Infinity, lone surrogates, depth 32, 64 KiB)"],
    ),
    (
        "ext-bytes-028",
        &["§4/§5 not a JSON object: caller's context"],
    ),
    (
        "ext-bytes-029",
        &["§4/§5 not a JSON object: caller's context"],
    ),
    (
        "ext-bytes-031",
        &["§4/§5 not a JSON object: caller's context"],
    ),
    (
        "ext-bytes-032",
        &["§4/§5 not a JSON object: caller's context"],
    ),
    (
        "ext-bytes-034",
        &["§9/§4 strict JSON (NaN, Infinity, lone surrogates, depth 32, 64 KiB)"],
    ),
    (
        "ext-bytes-035",
        &["§9/§4 strict JSON (NaN, Infinity, lone surrogates, depth 32, 64 KiB)"],
    ),
    (
        "ext-bytes-038",
        &["§9/§4 strict JSON (NaN, Infinity, lone surrogates, depth 32, 64 KiB)"],
    ),
    (
        "ext-bytes-040",
        &[
            "§9/§4 strict JSON (NaN, Infinity, lone surrogates, depth 32, 64 KiB)",
            "§4/§5 not a JSON object: caller's context",
        ],
    ),
];

/// The entries of [`DIFFERS`] whose id starts with `prefix`.
fn listed(prefix: &str) -> Vec<(&'static str, &'static [&'static str])> {
    DIFFERS
        .iter()
        .filter(|(id, _)| id.starts_with(prefix))
        .copied()
        .collect()
}

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
    assert_differs_listed(
        cases.iter().filter(|c| c.group.starts_with("extract_")),
        &listed("ext-"),
    );
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
    assert_differs_listed(
        cases.iter().filter(|c| c.group == "serialize_context"),
        &listed("ser-"),
    );
}
