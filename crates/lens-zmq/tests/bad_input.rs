//! Bad input never costs a message: a context frame or field that is not JSON, not a map, not
//! UTF-8 or over the limits is delivered all the same, and its `process` span starts a new
//! trace with its cause in `lens.trace.new_root`. Each case on its own.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Setup, attr};
use lens_core::carrier::CarrierField;
use lens_zmq::frame::CONTEXT_FRAME_MARKER;
use opentelemetry::trace::SpanId;
use serde::Deserialize;

const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// Receives `[payload, context_bytes]` (the context frame made of `context_json`, or none);
/// checks the payload came through as sent and returns the process span's (parent, cause).
fn through_frame(context_json: Option<&[u8]>) -> (SpanId, Option<String>) {
    let setup = Setup::new();
    let consumer = setup.consumer();
    let mut frames = vec![b"topic".to_vec(), b"payload".to_vec()];
    if let Some(json) = context_json {
        frames.push([CONTEXT_FRAME_MARKER.as_slice(), json].concat());
    }
    consumer.process_frames("d", &mut frames).end();
    assert_eq!(
        frames,
        [b"topic".to_vec(), b"payload".to_vec()],
        "delivered as sent"
    );
    let span = setup.span("process d");
    (span.parent_span_id, attr(&span, "lens.trace.new_root"))
}

