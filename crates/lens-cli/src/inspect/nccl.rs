//! `lens inspect` for NCCL context bytes: the JSON text NeMo Lens's `serialize_context()` sends
//! (as it is, or base64), and lens-nccl context frames (base64).
//!
//! The bytes are read as lens-nccl reads them: a frame's header and checksum, then the JSON
//! carrier (docs/propagation-rules.md#carriers), then each header in it as `lens inspect` reads header values.

use std::fmt::Write as _;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use lens_core::{Carrier, Limits, extract_context};
use lens_nccl::{FRAME_HEADER_LEN, FRAME_MAGIC, FrameCodec, serialize_context_from};

use serde_json::json;

use super::headers::{Kind, baggage, traceparent, tracestate};
use super::inspection::{Inspection, Rejection, shown};

/// NCCL bytes found in a command-line value.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum NcclBytes {
    /// JSON carrier bytes; `base64` when they were given base64-encoded.
    Json { bytes: Vec<u8>, base64: bool },
    /// A context frame (always given base64-encoded).
    Frame(Vec<u8>),
}

/// The NCCL bytes in `value`, when it holds some: JSON text starting with `{`, or base64 (standard
/// or URL-safe alphabet, padded or not) of a JSON object or of a frame. `None` otherwise.
pub(super) fn detect(value: &str) -> Option<NcclBytes> {
    let value = value.trim();
    if value.starts_with('{') {
        return Some(NcclBytes::Json {
            bytes: value.as_bytes().to_vec(),
            base64: false,
        });
    }
    let bytes = decode_base64(value)?;
    if bytes.starts_with(&FRAME_MAGIC) {
        Some(NcclBytes::Frame(bytes))
    } else if bytes.trim_ascii_start().starts_with(b"{") {
        Some(NcclBytes::Json {
            bytes,
            base64: true,
        })
    } else {
        None
    }
}

fn decode_base64(value: &str) -> Option<Vec<u8>> {
    if value.is_empty() {
        return None;
    }
    let unpadded = value.trim_end_matches('=');
    let padded = match unpadded.len() % 4 {
        0 => unpadded.to_owned(),
        2 => format!("{unpadded}=="),
        3 => format!("{unpadded}="),
        _ => return None,
    };
    STANDARD
        .decode(&padded)
        .or_else(|_| URL_SAFE.decode(&padded))
        .ok()
}

/// Describes `input`: a valid carrier whose headers are valid is valid.
pub(super) fn inspect(input: &NcclBytes, plus_as_space: bool) -> Inspection {
    let limits = Limits::default();
    let (bytes, encoding) = match input {
        NcclBytes::Json { bytes, base64 } => (bytes, if *base64 { "base64 json" } else { "json" }),
        NcclBytes::Frame(frame) => (frame, "base64 frame"),
    };
    let mut i = Inspection::new("nccl", &[]);
    i.input.push(String::from_utf8_lossy(bytes).into_owned());
    i.field("encoding", encoding);
    i.field("bytes", bytes.len());
    let json = match input {
        NcclBytes::Json { bytes, base64 } => {
            let _ = writeln!(
                i.text,
                "nccl bytes: {} bytes of JSON{}",
                bytes.len(),
                if *base64 { " (from base64)" } else { "" }
            );
            bytes.as_slice()
        }
        NcclBytes::Frame(frame) => {
            let _ = writeln!(i.text, "nccl frame: {} bytes (from base64)", frame.len());
            match FrameCodec::default().payload(frame) {
                Ok(json) => {
                    let padding = frame.len().saturating_sub(FRAME_HEADER_LEN + json.len());
                    let _ = writeln!(
                        i.text,
                        "  header  magic LNCF, version 1, {} JSON bytes, checksum ok; {padding} bytes of padding",
                        json.len(),
                    );
                    i.field(
                        "frame",
                        json!({ "json_bytes": json.len(), "padding": padding, "checksum": "ok" }),
                    );
                    json
                }
                Err(e) => {
                    let _ = writeln!(i.text, "invalid: {e}\n  {REJECTED_EFFECT}");
                    i.valid = false;
                    i.rejections
                        .push(Rejection::new(None, e.to_string(), Some(REJECTED_EFFECT)));
                    return i;
                }
            }
        }
    };
    let json_text = String::from_utf8_lossy(json);
    let _ = writeln!(i.text, "  json    {}", shown(&json_text));
    i.field("json", json_text.as_ref());
    let carrier = match Carrier::from_json_bytes_with_limits(json, &limits) {
        Ok(carrier) => carrier,
        Err(e) => {
            let reason = format!("not a JSON carrier: {e} (docs/propagation-rules.md#carriers)");
            let _ = writeln!(i.text, "invalid: {reason}\n  {REJECTED_EFFECT}");
            i.valid = false;
            i.rejections
                .push(Rejection::new(None, reason, Some(REJECTED_EFFECT)));
            return i;
        }
    };
    let mut known = 0;
    let mut headers = Vec::new();
    for (key, lines) in carrier.iter() {
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        i.text.push('\n');
        for line in &lines {
            let _ = writeln!(i.text, "{key}: {}", shown(line));
        }
        known += 1;
        let kind = match key {
            "traceparent" => Kind::TraceParent,
            "tracestate" => Kind::TraceState,
            "baggage" => Kind::Baggage,
            _ => {
                let _ = writeln!(
                    i.text,
                    "ignored: lens reads only traceparent, tracestate and baggage"
                );
                continue;
            }
        };
        let mut header = Inspection::new(kind.name(), &lines);
        match kind {
            Kind::TraceParent => traceparent(&mut header, &lines, &limits),
            Kind::TraceState => tracestate(&mut header, &lines, &limits),
            Kind::Baggage => baggage(&mut header, &lines, &limits, plus_as_space),
        }
        i.text.push_str(&header.text);
        i.valid &= header.valid;
        headers.push(header);
    }
    if known == 0 {
        let _ = writeln!(i.text, "\nempty carrier: no trace context, no baggage");
    }
    match serde_json::to_value(&headers) {
        Ok(value) => i.field("headers", value),
        Err(e) => i.field("headers", e.to_string()),
    }
    // What lens-nccl would send for the context these bytes carry.
    let resent = serialize_context_from(&extract_context(&carrier));
    let resent_text = String::from_utf8_lossy(&resent).into_owned();
    let _ = writeln!(
        i.text,
        "\nsent on as {resent_text}{}",
        if resent == json {
            " (the same bytes)"
        } else {
            ""
        }
    );
    i.sent = Some(resent_text);
    i
}

