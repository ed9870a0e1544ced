//! NeMo Lens's attribute redaction (`safe_set_span_attributes` with `DEFAULT_REDACT_KEYS`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lens_dist::{DEFAULT_REDACT_KEYS, Redaction};
use opentelemetry::{Array, KeyValue, StringValue, Value};

#[test]
fn every_default_key_redacts_string_values() {
    let r = Redaction::default();
    assert_eq!(r.keys().collect::<Vec<_>>(), DEFAULT_REDACT_KEYS);
    for key in DEFAULT_REDACT_KEYS {
        assert_eq!(
            r.apply(KeyValue::new(key, "value")),
            Some(KeyValue::new(key, "[REDACTED]"))
        );
    }
}

#[test]
fn other_keys_and_non_strings_pass_unchanged() {
    let r = Redaction::default();
    for kv in [
        KeyValue::new("prompt_len", "12"),
        KeyValue::new("Prompt", "case-sensitive"),
        KeyValue::new("key ", "exact match"),
        KeyValue::new("prompt", 7),
        KeyValue::new("token", 1.5),
        KeyValue::new("secret", true),
        KeyValue::new("ids", Value::Array(Array::I64(vec![1, 2]))),
        KeyValue::new("key", Value::Array(Array::Bool(vec![true]))),
    ] {
        assert_eq!(r.apply(kv.clone()), Some(kv));
    }
}

#[test]
fn string_arrays_under_redacted_keys_are_redacted() {
    let r = Redaction::default();
    let prompts = Value::Array(Array::String(vec![
        StringValue::from("a"),
        StringValue::from("b"),
    ]));
    assert_eq!(
        r.apply(KeyValue::new("prompt", prompts.clone())),
        Some(KeyValue::new("prompt", "[REDACTED]"))
    );
    assert_eq!(
        r.apply(KeyValue::new("prompts", prompts.clone())),
        Some(KeyValue::new("prompts", prompts))
    );
}

#[test]
fn the_key_set_is_configurable() {
    let none = Redaction::none();
    assert_eq!(
        none.apply(KeyValue::new("password", "p")),
        Some(KeyValue::new("password", "p"))
    );
    let custom = Redaction::new([String::from("api_key"), String::from("prompt")]);
    assert!(custom.is_redacted("api_key") && custom.is_redacted("prompt"));
    assert!(!custom.is_redacted("password"));
    assert_eq!(Redaction::default(), Redaction::DEFAULT);
    assert_ne!(custom, Redaction::DEFAULT);
}
