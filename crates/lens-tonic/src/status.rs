//! gRPC status codes on spans: the `rpc.grpc.status_code` attribute and the span status, per the
//! OpenTelemetry RPC semantic conventions.

// The legacy keys (semantic conventions before 1.37) are deprecated by those that replace them;
// they are still written unless `OTEL_SEMCONV_STABILITY_OPT_IN` says `rpc`.
#![allow(deprecated)]

use http::HeaderMap;
use lens_span::classify::{Classify, GrpcCodes, Outcome, RpcSide};
use opentelemetry_semantic_conventions::attribute as semconv;
use tonic::Code;

/// `rpc.system`.
pub const RPC_SYSTEM: &str = semconv::RPC_SYSTEM;
/// `rpc.service`.
pub const RPC_SERVICE: &str = semconv::RPC_SERVICE;
/// `rpc.method`.
pub const RPC_METHOD: &str = semconv::RPC_METHOD;
/// `rpc.grpc.status_code`.
pub const RPC_GRPC_STATUS_CODE: &str = semconv::RPC_GRPC_STATUS_CODE;
/// `server.address`.
pub const SERVER_ADDRESS: &str = semconv::SERVER_ADDRESS;
/// `server.port`.
pub const SERVER_PORT: &str = semconv::SERVER_PORT;

/// Which side of the call a span describes: it decides which codes are errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SpanSide {
    /// A CLIENT span: every code but `OK` is an error.
    Client,
    /// A SERVER span: only `UNKNOWN`, `DEADLINE_EXCEEDED`, `UNIMPLEMENTED`, `INTERNAL`,
    /// `UNAVAILABLE` and `DATA_LOSS` are errors (the others are the caller's fault).
    Server,
}

impl SpanSide {
    /// Whether `code` sets the span status to Error on this side (lens-span's
    /// [`RpcSide::is_error`]).
    pub fn is_error(self, code: Code) -> bool {
        RpcSide::from(self).is_error(code as i32)
    }
}

/// The default classifier of the gRPC layers: the codes [`SpanSide::is_error`] names are
/// errors, `error.type` is the code's name (`UNAVAILABLE`). A classifier of your own can fall
/// back on it:
///
/// ```
/// use lens_tonic::{Classify, Outcome, SpanSide};
/// use tonic::Code;
///
/// // A client for which NOT_FOUND is an answer, not an error.
/// let classifier = |code: &Code| match code {
///     Code::NotFound => Outcome::Success,
///     other => SpanSide::Client.classify(other),
/// };
/// assert!(!classifier.classify(&Code::NotFound).is_failure());
/// assert!(classifier.classify(&Code::Unavailable).is_failure());
/// ```
impl Classify<Code> for SpanSide {
    fn classify(&self, code: &Code) -> Outcome {
        GrpcCodes(RpcSide::from(*self)).classify(&(*code as i32))
    }
}

impl From<SpanSide> for RpcSide {
    fn from(side: SpanSide) -> Self {
        match side {
            SpanSide::Client => RpcSide::Client,
            SpanSide::Server => RpcSide::Server,
        }
    }
}

/// Parses a `grpc-status` value: decimal digits; anything else (or a value out of range) is
/// `UNKNOWN`, as gRPC clients treat it.
pub fn parse_grpc_status(value: &[u8]) -> Code {
    if value.is_empty() || value.len() > 2 || !value.iter().all(u8::is_ascii_digit) {
        return Code::Unknown;
    }
    let n = value
        .iter()
        .fold(0i32, |acc, d| acc * 10 + i32::from(d - b'0'));
    Code::from_i32(n)
}

/// The gRPC code a response's headers or trailers give: `grpc-status` when present.
pub fn grpc_status(headers: &HeaderMap) -> Option<Code> {
    headers
        .get("grpc-status")
        .map(|v| parse_grpc_status(v.as_bytes()))
}

/// The gRPC code for a response without `grpc-status` whose HTTP status is not 200 (the gRPC
/// HTTP-to-gRPC status mapping).
pub fn code_from_http_status(status: http::StatusCode) -> Option<Code> {
    Some(match status.as_u16() {
        200 => return None,
        400 => Code::Internal,
        401 => Code::Unauthenticated,
        403 => Code::PermissionDenied,
        404 => Code::Unimplemented,
        429 | 502 | 503 | 504 => Code::Unavailable,
        _ => Code::Unknown,
    })
}

/// Percent-decodes a `grpc-message` (lossy, never fails).
pub(crate) fn decode_message(raw: &[u8]) -> String {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b == b'%' && i + 2 < raw.len() {
            let hex = |c: u8| (c as char).to_digit(16).and_then(|d| u8::try_from(d).ok());
            if let (Some(h), Some(l)) = (hex(raw[i + 1]), hex(raw[i + 2])) {
                out.push(h * 16 + l);
                i += 3;
                continue;
            }
        }
        out.push(b);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_status_values() {
        assert_eq!(parse_grpc_status(b"0"), Code::Ok);
        assert_eq!(parse_grpc_status(b"14"), Code::Unavailable);
        assert_eq!(parse_grpc_status(b"16"), Code::Unauthenticated);
        assert_eq!(parse_grpc_status(b"17"), Code::Unknown);
        assert_eq!(parse_grpc_status(b""), Code::Unknown);
        assert_eq!(parse_grpc_status(b"x"), Code::Unknown);
        assert_eq!(parse_grpc_status(b"-1"), Code::Unknown);
        assert_eq!(parse_grpc_status(b"99999999999999999999"), Code::Unknown);
    }

    #[test]
    fn decodes_messages_without_panicking() {
        assert_eq!(decode_message(b"a%20b"), "a b");
        assert_eq!(decode_message(b"100%"), "100%");
        assert_eq!(decode_message(b"%4"), "%4");
        assert_eq!(decode_message(b"%zz"), "%zz");
        assert_eq!(decode_message(b"%C3%A9"), "\u{e9}");
    }

    #[test]
    fn server_error_codes_are_the_six_named() {
        let errors: Vec<i32> = (0..=16)
            .map(Code::from_i32)
            .filter(|c| SpanSide::Server.is_error(*c))
            .map(|c| c as i32)
            .collect();
        assert_eq!(errors, [2, 4, 12, 13, 14, 15]);
        let client: Vec<i32> = (0..=16)
            .map(Code::from_i32)
            .filter(|c| SpanSide::Client.is_error(*c))
            .map(|c| c as i32)
            .collect();
        assert_eq!(client, (1..=16).collect::<Vec<_>>());
    }
}
