//! lens-core: W3C Trace Context and W3C Baggage propagation for OpenTelemetry, wire-compatible
//! with the Python propagation helpers of NVIDIA NeMo Lens.
//!
//! ```
//! use std::collections::HashMap;
//! use lens_core::{extract_context, inject_context_from, LensContextExt, MapCarrier};
//! use opentelemetry::trace::TraceContextExt;
//!
//! // An incoming request's headers.
//! let mut incoming = HashMap::new();
//! incoming.insert("traceparent".to_string(),
//!     "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".to_string());
//! incoming.insert("baggage".to_string(), "tenant=acme,user=alice%20smith".to_string());
//!
//! let cx = extract_context(&MapCarrier(&incoming));
//! assert!(cx.span().span_context().is_remote());
//! assert_eq!(cx.baggage_value("user").as_deref(), Some("alice smith"));
//!
//! // Calls made on behalf of that request carry the same trace and baggage, in order.
//! let mut outgoing = HashMap::new();
//! inject_context_from(&cx, &mut MapCarrier(&mut outgoing));
//! assert_eq!(outgoing["traceparent"], incoming["traceparent"]);
//! assert_eq!(outgoing["baggage"], "tenant=acme,user=alice%20smith");
//! ```
//!
//! The rules (docs/propagation-rules.md) follow the W3C specifications where opentelemetry's stock propagators do
//! not: every header line is read, every field length checked, the random flag kept, the current
//! tracestate key grammar accepted, baggage kept in order with its properties, and every input
//! bounded by [`Limits`].
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod baggage;
pub mod carrier;
mod context;
pub mod lexical;
pub mod limits;
pub mod policy;
mod propagator;
pub mod random_flag;
pub mod traceparent;
pub mod traceresponse;
pub mod tracestate;

pub use carrier::{Carrier, CarrierError, HeaderCarrier, MapCarrier};
pub use context::LensContextExt;
pub use limits::Limits;
pub use policy::{InboundDecision, InboundPolicy, OutboundPolicy};
pub use propagator::{
    BAGGAGE_HEADER, HeaderLines, INLINE_LINES, PropagatorConfigError, TRACEPARENT_HEADER,
    TRACESTATE_HEADER, W3cPropagator, extract_carrier_context, extract_context,
    extract_context_with, extract_json_context, inject_context, inject_context_from, install,
    install_propagator, propagator,
};