#[test]
fn frame_valid_continues_the_trace() {
    let json = format!(r#"{{"traceparent": "{TP}"}}"#);
    let (parent, cause) = through_frame(Some(json.as_bytes()));
    assert_eq!(parent.to_string(), "00f067aa0ba902b7");
    assert_eq!(cause, None);
}

#[test]
fn frame_absent() {
    let (parent, cause) = through_frame(None);
    assert_eq!(parent, SpanId::INVALID);
    assert_eq!(cause.as_deref(), Some("none"));
}

#[test]
fn frame_not_json() {
    for bad in [
        b"{".as_slice(),
        b"traceparent",
        b"{\"traceparent\": NaN}",
        b"",
        b"{} x",
    ] {
        let (parent, cause) = through_frame(Some(bad));
        assert_eq!(parent, SpanId::INVALID);
        assert_eq!(
            cause.as_deref(),
            Some("rejected:json-carrier-rejected"),
            "{bad:?}"
        );
    }
}

#[test]
fn frame_not_a_map() {
    for bad in [
        format!(r#"["{TP}"]"#),
        format!(r#""{TP}""#),
        "null".to_owned(),
        "1".to_owned(),
    ] {
        let (parent, cause) = through_frame(Some(bad.as_bytes()));
        assert_eq!(parent, SpanId::INVALID);
        assert_eq!(cause.as_deref(), Some("rejected:json-carrier"), "{bad}");
    }
}

#[test]
fn frame_not_utf8() {
    let bad = [b"{\"traceparent\": \"".as_slice(), &[0xff, 0xfe], b"\"}"].concat();
    let (parent, cause) = through_frame(Some(&bad));
    assert_eq!(parent, SpanId::INVALID);
    assert_eq!(cause.as_deref(), Some("rejected:json-carrier-rejected"));
}

#[test]
fn frame_over_the_limits() {
    let big = format!(
        r#"{{"traceparent": "{TP}", "baggage": "k={}"}}"#,
        "v".repeat(lens_core::Limits::DEFAULT.carrier_bytes)
    );
    let (parent, cause) = through_frame(Some(big.as_bytes()));
    assert_eq!(parent, SpanId::INVALID);
    assert_eq!(cause.as_deref(), Some("rejected:json-carrier-rejected"));
    let deep = format!("{}{}", "[".repeat(40), "]".repeat(40));
    let deep = format!(r#"{{"traceparent": "{TP}", "x": {deep}}}"#);
    let (parent, cause) = through_frame(Some(deep.as_bytes()));
    assert_eq!(parent, SpanId::INVALID);
    assert_eq!(cause.as_deref(), Some("rejected:json-carrier-rejected"));
}

#[test]
fn frame_with_a_bad_traceparent_names_its_rule() {
    let json = br#"{"traceparent": "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}"#;
    let (parent, cause) = through_frame(Some(json));
    assert_eq!(parent, SpanId::INVALID);
    assert_eq!(cause.as_deref(), Some("rejected:traceparent-versions"));
}

/// A request whose `trace_headers` is whatever the test put there (msgpack, positional).
#[derive(Deserialize)]
struct Request {
    request_id: String,
    #[serde(default)]
    trace_headers: CarrierField,
    after: u8,
}

/// msgpack `["r", <field bytes>, 7]` decoded, processed; (parent, cause).
fn through_field(field: &[u8]) -> (SpanId, Option<String>) {
    let bytes = [&[0x93, 0xa1, b'r'], field, &[0x07]].concat();
    let request: Request = rmp_serde::from_slice(&bytes).unwrap();
    assert_eq!(
        (request.request_id.as_str(), request.after),
        ("r", 7),
        "delivered"
    );
    let setup = Setup::new();
    setup
        .consumer()
        .process_field("d", &request.trace_headers, None)
        .end();
    let span = setup.span("process d");
    (span.parent_span_id, attr(&span, "lens.trace.new_root"))
}

fn fixmap_one(key: &[u8], value: &[u8]) -> Vec<u8> {
    [&[0x81, 0xa0 | key.len() as u8], key, value].concat()
}

fn str8(s: &[u8]) -> Vec<u8> {
    [&[0xd9, s.len() as u8], s].concat()
}

#[test]
fn field_valid_absent_and_nil() {
    let (parent, cause) = through_field(&fixmap_one(b"traceparent", &str8(TP.as_bytes())));
    assert_eq!(parent.to_string(), "00f067aa0ba902b7");
    assert_eq!(cause, None);
    let (parent, cause) = through_field(&[0xc0]);
    assert_eq!(parent, SpanId::INVALID);
    assert_eq!(cause.as_deref(), Some("none"));
}

#[test]
fn field_not_a_map() {
    // A string (a JSON text put where the map goes), an array, an int, bin.
    let json = format!(r#"{{"traceparent": "{TP}"}}"#);
    for bad in [
        str8(json.as_bytes()),
        vec![0x91, 0xa1, b'x'],
        vec![0x05],
        vec![0xc4, 1, b'x'],
    ] {
        let (parent, cause) = through_field(&bad);
        assert_eq!(parent, SpanId::INVALID);
        assert_eq!(cause.as_deref(), Some("rejected:json-carrier"), "{bad:?}");
    }
}

#[test]
fn field_not_utf8() {
    // A msgpack str whose bytes are not UTF-8, as value and as key.
    let value = fixmap_one(b"traceparent", &[0xa2, 0xff, 0xfe]);
    let (parent, cause) = through_field(&value);
    assert_eq!(parent, SpanId::INVALID);
    assert_eq!(cause.as_deref(), Some("rejected:json-carrier-rejected"));
    let key = [&[0x81, 0xa2, 0xff, 0xfe][..], &str8(TP.as_bytes())].concat();
    let (_, cause) = through_field(&key);
    assert_eq!(cause.as_deref(), Some("rejected:json-carrier-rejected"));
}

#[test]
fn field_over_the_limits() {
    let big = vec![b'v'; lens_core::Limits::DEFAULT.carrier_bytes];
    let mut value = vec![0xdb];
    value.extend_from_slice(&(big.len() as u32).to_be_bytes());
    value.extend_from_slice(&big);
    let map = [
        &[0x82, 0xab][..],
        b"traceparent",
        &str8(TP.as_bytes()),
        &[0xa7],
        b"baggage",
        &value,
    ]
    .concat();
    let (parent, cause) = through_field(&map);
    assert_eq!(parent, SpanId::INVALID);
    assert_eq!(cause.as_deref(), Some("rejected:json-carrier-rejected"));
}

#[test]
fn field_odd_keys_and_values_are_ignored_not_fatal() {
    // An int key and a map value are ignored; the traceparent still read.
    let map = [
        &[
            0x83, 0x01, 0xa1, b'x', 0xa1, b'o', 0x81, 0xa1, b'a', 0xa1, b'b', 0xab,
        ][..],
        b"traceparent",
        &str8(TP.as_bytes()),
    ]
    .concat();
    let (parent, cause) = through_field(&map);
    assert_eq!(parent.to_string(), "00f067aa0ba902b7");
    assert_eq!(cause, None);
}
