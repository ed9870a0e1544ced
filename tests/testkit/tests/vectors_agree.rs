//! The testkit's own lists agree with the vector files.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lens_testkit::describe::PROPERTY_WHITESPACE_CASES;
use lens_testkit::vectors::{SECTION_9, assert_differs_listed, is_carrier_extract_group};
use lens_testkit::{cases, describe, fixtures};

/// The property-whitespace cases are exactly those whose note says the whitespace is not
/// significant.
#[test]
fn property_whitespace_cases_are_the_noted_ones() {
    let noted: Vec<String> = cases()
        .into_iter()
        .filter(|c| c.note().is_some_and(|n| n.contains("not significant")))
        .map(|c| c.id)
        .collect();
    assert_eq!(noted, PROPERTY_WHITESPACE_CASES);
}

/// Every carrier extract case has the bytes of its carrier.
#[test]
fn carrier_extract_cases_have_bytes() {
    let mut n = 0;
    for case in cases()
        .iter()
        .filter(|c| is_carrier_extract_group(&c.group))
    {
        let bytes = case.input_bytes();
        assert!(bytes.starts_with(b"{"), "{}", case.id);
        n += 1;
    }
    assert!(n >= 100, "{n}");
}

/// `describe` reads the span context, the tracestate lens sends and the baggage in order.
#[test]
fn describe_reads_what_the_context_holds() {
    let cx = fixtures::w3c_context(true, &[("congo", "t61rcWkgMzE")], &[("b", "2"), ("a", "1")]);
    let d = describe(&cx);
    let span = d.span.unwrap();
    assert_eq!(span.trace_id, fixtures::TRACE_ID);
    assert_eq!(span.span_id, fixtures::SPAN_ID);
    assert_eq!(
        (span.trace_flags, span.sampled, span.is_remote),
        (1, true, true)
    );
    assert_eq!(span.tracestate, "congo=t61rcWkgMzE");
    assert_eq!(
        d.baggage,
        [
            ("b".to_owned(), "2".to_owned()),
            ("a".to_owned(), "1".to_owned())
        ]
    );
    assert_eq!(describe(&opentelemetry::Context::new()), Default::default());
}

/// [`SECTION_9`] lists every differing case of the file, with its rows.
#[test]
fn section_9_lists_every_differing_case() {
    let cases = cases();
    assert_differs_listed(&cases, SECTION_9);
    assert!(SECTION_9.len() >= 40, "{}", SECTION_9.len());
}
