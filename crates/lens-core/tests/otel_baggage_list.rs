//! A Context whose baggage opentelemetry's own API built (no lens copy beside it): lens reads
//! it as a list of every entry its rules take (docs/propagation-rules.md#baggage), the same
//! entries, in the same order, that inject sends.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;

use lens_core::{LensContextExt, inject_context_from};
use opentelemetry::Context;
use opentelemetry::baggage::{BaggageExt, KeyValueMetadata};

fn injected(cx: &Context) -> Option<String> {
    let mut carrier = HashMap::new();
    inject_context_from(cx, &mut carrier);
    carrier.remove("baggage")
}

#[test]
fn every_entry_opentelemetry_holds_is_listed_as_inject_sends_it() {
    let cx = Context::new().with_baggage([
        KeyValueMetadata::new("user", "alice smith", "p1;p2=x"),
        KeyValueMetadata::new("tier", "gold", ""),
        KeyValueMetadata::new("path", "a/b%c", ""),
    ]);
    let list = cx.lens_baggage();
    assert_eq!(list.len(), 3);
    let user = list.get("user").expect("user is listed");
    assert_eq!(user.value(), "alice smith");
    assert_eq!(user.properties(), "p1;p2=x");
    assert_eq!(list.get("tier").map(|e| e.value()), Some("gold"));
    assert_eq!(list.get("path").map(|e| e.value()), Some("a/b%c"));
    // The list is opentelemetry's order, which inject sends too.
    assert_eq!(injected(&cx).as_deref(), Some(list.header()));
    assert!(list.header().contains("user=alice%20smith;p1;p2=x"));
    assert!(list.header().contains("path=a%2Fb%25c"));
}

#[test]
fn an_entry_lens_refuses_is_neither_listed_nor_sent() {
    // Properties with a space inside a property key: not a baggage property.
    let cx = Context::new().with_baggage([
        KeyValueMetadata::new("good", "1", ""),
        KeyValueMetadata::new("bad", "2", "p 1"),
    ]);
    assert!(cx.baggage().get("bad").is_some(), "opentelemetry holds it");
    let list = cx.lens_baggage();
    assert_eq!(list.len(), 1);
    assert!(list.get("bad").is_none());
    assert_eq!(list.header(), "good=1");
    assert_eq!(injected(&cx).as_deref(), Some("good=1"));
}

#[test]
fn no_baggage_is_an_empty_list() {
    assert!(Context::new().lens_baggage().is_empty());
    assert_eq!(injected(&Context::new()), None);
}

#[test]
fn inject_sends_the_listed_header_for_few_and_many_entries() {
    // Around the number of entries inject walks on the stack (8), with refused ones between.
    for count in [1, 7, 8, 9, 10, 40, 64] {
        let entries = (0..count).map(|i| {
            let properties = if i % 5 == 3 { "p 1" } else { "" };
            KeyValueMetadata::new(format!("k{i}"), format!("v {i}"), properties)
        });
        let cx = Context::new().with_baggage(entries);
        let list = cx.lens_baggage();
        assert_eq!(list.len(), (0..count).filter(|i| i % 5 != 3).count());
        assert_eq!(
            injected(&cx).as_deref(),
            Some(list.header()),
            "{count} entries"
        );
    }
}
