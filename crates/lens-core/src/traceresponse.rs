//! The `traceresponse` header (W3C Trace Context Level 2): a server returns its trace id and the
//! id of the span that handled the request.
//!
//! ```
//! use lens_core::traceresponse::TraceResponse;
//!
//! let tr = TraceResponse::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
//! assert_eq!(tr.child_id.to_string(), "00f067aa0ba902b7");
//! assert_eq!(tr.to_header_string(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
//! ```

use opentelemetry::trace::SpanContext;
use opentelemetry::{SpanId, TraceId};

use crate::traceparent::{TRACEPARENT_LEN, TraceParent, TraceParentError};

/// Header name of the trace response.
pub const TRACERESPONSE_HEADER: &str = "traceresponse";

/// A parsed or to-be-sent `traceresponse` value: same layout and rules as `traceparent`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TraceResponse {
    /// Version as received.
    pub version: u8,
    /// The trace id.
    pub trace_id: TraceId,
    /// The id of the span that served the request.
    pub child_id: SpanId,
    /// Trace flags as received.
    pub flags: u8,
}

impl TraceResponse {
    /// Parses a value with the traceparent rules (docs/propagation-rules.md#traceparent).
    pub fn parse(value: &str) -> Result<TraceResponse, TraceParentError> {
        TraceParent::parse(value).map(Self::from)
    }

    /// The trace response for a server span; `None` when its ids are invalid.
    pub fn from_span_context(sc: &SpanContext) -> Option<TraceResponse> {
        TraceParent::from_span_context(sc).map(Self::from)
    }

    /// Encodes as a version-00 value (flags restricted to sampled and random).
    pub fn encode(&self) -> [u8; TRACEPARENT_LEN] {
        self.as_traceparent().encode()
    }

    /// [`TraceResponse::encode`] as a `String`.
    pub fn to_header_string(&self) -> String {
        self.as_traceparent().to_header_string()
    }

    fn as_traceparent(&self) -> TraceParent {
        TraceParent {
            version: self.version,
            trace_id: self.trace_id,
            parent_id: self.child_id,
            flags: self.flags,
        }
    }
}

impl From<TraceParent> for TraceResponse {
    fn from(tp: TraceParent) -> Self {
        TraceResponse {
            version: tp.version,
            trace_id: tp.trace_id,
            child_id: tp.parent_id,
            flags: tp.flags,
        }
    }
}
