//! `lens inspect` reads NCCL context bytes: the JSON text, its base64, and base64 context
//! frames; rejected bytes are invalid (exit 1) with the docs/propagation-rules.md rule, header values are unaffected.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Output};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use lens_nccl::{FRAME_HEADER_LEN, FrameCodec};
use lens_testkit::fixtures;

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn inspect(args: &[&str]) -> (Output, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_lens"))
        .arg("inspect")
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout.clone()).unwrap();
    (output, text)
}

fn frame() -> Vec<u8> {
    let cx = fixtures::w3c_context(true, &[], &[("rank", "3")]);
    FrameCodec::default().encode(&cx).unwrap()
}

#[test]
fn json_text_is_read_as_nccl_bytes_with_each_header_checked() {
    let json = format!(r#"{{"traceparent": "{TRACEPARENT}", "baggage": "job=a%20b"}}"#);
    let (output, text) = inspect(&[&json]);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(
        text.starts_with(&format!("nccl bytes: {} bytes of JSON\n", json.len())),
        "{text}"
    );
    assert!(
        text.contains(&format!("traceparent: \"{TRACEPARENT}\"")),
        "{text}"
    );
    assert!(text.contains("baggage: \"job=a%20b\""), "{text}");
    assert!(
        text.contains(&format!("sent on as {json} (the same bytes)")),
        "{text}"
    );
}

#[test]
fn base64_frames_are_read_and_checked() {
    let (output, text) = inspect(&[&STANDARD.encode(frame())]);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(
        text.starts_with("nccl frame: 4096 bytes (from base64)"),
        "{text}"
    );
    assert!(text.contains("version 1"), "{text}");
    assert!(text.contains("baggage: \"rank=3\""), "{text}");

    let mut corrupt = frame();
    corrupt[FRAME_HEADER_LEN + 2] ^= 0x20;
    let (output, text) = inspect(&["--as", "nccl", &STANDARD.encode(corrupt)]);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains("invalid: corrupt context frame: checksum mismatch"),
        "{text}"
    );
}

#[test]
fn rejected_json_is_invalid_with_the_spec_rule() {
    let (output, text) = inspect(&[r#"{"traceparent": NaN}"#]);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("not a JSON carrier"), "{text}");
    assert!(
        text.contains("docs/propagation-rules.md#carriers"),
        "{text}"
    );
    // --as nccl with something that is not NCCL bytes is a usage error.
    let (output, _) = inspect(&["--as", "nccl", TRACEPARENT]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn header_values_are_still_header_values() {
    let (output, text) = inspect(&[TRACEPARENT]);
    assert_eq!(output.status.code(), Some(0), "{text}");
    assert!(
        text.starts_with(&format!("traceparent: \"{TRACEPARENT}\"")),
        "{text}"
    );
    assert!(!text.contains("nccl"), "{text}");
}
