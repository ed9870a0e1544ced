//! `serde` support for the JSON carrier (feature `serde`).
#![cfg(feature = "serde")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lens_core::carrier::Carrier;

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Call {
    method: String,
    #[serde(default)]
    _otel_carrier: Carrier,
}

#[test]
fn serialize_matches_to_json_bytes_shape() {
    let mut c = Carrier::new();
    c.insert("traceparent", "tp");
    c.append("baggage", "a=1");
    c.append("baggage", "b=\u{e9}");
    let value = serde_json::to_value(&c).unwrap();
    assert_eq!(
        value,
        serde_json::json!({"traceparent": "tp", "baggage": ["a=1", "b=\u{e9}"]})
    );
    // serde_json does not escape non-ASCII, but the structure is the same.
    let text = serde_json::to_string(&c).unwrap();
    assert_eq!(text, r#"{"traceparent":"tp","baggage":["a=1","b=é"]}"#);
}

#[test]
fn deserialize_strings_and_string_arrays() {
    let c: Carrier = serde_json::from_str(r#"{"a": "1", "b": ["x", "y"]}"#).unwrap();
    assert_eq!(c.get("a"), Some("1"));
    assert_eq!(c.get_all("b").unwrap(), ["x", "y"]);
}

#[test]
fn deserialize_ignores_other_value_types() {
    let c: Carrier = serde_json::from_str(
        r#"{"n": 1, "f": 1.5, "t": true, "u": null, "o": {"a": "b"}, "m": ["x", 1], "e": [], "k": "v"}"#,
    )
    .unwrap();
    assert_eq!(c.to_json_bytes(), br#"{"k": "v"}"#);
}

#[test]
fn deserialize_duplicate_key_last_wins_at_first_position() {
    let c: Carrier = serde_json::from_str(r#"{"a": "1", "b": "2", "a": "3", "b": 0}"#).unwrap();
    assert_eq!(c.to_json_bytes(), br#"{"a": "3"}"#);
}

#[test]
fn deserialize_rejects_non_map() {
    assert!(serde_json::from_str::<Carrier>(r#"["a"]"#).is_err());
    assert!(serde_json::from_str::<Carrier>("null").is_err());
}

#[test]
fn embedded_as_struct_field_round_trips() {
    let mut carrier = Carrier::new();
    carrier.insert("traceparent", "tp");
    let call = Call {
        method: "f".to_owned(),
        _otel_carrier: carrier,
    };
    let text = serde_json::to_string(&call).unwrap();
    assert_eq!(
        text,
        r#"{"method":"f","_otel_carrier":{"traceparent":"tp"}}"#
    );
    assert_eq!(serde_json::from_str::<Call>(&text).unwrap(), call);
    let missing: Call = serde_json::from_str(r#"{"method": "g"}"#).unwrap();
    assert!(missing._otel_carrier.is_empty());
}
