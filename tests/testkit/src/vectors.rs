//! The shared reference vectors (`../shared/vectors/`, see its README.md): the recorded NeMo Lens
//! cases (`nemo-lens-public.json`) and what docs/propagation-rules.md expects of lens for each
//! (`lens-expected-public.json`). A missing or unreadable file panics: tests never skip them.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::Value;

/// The folder of the vector files, from any crate of `crates/`.
pub const VECTORS_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/vectors/");

/// The recorded Python cases.
pub const PUBLIC: &str = "nemo-lens-public.json";

/// What docs/propagation-rules.md expects of lens for every recorded case (same ids, same order).
pub const EXPECTED: &str = "lens-expected-public.json";

/// A vector file of [`VECTORS_DIR`] as JSON; panics (fails the test) when missing or not JSON.
pub fn load(name: &str) -> Value {
    let path = format!("{VECTORS_DIR}{name}");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!("the shared vectors are required: cannot read {path}: {e} (never skipped)")
    });
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("vector file {path} is not JSON: {e}"))
}

/// One case: the recorded Python case and lens's expectation for it.
#[derive(Clone, Debug)]
pub struct Case {
    /// The case id (`ser-001`, `ext-baggage-016`, ...).
    pub id: String,
    /// The case group (`serialize_context`, `extract_baggage`, ...).
    pub group: String,
    /// The case of `nemo-lens-public.json` (`input`, Python's `expected`).
    pub public: Value,
    /// The case of `lens-expected-public.json` (`lens_expected`, `differs_from_python`, ...).
    pub expected: Value,
}

impl Case {
    /// The recorded input (`input`).
    pub fn input(&self) -> &Value {
        &self.public["input"]
    }

    /// What Python gave (`expected` of the recorded file).
    pub fn python(&self) -> &Value {
        &self.public["expected"]
    }

    /// What docs/propagation-rules.md expects of lens (`lens_expected`).
    pub fn lens(&self) -> &Value {
        &self.expected["lens_expected"]
    }

    /// `input.bytes_b64`, decoded; panics when the case has none.
    pub fn input_bytes(&self) -> Vec<u8> {
        let encoded = self.input()["bytes_b64"]
            .as_str()
            .unwrap_or_else(|| panic!("{}: no input.bytes_b64", self.id));
        b64(encoded)
    }

    /// Whether lens's expectation differs from the recorded Python value (docs/propagation-rules.md#differences-from-nemo-lens, docs/propagation-rules.md#carriers, docs/propagation-rules.md#extract-and-inject).
    pub fn differs_from_python(&self) -> bool {
        self.expected["differs_from_python"].as_bool().unwrap()
    }

    /// The docs/propagation-rules.md rows that explain a difference from Python, in the file's order.
    pub fn spec_rows(&self) -> Vec<String> {
        self.expected["spec_rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_owned())
            .collect()
    }

    /// The expectation's `note`, where it has one.
    pub fn note(&self) -> Option<&str> {
        self.expected["note"].as_str()
    }
}

/// Every case, in file order (the two files are checked to line up, id by id).
pub fn cases() -> Vec<Case> {
    let public = load(PUBLIC);
    let expected = load(EXPECTED);
    let public = public["cases"].as_array().expect("public cases");
    let expected = expected["cases"].as_array().expect("expected cases");
    assert_eq!(
        public.len(),
        expected.len(),
        "the vector files differ in length"
    );
    assert!(!public.is_empty(), "no cases in the vector files");
    public
        .iter()
        .zip(expected)
        .map(|(p, e)| {
            let id = p["id"].as_str().expect("id").to_owned();
            assert_eq!(e["id"].as_str(), Some(id.as_str()), "case order differs");
            Case {
                id,
                group: p["group"].as_str().expect("group").to_owned(),
                public: p.clone(),
                expected: e.clone(),
            }
        })
        .collect()
}

/// The cases of one group, in file order.
pub fn cases_of(group: &str) -> Vec<Case> {
    cases().into_iter().filter(|c| c.group == group).collect()
}

/// Whether `group` is one of the extract groups whose `input.carrier` is a JSON object
/// (`extract_valid`, `extract_traceparent`, `extract_tracestate`, `extract_baggage`,
/// `extract_carrier_types`; not `extract_nccl_bytes`).
pub fn is_carrier_extract_group(group: &str) -> bool {
    group.starts_with("extract_") && group != "extract_nccl_bytes"
}

/// Standard base64, decoded; panics on bad input.
pub fn b64(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .unwrap_or_else(|e| panic!("bad base64 {s:?}: {e}"))
}

/// `[[k, v], ...]` as pairs of strings; panics on anything else.
pub fn pairs(v: &Value) -> Vec<(String, String)> {
    v.as_array()
        .unwrap_or_else(|| panic!("expected [[k, v], ...], got {v}"))
        .iter()
        .map(|p| {
            (
                p[0].as_str().unwrap().to_owned(),
                p[1].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Every case that `lens-expected-public.json` marks as differing from the recorded Python value,
/// with the docs/propagation-rules.md rows that explain it (§9, and §4/§5 for carriers that are not a JSON object),
/// in file order. Kept by hand: `tests/vectors_agree.rs` checks it against the file, and each
/// vector test checks the part for its groups with [`assert_section_9`].
pub const SECTION_9: &[(&str, &[&str])] = &[
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

/// Asserts that the cases among `cases` that `lens-expected-public.json` marks as differing from
/// Python are exactly the ones [`SECTION_9`] lists for them, with the same rows.
pub fn assert_section_9<'a>(cases: impl IntoIterator<Item = &'a Case>) {
    let cases: Vec<&Case> = cases.into_iter().collect();
    let listed: Vec<(&str, &[&str])> = SECTION_9
        .iter()
        .filter(|(id, _)| cases.iter().any(|c| c.id == *id))
        .copied()
        .collect();
    assert_differs_listed(cases, &listed);
}

/// Asserts that the cases among `cases` that `lens-expected-public.json` marks as differing from
/// Python are exactly the `listed` ones, each with exactly the listed docs/propagation-rules.md rows, so that
/// neither the test's list nor the file can drift. `listed`: `(id, rows)`, in any order.
pub fn assert_differs_listed<'a>(
    cases: impl IntoIterator<Item = &'a Case>,
    listed: &[(&str, &[&str])],
) {
    let found: BTreeMap<String, Vec<String>> = cases
        .into_iter()
        .filter(|c| c.differs_from_python())
        .map(|c| (c.id.clone(), c.spec_rows()))
        .collect();
    let listed: BTreeMap<String, Vec<String>> = listed
        .iter()
        .map(|(id, rows)| {
            (
                (*id).to_owned(),
                rows.iter().map(|r| (*r).to_owned()).collect(),
            )
        })
        .collect();
    assert_eq!(
        found, listed,
        "the cases that differ from Python (docs/propagation-rules.md#differences-from-nemo-lens) changed: update the list"
    );
}
