//! The checks of the `lens.baggage.keys` knob (`with_baggage_keys`) that every adapter's tests
//! run: the request carries [`BAGGAGE`], its span records the keys and none of the values.

use opentelemetry::{Array, Value};
use opentelemetry_sdk::trace::SpanData;

/// The `baggage` header the tests send: two entries, `a=1` and `b=2`.
pub const BAGGAGE: &str = "a=1,b=2";

/// The keys of [`BAGGAGE`], in order.
pub const KEYS: [&str; 2] = ["a", "b"];

/// The values of [`BAGGAGE`]: never on a span.
const VALUES: [&str; 2] = ["1", "2"];

/// The span's `lens.baggage.keys`, when it has the attribute.
pub fn recorded(span: &SpanData) -> Option<Vec<String>> {
    let kv = span
        .attributes
        .iter()
        .find(|kv| kv.key.as_str() == "lens.baggage.keys")?;
    match &kv.value {
        Value::Array(Array::String(keys)) => Some(keys.iter().map(|k| k.to_string()).collect()),
        other => panic!("lens.baggage.keys is not a string array: {other:?}"),
    }
}

/// Asserts that `span` recorded `KEYS` in order under `lens.baggage.keys`, and that no value of
/// [`BAGGAGE`] (nor the header) appears in any string of its attributes, events or links.
pub fn assert_keys_only(span: &SpanData) {
    assert_eq!(
        recorded(span).as_deref(),
        Some(&KEYS.map(str::to_owned)[..]),
        "{span:#?}"
    );
    let attributes = span
        .attributes
        .iter()
        .chain(span.events.events.iter().flat_map(|e| e.attributes.iter()))
        .chain(span.links.links.iter().flat_map(|l| l.attributes.iter()));
    for kv in attributes {
        let strings: Vec<String> = match &kv.value {
            Value::String(s) => vec![s.to_string()],
            Value::Array(Array::String(items)) => items.iter().map(|s| s.to_string()).collect(),
            _ => Vec::new(),
        };
        for s in strings {
            assert!(
                !VALUES.contains(&s.as_str()) && !s.contains("a=1") && !s.contains("b=2"),
                "a baggage value in {}: {s:?}",
                kv.key
            );
        }
    }
}

/// Asserts that `span` has no `lens.baggage.keys` (the knob is off by default).
pub fn assert_not_recorded(span: &SpanData) {
    assert_eq!(recorded(span), None, "{span:#?}");
}
