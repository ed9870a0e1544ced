//! `lens inspect` for NCCL context bytes: the JSON text NeMo Lens's `serialize_context()` sends
//! (as it is, or base64), and lens-nccl context frames (base64).
//!
//! The bytes are read as lens-nccl reads them: a frame's header and checksum, then the JSON
//! carrier (SPEC.md §4), then each header in it as `lens inspect` reads header values.

use std::fmt::Write as _;
use std::process::ExitCode;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};
use lens_core::{Carrier, Limits, extract_context};
use lens_nccl::{FRAME_HEADER_LEN, FRAME_MAGIC, FrameCodec, serialize_context_from};

use super::{baggage, shown, traceparent, tracestate};

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

/// `Some(exit code)` when the `lens inspect` arguments are about NCCL bytes: `--as nccl`, or a
/// single value that [`detect`] recognises; `None` to inspect them as header values.
pub(super) fn main_if_nccl(args: &[String]) -> Option<ExitCode> {
    let mut forced = false;
    let mut plus_as_space = false;
    let mut values = Vec::new();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "-h" | "--help" => return None,
            "--plus-as-space" => plus_as_space = true,
            "--as" => match rest.next().map(String::as_str) {
                Some("nccl") => forced = true,
                _ => return None,
            },
            "--as=nccl" => forced = true,
            "--" => values.extend(rest.by_ref()),
            other if other.starts_with("--") => return None,
            _ => values.push(arg),
        }
    }
    let inputs: Vec<NcclBytes> = match (forced, values.as_slice()) {
        (false, [one]) => vec![detect(one)?],
        (false, _) => return None,
        (true, []) => return Some(usage("no VALUE to inspect")),
        (true, values) => {
            let mut inputs = Vec::with_capacity(values.len());
            for value in values {
                match detect(value) {
                    Some(input) => inputs.push(input),
                    None => {
                        return Some(usage(&format!(
                            "`{}` is neither JSON text nor base64 of a JSON carrier or a context frame",
                            shown(value)
                        )));
                    }
                }
            }
            inputs
        }
    };
    let mut out = String::new();
    let mut valid = true;
    for (i, input) in inputs.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        valid &= inspect(&mut out, input, plus_as_space);
    }
    print!("{out}");
    Some(if valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn usage(message: &str) -> ExitCode {
    eprintln!("error: {message}\n\n{}", super::HELP);
    ExitCode::from(crate::USAGE_ERROR)
}

/// Describes `input` into `out`; `true` when it is a valid carrier whose headers are valid.
pub(super) fn inspect(out: &mut String, input: &NcclBytes, plus_as_space: bool) -> bool {
    let limits = Limits::default();
    let json = match input {
        NcclBytes::Json { bytes, base64 } => {
            let _ = writeln!(
                out,
                "nccl bytes: {} bytes of JSON{}",
                bytes.len(),
                if *base64 { " (from base64)" } else { "" }
            );
            bytes.as_slice()
        }
        NcclBytes::Frame(frame) => {
            let _ = writeln!(out, "nccl frame: {} bytes (from base64)", frame.len());
            match FrameCodec::default().payload(frame) {
                Ok(json) => {
                    let _ = writeln!(
                        out,
                        "  header  magic LNCF, version 1, {} JSON bytes, checksum ok; {} bytes of padding",
                        json.len(),
                        frame.len().saturating_sub(FRAME_HEADER_LEN + json.len())
                    );
                    json
                }
                Err(e) => {
                    let _ = writeln!(
                        out,
                        "invalid: {e}\n  extract_nccl_context gives the caller's current Context for such bytes (SPEC.md §5)"
                    );
                    return false;
                }
            }
        }
    };
    let _ = writeln!(out, "  json    {}", shown(&String::from_utf8_lossy(json)));
    let carrier = match Carrier::from_json_bytes_with_limits(json, &limits) {
        Ok(carrier) => carrier,
        Err(e) => {
            let _ = writeln!(
                out,
                "invalid: not a JSON carrier: {e} (SPEC.md §4)\n  extract_nccl_context gives the caller's current Context for such bytes (SPEC.md §5)"
            );
            return false;
        }
    };
    let mut valid = true;
    let mut known = 0;
    for (key, lines) in carrier.iter() {
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        out.push('\n');
        for line in &lines {
            let _ = writeln!(out, "{key}: {}", shown(line));
        }
        valid &= match key {
            "traceparent" => traceparent(out, &lines, &limits),
            "tracestate" => tracestate(out, &lines, &limits),
            "baggage" => baggage(out, &lines, &limits, plus_as_space),
            _ => {
                let _ = writeln!(
                    out,
                    "ignored: lens reads only traceparent, tracestate and baggage"
                );
                known += 1;
                continue;
            }
        };
        known += 1;
    }
    if known == 0 {
        let _ = writeln!(out, "\nempty carrier: no trace context, no baggage");
    }
    // What lens-nccl would send for the context these bytes carry.
    let resent = serialize_context_from(&extract_context(&carrier));
    let _ = writeln!(
        out,
        "\nsent on as {}{}",
        String::from_utf8_lossy(&resent),
        if resent == json {
            " (the same bytes)"
        } else {
            ""
        }
    );
    valid
}

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
        let mut out = String::new();
        assert!(inspect(&mut out, &NcclBytes::Frame(frame), false));
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
        let mut out = String::new();
        assert!(!inspect(&mut out, &NcclBytes::Frame(frame), false));
        assert!(out.contains("checksum mismatch"), "{out}");

        let mut out = String::new();
        let bad = NcclBytes::Json {
            bytes: br#"{"traceparent": NaN}"#.to_vec(),
            base64: false,
        };
        assert!(!inspect(&mut out, &bad, false));
        assert!(out.contains("not a JSON carrier"), "{out}");
    }
}
