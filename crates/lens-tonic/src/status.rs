//! gRPC status codes on spans: the `rpc.grpc.status_code` attribute and the span status, per the
//! OpenTelemetry RPC semantic conventions.

use http::HeaderMap;
use opentelemetry::KeyValue;
use opentelemetry::trace::{SpanRef, Status};
use tonic::Code;

/// `rpc.system`.
pub const RPC_SYSTEM: &str = "rpc.system";
/// `rpc.service`.
pub const RPC_SERVICE: &str = "rpc.service";
/// `rpc.method`.
pub const RPC_METHOD: &str = "rpc.method";
/// `rpc.grpc.status_code`.
pub const RPC_GRPC_STATUS_CODE: &str = "rpc.grpc.status_code";
/// `server.address`.
pub const SERVER_ADDRESS: &str = "server.address";
/// `server.port`.
pub const SERVER_PORT: &str = "server.port";

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
    /// Whether `code` sets the span status to Error on this side.
    pub fn is_error(self, code: Code) -> bool {
        match self {
            SpanSide::Client => code != Code::Ok,
            SpanSide::Server => matches!(
                code,
                Code::Unknown
                    | Code::DeadlineExceeded
                    | Code::Unimplemented
                    | Code::Internal
                    | Code::Unavailable
                    | Code::DataLoss
            ),
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
fn decode_message(raw: &[u8]) -> String {
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

/// Records `code` on `span`: the `rpc.grpc.status_code` attribute, and the Error status (with the
/// `grpc-message` of `headers`, when any) when `side` counts the code as an error.
pub(crate) fn record_code(span: &SpanRef<'_>, side: SpanSide, code: Code, headers: &HeaderMap) {
    span.set_attribute(KeyValue::new(RPC_GRPC_STATUS_CODE, i64::from(code as i32)));
    if side.is_error(code) {
        let description = match headers.get("grpc-message") {
            Some(m) if !m.is_empty() => {
                format!("{}: {}", code.description(), decode_message(m.as_bytes()))
            }
            _ => code.description().to_owned(),
        };
        span.set_status(Status::error(description));
    }
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
