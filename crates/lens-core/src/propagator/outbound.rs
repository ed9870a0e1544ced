//! [`Outbound`]: where the propagator writes what it injects.

use std::borrow::Cow;

use crate::traceparent::TraceParent;

/// Where [`W3cPropagator`] writes what it injects: any `Injector` (through [`Through`]), or an
/// `http::HeaderMap` written directly (`carrier/header.rs`).
pub(crate) trait Outbound {
    /// Sets the `traceparent` of `tp`.
    fn traceparent(&mut self, tp: &TraceParent);
    /// Sets header `name` (`tracestate` or `baggage`) to `value`.
    fn header(&mut self, name: &'static str, value: Cow<'_, str>);
}
