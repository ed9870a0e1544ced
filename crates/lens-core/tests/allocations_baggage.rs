//! A percent-escaped baggage value costs extract what a plain value of the same decoded length
//! costs: the decoded value is written into one allocation of its exact length, which
//! opentelemetry's `StringValue` (a boxed `str`) then takes without shrinking it. The Context
//! is the same either way, so only the allocations tell a buffer sized right from one that
//! grows or shrinks. The same goes for where lens keeps the header it sends on.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod bounded_cost_support;

use std::collections::HashMap;

use bounded_cost_support::{Allocated, measure};
use lens_core::{LensContextExt, MapCarrier, W3cPropagator};
use opentelemetry::Context;
use opentelemetry::propagation::TextMapPropagator;

/// What extracting `baggage` (the only header) allocates, after one extract to warm up.
fn extract(baggage: &str) -> (Allocated, Context) {
    let propagator = W3cPropagator::new();
    let mut carrier = HashMap::new();
    carrier.insert("baggage".to_owned(), baggage.to_owned());
    let carrier = MapCarrier(&carrier);
    drop(propagator.extract(&carrier));
    let allocated = measure(|| drop(propagator.extract(&carrier)));
    (allocated, propagator.extract(&carrier))
}

#[test]
fn an_escaped_value_is_decoded_into_one_allocation_of_its_length() {
    for (escaped, plain, value) in [
        ("k=abc%20def", "k=abcxdef", "abc def"),
        ("k=%C3%A9t%C3%A9", "k=abcde", "été"),
        ("k=%2C", "k=x", ","),
        (
            "k=a%2Cb%2Cc%2Cd%2Ce%2Cf%2Cg%2Ch%2Ci",
            "k=abcdefghijklmnopq",
            "a,b,c,d,e,f,g,h,i",
        ),
    ] {
        let (with_escapes, cx) = extract(escaped);
        assert_eq!(cx.baggage_value("k").as_deref(), Some(value));
        let (without, cx) = extract(plain);
        assert_eq!(cx.baggage_value("k").map(|v| v.len()), Some(value.len()));
        assert_eq!(with_escapes.count, without.count, "{escaped}");
        // lens keeps each header as it came (both are sent on as received), and a header this
        // short inside its Context value: the two cost the same bytes.
        assert_eq!(with_escapes.total, without.total, "{escaped}");
    }
}

/// The header lens sends on is kept inside its Context value up to 128 bytes; a longer one
/// costs one allocation of exactly its length.
#[test]
fn a_short_header_is_kept_inline_and_a_longer_one_in_one_allocation_of_its_length() {
    let short = format!("k={}", "v".repeat(126));
    let long = format!("k={}", "v".repeat(127));
    assert_eq!((short.len(), long.len()), (128, 129));
    let (inline, cx) = extract(&short);
    assert_eq!(cx.lens_baggage().header(), short);
    let (own, cx) = extract(&long);
    assert_eq!(cx.lens_baggage().header(), long);
    assert_eq!(own.count, inline.count + 1);
    // One more byte of value, and the header's own allocation.
    assert_eq!(own.total - inline.total, 1 + long.len());
}

/// A baggage key seen before is borrowed from lens's table of kept keys (`'static` text,
/// bounded): it costs extract no allocation, where a key too long to keep costs one of its
/// length. The entries read back the same either way.
#[test]
fn a_key_seen_before_costs_no_allocation_and_a_key_too_long_to_keep_costs_one() {
    let kept_key = "k".repeat(64);
    let long_key = "k".repeat(65);
    let (kept, cx) = extract(&format!("{kept_key}=v"));
    assert_eq!(cx.baggage_value(&kept_key).as_deref(), Some("v"));
    let (copied, cx) = extract(&format!("{long_key}=v"));
    assert_eq!(cx.baggage_value(&long_key).as_deref(), Some("v"));
    assert_eq!(copied.count, kept.count + 1);
    // Only the copy of the key: both headers are kept inline, at no cost of their own.
    assert_eq!(copied.total - kept.total, long_key.len());
}

/// Keeps the values it is given, in room reserved beforehand: it allocates nothing itself.
struct Values(Vec<String>);

impl opentelemetry::propagation::Injector for Values {
    fn set(&mut self, _key: &str, value: String) {
        self.0.push(value);
    }
}

/// The header lens sends for a `Baggage` that opentelemetry's own API built is written into one
/// allocation, sized once for the worst case of its entries (every value byte escaped: `key.len()
/// + 3 * value.len() + metadata.len() + 2` each, no scan of the values) and never past the
/// header limit: no regrowth, and no more room than that. With up to 8 entries it walks the
/// `Baggage` once on the stack, beyond that twice; both size the header alike.
#[test]
fn a_header_from_opentelemetrys_baggage_is_one_allocation_sized_for_every_value_escaped() {
    use opentelemetry::baggage::{Baggage, BaggageExt};
    let propagator = W3cPropagator::baggage_only();
    let inject = |entries: &[(String, String, &str)]| {
        let mut baggage = Baggage::new();
        for (key, value, metadata) in entries {
            let _ = baggage.insert_with_metadata(key.clone(), value.clone(), *metadata);
        }
        let cx = Context::new().with_baggage(baggage);
        let mut values = Values(Vec::with_capacity(4));
        let allocated = measure(|| propagator.inject_context(&cx, &mut values));
        (allocated, values.0)
    };
    let bound = |entries: &[(String, String, &str)]| -> usize {
        entries
            .iter()
            .map(|(k, v, m)| k.len() + 3 * v.len() + m.len() + 2)
            .sum()
    };
    for count in [1, 3, 8, 9, 20] {
        let entries: Vec<_> = (0..count)
            .map(|i| {
                let metadata = if i % 2 == 0 { "" } else { "p=1;q" };
                (format!("key{i}"), format!("value {i}"), metadata)
            })
            .collect();
        let (allocated, values) = inject(&entries);
        assert_eq!(values.len(), 1, "{count} entries: one header");
        assert_eq!(
            values[0].split(',').count(),
            count,
            "{count} entries all sent: {}",
            values[0]
        );
        assert_eq!(allocated.count, 1, "{count} entries: one allocation");
        assert_eq!(allocated.total, bound(&entries), "{count} entries");
    }
    // Past the header limit (8192 bytes), the room stops at the limit.
    let long: Vec<_> = (0..40)
        .map(|i| (format!("k{i}"), "v".repeat(100), ""))
        .collect();
    assert!(bound(&long) > 8192);
    let (allocated, values) = inject(&long);
    assert!(values[0].len() <= 8192);
    assert_eq!((allocated.count, allocated.total), (1, 8192));
}
