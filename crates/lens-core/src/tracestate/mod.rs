//! The `tracestate` header (W3C Trace Context, docs/propagation-rules.md#tracestate).
//!
//! ```
//! use lens_core::{Limits, tracestate::TraceStateList};
//!
//! let ts = TraceStateList::parse(["rojo=00f067aa0ba902b7 , congo=t61rcWkgMzE"], &Limits::default()).unwrap();
//! assert_eq!(ts.header(), "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
//! assert_eq!(ts.get("congo"), Some("t61rcWkgMzE"));
//! ```

mod error;
mod list;
mod otel;
mod parse;

pub use error::TraceStateError;
pub use list::{Members, TraceStateList};
pub(crate) use otel::{ExtractedTraceState, header_from_otel};