/// What lens-nccl does with bytes it rejects.
const REJECTED_EFFECT: &str = "extract_nccl_context gives the caller's current Context for such bytes (docs/propagation-rules.md#extract-and-inject)";

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    use lens_testkit::fixtures;
    use opentelemetry::Context;

    const JSON: &str = r#"{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "baggage": "rank=3"}"#;

    fn context() -> Context {
        fixtures::w3c_context(true, &[], &[("rank", "3")])
    }

    #[test]
    fn json_text_base64_and_frames_are_detected() {
        assert_eq!(
            detect(JSON),
            Some(NcclBytes::Json {
                bytes: JSON.as_bytes().to_vec(),
                base64: false
            })
        );
        let b64 = STANDARD.encode(JSON);
        assert_eq!(
            detect(&b64),
            Some(NcclBytes::Json {
                bytes: JSON.as_bytes().to_vec(),
                base64: true
            })
        );
        let frame = FrameCodec::default().encode(&context()).unwrap();
        assert_eq!(
            detect(&STANDARD.encode(&frame)),
            Some(NcclBytes::Frame(frame))
        );
        // Header values are not NCCL bytes.
        for header in [
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "userId=alice",
            "congo=t61rcWkgMzE",
            "abcd",
        ] {
            assert_eq!(detect(header), None, "{header}");
        }
    }

    #[test]
    fn a_frame_shows_its_header_and_each_header_of_its_carrier() {
        let frame = FrameCodec::default().encode(&context()).unwrap();
        let inspection = inspect(&NcclBytes::Frame(frame), false);
        assert!(inspection.valid);
        let out = inspection.text;
        assert!(out.starts_with("nccl frame: 4096 bytes"), "{out}");
        assert!(out.contains("checksum ok"), "{out}");
        assert!(
            out.contains("traceparent: \"00-4bf92f3577b34da6a3ce929d0e0e4736"),
            "{out}"
        );
        assert!(out.contains("baggage: \"rank=3\""), "{out}");
        assert!(
            out.contains(&format!("sent on as {JSON} (the same bytes)")),
            "{out}"
        );
    }

    #[test]
    fn a_corrupt_frame_and_bad_json_are_invalid() {
        let mut frame = FrameCodec::default().encode(&context()).unwrap();
        frame[FRAME_HEADER_LEN] ^= 1;
        let inspection = inspect(&NcclBytes::Frame(frame), false);
        assert!(!inspection.valid);
        let out = inspection.text;
        assert!(out.contains("checksum mismatch"), "{out}");

        let bad = NcclBytes::Json {
            bytes: br#"{"traceparent": NaN}"#.to_vec(),
            base64: false,
        };
        let inspection = inspect(&bad, false);
        assert!(!inspection.valid);
        assert_eq!(
            inspection.rejections[0].rule.as_deref(),
            Some("docs/propagation-rules.md#carriers")
        );
        let out = inspection.text;
        assert!(out.contains("not a JSON carrier"), "{out}");
    }
}
