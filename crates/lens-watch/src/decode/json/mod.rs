//! OTLP/JSON straight into the protobuf messages, streamed by serde (no intermediate JSON tree:
//! memory stays proportional to the spans, not to the text's nesting).
//!
//! What the specification and real exporters write: lowerCamelCase keys (and the proto field
//! names), 64-bit integers as strings or numbers, enums as integers or names, ids in hex (either
//! case; a malformed id becomes bytes of the wrong length, so that only its span is rejected),
//! `{}` as an empty AnyValue, `null` as an absent field, unknown fields ignored.

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use serde::de::{self, DeserializeOwned};

mod messages;
mod values;

use messages::{LogsRequest, Request};

/// Parses `bytes` as an OTLP/JSON `ExportTraceServiceRequest`; the error with the path of the
/// field at fault (`.` for the top level).
pub(super) fn request(
    bytes: &[u8],
) -> Result<ExportTraceServiceRequest, (String, serde_json::Error)> {
    parse::<Request, _>(bytes)
}

/// Parses `bytes` as an OTLP/JSON `ExportLogsServiceRequest`, as [`request`] does.
pub(super) fn logs_request(
    bytes: &[u8],
) -> Result<ExportLogsServiceRequest, (String, serde_json::Error)> {
    parse::<LogsRequest, _>(bytes)
}

/// Parses `bytes` as the JSON object `R`, into its protobuf message `P`.
fn parse<R: DeserializeOwned + Into<P>, P>(bytes: &[u8]) -> Result<P, (String, serde_json::Error)> {
    // serde reads a struct from an array too; a request is an object.
    if let Some(first) = bytes.iter().find(|b| !b.is_ascii_whitespace())
        && *first != b'{'
        && matches!(first, b'[' | b'"' | b'0'..=b'9' | b'-' | b't' | b'f' | b'n')
    {
        return Err((".".to_owned(), de::Error::custom("expected an object")));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let request: R = serde_path_to_error::deserialize(&mut deserializer)
        .map_err(|e| (e.path().to_string(), e.into_inner()))?;
    deserializer.end().map_err(|e| (".".to_owned(), e))?;
    Ok(request.into())
}
