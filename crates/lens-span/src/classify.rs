//! Deciding what is an error, apart from how a span is started or ended (in the spirit of
//! tower-http's `classify`): a classifier turns a response, a status or a failure into an
//! [`Outcome`], which [`LiveSpan::end_with`](crate::LiveSpan::end_with) records.
//!
//! `error.type` follows one rule in every adapter: the status code for an HTTP status
//! (`503`), the code's name for a gRPC status (`UNAVAILABLE`), the kind of a transport failure
//! where the adapter can tell it (`timeout`, `connect`, ...), else the failed type's name
//! ([`Outcome::error_of`]: a failed service or body), and `panic` for a panic.
//!
//! ```
//! use lens_span::classify::{Classify, GrpcCodes, HttpClientErrors, HttpServerErrors, Outcome, RpcSide};
//!
//! let not_found = http::StatusCode::NOT_FOUND;
//! assert!(!HttpServerErrors.classify(&not_found).is_failure()); // the caller's fault
//! assert!(HttpClientErrors.classify(&not_found).is_failure());
//! assert!(GrpcCodes(RpcSide::Client).classify(&5).is_failure()); // NOT_FOUND
//! assert!(!GrpcCodes(RpcSide::Server).classify(&5).is_failure());
//! assert!(matches!(HttpServerErrors.classify(&http::StatusCode::BAD_GATEWAY), Outcome::Failure { .. }));
//! ```

use std::borrow::Cow;

use opentelemetry::Value;

use crate::rpc::grpc_code_name;

/// What a call came to, as far as its span is concerned.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Not an error: the span keeps status Unset.
    Success,
    /// An error: the span gets `error.type` = `error_type` and status Error with `description`.
    Failure {
        /// The `error.type` attribute: a low-cardinality name of the failure.
        error_type: Value,
        /// The span status description.
        description: Cow<'static, str>,
    },
}

impl Outcome {
    /// A failure with this `error.type` and status description.
    pub fn failure(
        error_type: impl Into<Value>,
        description: impl Into<Cow<'static, str>>,
    ) -> Self {
        Outcome::Failure {
            error_type: error_type.into(),
            description: description.into(),
        }
    }

    /// A failure whose `error.type` is the type name of the error `E` (the conventions'
    /// fallback when no better name is known): a failed service, a failed body.
    pub fn error_of<E: ?Sized>(description: impl Into<Cow<'static, str>>) -> Self {
        Outcome::failure(std::any::type_name::<E>(), description)
    }

    /// The handler (or the inner service) panicked: `error.type` = `panic`.
    pub fn panic() -> Self {
        Outcome::failure("panic", "panicked")
    }

    /// Whether this is a [`Outcome::Failure`].
    pub fn is_failure(&self) -> bool {
        matches!(self, Outcome::Failure { .. })
    }
}

/// Decides whether `R` (a status, a response) is an error for one kind of span. Closures
/// `Fn(&R) -> Outcome` are classifiers too.
///
/// ```
/// use lens_span::classify::{Classify, HttpServerErrors, Outcome};
/// use http::StatusCode;
///
/// // A server whose 404s are errors, and otherwise as the conventions say.
/// let classifier = |status: &StatusCode| match *status {
///     StatusCode::NOT_FOUND => Outcome::failure("404", "not found"),
///     other => HttpServerErrors.classify(&other),
/// };
/// assert!(classifier.classify(&StatusCode::NOT_FOUND).is_failure());
/// assert!(!classifier.classify(&StatusCode::OK).is_failure());
/// ```
pub trait Classify<R: ?Sized> {
    /// The outcome `response` means.
    fn classify(&self, response: &R) -> Outcome;
}

impl<R: ?Sized, F: Fn(&R) -> Outcome> Classify<R> for F {
    fn classify(&self, response: &R) -> Outcome {
        self(response)
    }
}

/// What the failure hook (`with_on_failure` in every adapter) sees of a failure.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct Failure<'a> {
    /// The `error.type` recorded.
    pub error_type: &'a Value,
    /// The span status description.
    pub description: &'a str,
}

/// HTTP SERVER spans: 5xx is an error (4xx is the client's fault), `error.type` is the status
/// code (HTTP semantic conventions).
#[derive(Clone, Copy, Debug, Default)]
pub struct HttpServerErrors;

/// HTTP CLIENT spans: 4xx and 5xx are errors, `error.type` is the status code. Transport
/// failures are classified by the adapter, which knows their kinds (`timeout`, `connect`, ...).
#[derive(Clone, Copy, Debug, Default)]
pub struct HttpClientErrors;

fn status_failure(status: http::StatusCode) -> Outcome {
    // Only on the error path: the status text is allocated for failed requests alone.
    Outcome::failure(status.as_u16().to_string(), "")
}

impl Classify<http::StatusCode> for HttpServerErrors {
    fn classify(&self, status: &http::StatusCode) -> Outcome {
        if status.is_server_error() {
            status_failure(*status)
        } else {
            Outcome::Success
        }
    }
}

impl Classify<http::StatusCode> for HttpClientErrors {
    fn classify(&self, status: &http::StatusCode) -> Outcome {
        if status.is_client_error() || status.is_server_error() {
            status_failure(*status)
        } else {
            Outcome::Success
        }
    }
}

/// Which side of a call a span describes: it decides which codes are errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RpcSide {
    /// A CLIENT span: every code but `OK` is an error.
    Client,
    /// A SERVER span: only `UNKNOWN`, `DEADLINE_EXCEEDED`, `UNIMPLEMENTED`, `INTERNAL`,
    /// `UNAVAILABLE` and `DATA_LOSS` are errors (the others are the caller's fault).
    Server,
}

impl RpcSide {
    /// Whether the gRPC status `code` sets the span status to Error on this side (RPC semantic
    /// conventions, gRPC).
    pub fn is_error(self, code: i32) -> bool {
        match self {
            RpcSide::Client => code != 0,
            // UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS.
            RpcSide::Server => matches!(code, 2 | 4 | 12 | 13 | 14 | 15),
        }
    }
}

/// gRPC spans: the codes [`RpcSide::is_error`] names are errors; `error.type` is the code's
/// name (`UNAVAILABLE`), as `rpc.response.status_code` has it.
#[derive(Clone, Copy, Debug)]
pub struct GrpcCodes(pub RpcSide);

impl Classify<i32> for GrpcCodes {
    fn classify(&self, code: &i32) -> Outcome {
        if self.0.is_error(*code) {
            Outcome::failure(grpc_code_name(*code), "")
        } else {
            Outcome::Success
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_error_codes_are_the_six_named() {
        let server: Vec<i32> = (0..=16).filter(|c| RpcSide::Server.is_error(*c)).collect();
        assert_eq!(server, [2, 4, 12, 13, 14, 15]);
        let client: Vec<i32> = (0..=16).filter(|c| RpcSide::Client.is_error(*c)).collect();
        assert_eq!(client, (1..=16).collect::<Vec<_>>());
    }

    #[test]
    fn http_status_classes() {
        for (code, server, client) in [(200, false, false), (404, false, true), (503, true, true)] {
            let status = http::StatusCode::from_u16(code).unwrap_or_default();
            assert_eq!(HttpServerErrors.classify(&status).is_failure(), server);
            assert_eq!(HttpClientErrors.classify(&status).is_failure(), client);
        }
        assert_eq!(
            HttpClientErrors.classify(&http::StatusCode::NOT_FOUND),
            Outcome::failure("404", "")
        );
        assert_eq!(
            GrpcCodes(RpcSide::Server).classify(&14),
            Outcome::failure("UNAVAILABLE", "")
        );
    }
}
