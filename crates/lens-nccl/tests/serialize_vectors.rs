//! `serialize_context` vectors: the exact bytes NeMo Lens sends for each described context, and
//! what extracting the recorded Python bytes gives.
//!
//! Where lens knowingly differs from Python (docs/propagation-rules.md#differences-from-nemo-lens), the expectation comes from
//! `lens-expected-public.json`; those cases are listed with their docs/propagation-rules.md rows in
//! `lens_testkit::vectors::SECTION_9`, and the test fails if the file's list changes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use lens_testkit::vectors::assert_section_9;

use common::{active_context, b64, cases_of, check_extract};
use opentelemetry::Context;

#[test]
fn differing_cases_are_the_listed_ones() {
    assert_section_9(&cases_of("serialize_context"));
}

#[test]
fn serialize_context_bytes_match() {
    let mut checked = 0;
    for case in cases_of("serialize_context") {
        let (cx, _provider) = active_context(&case.public["input"]["active"]);
        let want = case.lens();
        let want_utf8 = want["bytes_utf8"].as_str().unwrap();
        let want_bytes = b64(want["bytes_b64"].as_str().unwrap());
        assert_eq!(want_utf8.as_bytes(), want_bytes, "{}: vector file", case.id);

        let from = lens_nccl::serialize_context_from(&cx);
        assert_eq!(
            String::from_utf8_lossy(&from),
            want_utf8,
            "{}: serialize_context_from",
            case.id
        );
        assert_eq!(from, want_bytes, "{}: bytes", case.id);

        // The same through the current Context.
        let current = {
            let _guard = cx.clone().attach();
            lens_nccl::serialize_context()
        };
        assert_eq!(current, want_bytes, "{}: serialize_context", case.id);

        // Where lens agrees with Python, the bytes are Python's own.
        if !case.differs_from_python() {
            let python = b64(case.public["expected"]["bytes_b64"].as_str().unwrap());
            assert_eq!(from, python, "{}: Python's bytes", case.id);
        }
        checked += 1;
    }
    assert!(checked >= 30, "only {checked} serialize_context cases");
}

/// `carrier_pairs`: the ordered carrier behind the bytes.
#[test]
fn carrier_pairs_match() {
    for case in cases_of("serialize_context") {
        let (cx, _provider) = active_context(&case.public["input"]["active"]);
        let carrier = lens_nccl::context_carrier(&cx);
        let got: Vec<(String, String)> = carrier
            .iter()
            .map(|(k, lines)| {
                assert_eq!(lines.len(), 1, "{}: one line per key", case.id);
                (k.to_owned(), lines[0].clone())
            })
            .collect();
        let want: Vec<(String, String)> = case.lens()["carrier_pairs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p[0].as_str().unwrap().to_owned(),
                    p[1].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert_eq!(got, want, "{}: carrier pairs", case.id);
    }
}

/// `roundtrip_extract_nccl_context`: extracting the bytes Python recorded.
#[test]
fn roundtrip_of_python_bytes() {
    let caller = common::caller_context();
    let _guard = caller.clone().attach();
    let mut checked = 0;
    for case in cases_of("serialize_context") {
        let python = b64(case.public["expected"]["bytes_b64"].as_str().unwrap());
        let cx = lens_nccl::extract_nccl_context(&python);
        check_extract(
            &case.id,
            &cx,
            &caller,
            &case.lens()["roundtrip_extract_nccl_context"],
        );
        checked += 1;
    }
    assert!(checked >= 30);
}

/// Extracting lens's own bytes gives back what was serialized.
#[test]
fn roundtrip_of_lens_bytes() {
    for case in cases_of("serialize_context") {
        let (cx, _provider) = active_context(&case.public["input"]["active"]);
        let bytes = lens_nccl::serialize_context_from(&cx);
        let back = lens_nccl::extract_nccl_context(&bytes);
        assert_eq!(
            lens_nccl::serialize_context_from(&back),
            bytes,
            "{}: reserialized",
            case.id
        );
    }
    // And the empty context gives `{}` and back an empty context.
    assert_eq!(lens_nccl::serialize_context_from(&Context::new()), b"{}");
}
