//! The names and values the suite and its harnesses agree on: headers, span name, attributes,
//! the W3C example trace.

/// The header (or gRPC metadata key) that tells the peer how to answer.
pub const RESPOND: &str = "x-suite-respond";
/// Requests carrying this header are skipped by the filter.
pub const SKIP_HEADER: &str = "x-suite-skip";
/// The span name [`Setup::named`](super::Setup::named) asks for.
pub const SPAN_NAME: &str = "suite-span";
/// The attribute the request hook adds.
pub const REQUEST_ATTRIBUTE: &str = "suite.request";
/// The attribute the response hook adds.
pub const RESPONSE_ATTRIBUTE: &str = "suite.response";
/// The `error.type` the classifier of [`Setup::classified`](super::Setup::classified) gives the caller's error.
pub const CLASSIFIED_ERROR: &str = "suite-classified";
/// The attribute the failure hook of [`Setup::classified`](super::Setup::classified) adds: the failure's `error.type`.
pub const FAILURE_ATTRIBUTE: &str = "suite.failure";

/// The W3C example trace.
pub const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
/// The W3C example parent span.
pub const PARENT_ID: &str = "00f067aa0ba902b7";
