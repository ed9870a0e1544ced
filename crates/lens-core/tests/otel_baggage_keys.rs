//! lens injects opentelemetry's `Baggage` without checking its keys again: opentelemetry only
//! takes keys that are RFC 7230 tokens (docs/propagation-rules.md#baggage). This holds
//! opentelemetry to that, key byte by key byte, and checks that every key it takes goes out.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;

use lens_core::inject_context_from;
use lens_core::lexical::is_token;
use opentelemetry::Context;
use opentelemetry::baggage::{Baggage, BaggageExt};

/// Keys with each ASCII byte, and a few beyond ASCII, in the middle of a token.
fn keys() -> Vec<String> {
    let mut keys: Vec<String> = (0u8..=127)
        .map(|b| format!("k{}k", char::from(b)))
        .collect();
    keys.extend(["k\u{e9}k", "k\u{2028}k", "\u{1f600}"].map(str::to_owned));
    keys.push(String::new());
    keys
}

#[test]
fn opentelemetry_baggage_keys_are_tokens() {
    for key in keys() {
        let mut baggage = Baggage::new();
        let _ = baggage.insert(key.clone(), "v");
        let taken = baggage.get(key.as_str()).is_some();
        assert_eq!(
            taken,
            is_token(&key),
            "opentelemetry and lens disagree on {key:?}"
        );
    }
}

#[test]
fn every_key_opentelemetry_takes_is_injected() {
    for key in keys().into_iter().filter(|k| is_token(k)) {
        let cx = Context::new().with_baggage([opentelemetry::KeyValue::new(key.clone(), "v")]);
        let mut out = HashMap::new();
        inject_context_from(&cx, &mut out);
        assert_eq!(out.get("baggage"), Some(&format!("{key}=v")), "{key:?}");
    }
}
