//! lens-core: W3C Trace Context and W3C Baggage propagation for OpenTelemetry.
#![forbid(unsafe_code)]

pub mod baggage;
pub mod carrier;
pub mod limits;

pub use limits::Limits;
