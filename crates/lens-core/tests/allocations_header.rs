//! `HeaderCarrier`'s `Injector` (what opentelemetry's own propagators and any code calling `set`
//! write through) stores lens's three header names without making them: `traceparent`,
//! `tracestate` and `baggage` are static names, while any other name unknown to http is parsed
//! into a copy of its own.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod bounded_cost_support;

use bounded_cost_support::measure;
use http::header::{HeaderMap, HeaderName, HeaderValue};
use lens_core::HeaderCarrier;
use opentelemetry::propagation::Injector;

/// What one `set` of `name` allocates, on a map that already holds the name (so the map itself
/// neither grows nor allocates), with a value whose `String` becomes the header value as it is.
fn set_cost(name: &str) -> usize {
    let mut headers = HeaderMap::with_capacity(16);
    for held in ["traceparent", "tracestate", "baggage", "x-other"] {
        headers.insert(
            HeaderName::from_static(held),
            HeaderValue::from_static("old"),
        );
    }
    let value = String::from("v");
    let cost = measure(|| HeaderCarrier(&mut headers).set(name, value));
    assert_eq!(
        headers.get(name).map(|v| v.as_bytes()),
        Some(&b"v"[..]),
        "{name} set"
    );
    assert_eq!(headers.get_all(name).iter().count(), 1, "{name} replaced");
    cost.count
}

#[test]
fn lens_header_names_cost_no_allocation_and_another_name_its_copy() {
    for name in ["traceparent", "tracestate", "baggage"] {
        assert_eq!(set_cost(name), 0, "{name}");
    }
    // The same measurement sees a parsed name: the test can fail.
    assert_eq!(set_cost("x-other"), 1, "x-other");
}

/// Reading the first line of any name allocates nothing (lens's names are looked up as static
/// names, others are looked up without a copy).
#[test]
fn reading_a_header_allocates_nothing() {
    let mut headers = HeaderMap::new();
    headers.insert("traceparent", HeaderValue::from_static("tp"));
    headers.insert("x-other", HeaderValue::from_static("1"));
    for (name, line) in [
        ("traceparent", Some("tp")),
        ("baggage", None),
        ("x-other", Some("1")),
        ("X-Other", Some("1")),
    ] {
        let carrier = HeaderCarrier(&headers);
        let mut read = None;
        let cost = measure(|| read = opentelemetry::propagation::Extractor::get(&carrier, name));
        assert_eq!(read, line, "{name}");
        assert_eq!(cost.count, 0, "{name}");
    }
}
