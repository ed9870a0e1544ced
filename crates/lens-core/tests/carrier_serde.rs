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

/// A message with a carrier field: decoding never fails on what the field holds.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Message {
    id: u32,
    #[serde(default)]
    trace_headers: lens_core::carrier::CarrierField,
}

fn field(json: &str) -> lens_core::carrier::CarrierField {
    let message: Message = serde_json::from_str(json).unwrap();
    assert_eq!(message.id, 7, "the rest of the message decodes");
    message.trace_headers
}

#[test]
fn field_absent_null_or_a_carrier() {
    assert!(field(r#"{"id": 7}"#).is_absent());
    assert!(field(r#"{"id": 7, "trace_headers": null}"#).is_absent());
    let f = field(r#"{"id": 7, "trace_headers": {"traceparent": "tp", "baggage": ["a", "b"]}}"#);
    let carrier = f.carrier().unwrap();
    assert_eq!(carrier.get("traceparent"), Some("tp"));
    assert_eq!(carrier.get_all("baggage").unwrap(), ["a", "b"]);
    assert!(f.rejection().is_none());
}

#[test]
fn field_that_is_not_a_map_is_rejected_and_the_message_kept() {
    for odd in [r#""tp""#, "1", "1.5", "true", r#"["a", "b"]"#] {
        let json = format!(r#"{{"id": 7, "trace_headers": {odd}, "after": 1}}"#);
        let f = field(&json);
        assert!(f.rejection().unwrap().is_not_an_object(), "{odd}");
        assert!(f.carrier().is_none());
    }
}

#[test]
fn field_over_the_carrier_limit_is_rejected_and_the_message_kept() {
    let big = "x".repeat(lens_core::Limits::DEFAULT.carrier_bytes);
    let f = field(&format!(
        r#"{{"id": 7, "trace_headers": {{"traceparent": "tp", "baggage": "{big}"}}}}"#
    ));
    assert!(f.rejection().unwrap().is_too_large());
    // Many small keys count too: each costs at least its JSON punctuation.
    let mut many = String::from(r#"{"id": 7, "trace_headers": {"#);
    for i in 0..20_000 {
        if i > 0 {
            many.push_str(", ");
        }
        many.push_str(&format!(r#""{i}": 0"#));
    }
    many.push_str("}}");
    assert!(field(&many).rejection().unwrap().is_too_large());
    // Just under the limit is a carrier.
    let fits = "x".repeat(lens_core::Limits::DEFAULT.carrier_bytes - 64);
    let f = field(&format!(
        r#"{{"id": 7, "trace_headers": {{"baggage": "{fits}"}}}}"#
    ));
    assert_eq!(
        f.carrier().unwrap().get("baggage").map(str::len),
        Some(fits.len())
    );
}

#[test]
fn field_serializes_as_the_carrier_or_null() {
    let mut carrier = Carrier::new();
    carrier.insert("traceparent", "tp");
    let message = Message {
        id: 7,
        trace_headers: carrier.into(),
    };
    assert_eq!(
        serde_json::to_string(&message).unwrap(),
        r#"{"id":7,"trace_headers":{"traceparent":"tp"}}"#
    );
    let rejected = Message {
        id: 7,
        trace_headers: field(r#"{"id": 7, "trace_headers": 3}"#),
    };
    assert_eq!(
        serde_json::to_string(&rejected).unwrap(),
        r#"{"id":7,"trace_headers":null}"#
    );
}

#[test]
fn carrier_itself_rejects_what_the_field_rejects() {
    let big = "x".repeat(lens_core::Limits::DEFAULT.carrier_bytes);
    let err = serde_json::from_str::<Carrier>(&format!(r#"{{"k": "{big}"}}"#)).unwrap_err();
    assert!(err.to_string().contains("exceeds the limit"), "{err}");
}
