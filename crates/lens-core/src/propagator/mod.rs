//! [`W3cPropagator`]: W3C trace context and baggage in one `TextMapPropagator`, and the
//! process-wide propagator behind [`inject_context`] and [`extract_context`].

mod extract;
mod global;
mod inject;
pub(crate) mod outbound;
pub(crate) mod w3c;

pub use extract::{HeaderLines, INLINE_LINES};
pub use global::{
    extract_carrier_context, extract_context, extract_context_with, extract_json_context,
    inject_context, inject_context_from, install, install_propagator, propagator,
};
pub use w3c::{
    BAGGAGE_HEADER, PropagatorConfigError, TRACEPARENT_HEADER, TRACESTATE_HEADER, W3cPropagator,
};
