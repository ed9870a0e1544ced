//! What [`span_knobs!`](crate::span_knobs) names, in the crates that call it: the items of this
//! crate and of its dependencies, at paths that do not go through the crate root.

pub use lens_core::W3cPropagator;
pub use opentelemetry::KeyValue;
pub use opentelemetry::metrics::Meter;
pub use opentelemetry::trace::{SpanRef, Tracer};

pub use crate::lifecycle::FilterDecision;
pub use crate::propagation::Propagation;

/// The policy knob's argument as the adapter's policy type (`impl Into<P>` or `P` itself).
#[inline]
pub fn policy_into<P, Q: Into<P>>(policy: Q) -> P {
    policy.into()
}
