//! Which propagator an adapter reads and writes with: lens's (process-wide or given), or the
//! one installed globally in opentelemetry (B3, Jaeger or a composite someone installed).

use std::sync::Arc;

use http::HeaderMap;
use http::header::HeaderName;
use lens_core::policy::{
    InboundContext, InboundDecision, InboundPolicy, InboundRequest, OutboundDecision,
};
use lens_core::{TRACEPARENT_HEADER, TRACESTATE_HEADER, W3cPropagator};
use opentelemetry::Context;
use opentelemetry::propagation::Injector;
use opentelemetry::trace::{SpanContext, TraceContextExt};

/// A carrier over an `http::HeaderMap` (HTTP headers, gRPC metadata): what
/// [`Propagation::inject`] writes into, after removing stale trace-context headers.
pub trait HeaderInjector {
    /// The headers, to remove stale entries from.
    fn headers_mut(&mut self) -> &mut HeaderMap;
    /// The carrier, to inject through (with its own rules for names and values).
    fn injector(&mut self) -> &mut dyn Injector;
    /// Injects the parts chosen with lens's propagator `lens`: through
    /// [`HeaderInjector::injector`], unless the carrier has a faster way to the same headers.
    fn inject_lens(&mut self, lens: &W3cPropagator, cx: &Context, parts: OutboundDecision) {
        lens.inject_parts(cx, self.injector(), parts.trace_context, parts.baggage);
    }
}

impl HeaderInjector for lens_core::HeaderCarrier<&mut HeaderMap> {
    fn headers_mut(&mut self) -> &mut HeaderMap {
        self.0
    }
    fn injector(&mut self) -> &mut dyn Injector {
        self
    }
    /// [`W3cPropagator::inject_headers_parts`]: the same headers, without a `String` for the
    /// `traceparent`.
    fn inject_lens(&mut self, lens: &W3cPropagator, cx: &Context, parts: OutboundDecision) {
        lens.inject_headers_parts(cx, self.0, parts.trace_context, parts.baggage);
    }
}

/// The propagator of an adapter.
///
/// ```
/// use lens_core::policy::{InboundPolicy, InboundRequest, OutboundDecision};
/// use lens_span::Propagation;
///
/// let mut headers = http::HeaderMap::new();
/// headers.insert("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".parse().unwrap());
/// let carrier = lens_core::HeaderCarrier(&headers);
/// let inbound = Propagation::default().extract(&InboundPolicy::trust_all(), &InboundRequest::from_headers(&carrier));
/// assert!(inbound.remote_span_context().is_some());
///
/// let mut out = http::HeaderMap::new();
/// out.insert("traceparent", "00-00000000000000000000000000000001-0000000000000001-00".parse().unwrap());
/// let all = OutboundDecision { trace_context: true, baggage: true };
/// Propagation::default().inject(all, &inbound.parent, &mut lens_core::HeaderCarrier(&mut out));
/// assert_eq!(out["traceparent"], headers["traceparent"]); // the stale one replaced
/// ```
#[derive(Clone, Debug, Default)]
pub enum Propagation {
    /// lens's process-wide propagator ([`lens_core::propagator`]), the default.
    #[default]
    Lens,
    /// This lens propagator.
    With(Arc<W3cPropagator>),
    /// The propagator installed with `opentelemetry::global::set_text_map_propagator` (read under
    /// opentelemetry's lock on every request: lens's own propagators take none).
    Global,
}

impl Propagation {
    /// The lens propagator, when this is not [`Propagation::Global`].
    pub fn lens(&self) -> Option<&W3cPropagator> {
        match self {
            Propagation::Lens => Some(lens_core::propagator()),
            Propagation::With(p) => Some(p),
            Propagation::Global => None,
        }
    }

    /// Decides with `policy` and extracts what it allows (docs/propagation-rules.md#trust): the parent to start the
    /// span under, or the remote span context to link to.
    pub fn extract(&self, policy: &InboundPolicy, request: &InboundRequest<'_>) -> InboundContext {
        if let Some(p) = self.lens() {
            return policy.extract_with(p, request);
        }
        let decision = policy.decide(request);
        let (parent, link) = match decision {
            InboundDecision::Trust => (
                opentelemetry::global::get_text_map_propagator(|p| {
                    p.extract_with_context(&Context::new(), request.headers)
                }),
                None,
            ),
            InboundDecision::Link => {
                let remote = opentelemetry::global::get_text_map_propagator(|p| {
                    p.extract_with_context(&Context::new(), request.headers)
                });
                let sc = remote.span().span_context().clone();
                (Context::new(), sc.is_valid().then_some(sc))
            }
            InboundDecision::Ignore => (Context::new(), None),
        };
        InboundContext {
            decision,
            parent,
            link,
        }
    }

    /// Injects `cx` into `headers` as `decision` allows, through the carrier `carrier` makes of
    /// them. Trace-context headers already there are removed first wherever trace context may go
    /// (a stale `traceparent` never travels beside, or instead of, the new one), also when `cx`
    /// has no valid span.
    pub fn inject(
        &self,
        decision: OutboundDecision,
        cx: &Context,
        carrier: &mut dyn HeaderInjector,
    ) {
        // Static names: a `&str` key would be parsed into a header name on every lookup.
        const TRACEPARENT: HeaderName = HeaderName::from_static(TRACEPARENT_HEADER);
        const TRACESTATE: HeaderName = HeaderName::from_static(TRACESTATE_HEADER);
        if !decision.trace_context && !decision.baggage {
            return;
        }
        match self.lens() {
            Some(p) => {
                // Usually there is nothing to remove: a request's headers are empty at this point
                // unless the caller set some.
                let headers = carrier.headers_mut();
                if decision.trace_context && !headers.is_empty() {
                    headers.remove(&TRACEPARENT);
                    headers.remove(&TRACESTATE);
                }
                carrier.inject_lens(p, cx, decision);
            }
            None => opentelemetry::global::get_text_map_propagator(|p| {
                let headers = carrier.headers_mut();
                if decision.trace_context && !headers.is_empty() {
                    for field in p.fields() {
                        headers.remove(field);
                    }
                }
                let carrier = carrier.injector();
                match (decision.trace_context, decision.baggage) {
                    (true, true) => p.inject_context(cx, carrier),
                    // The span alone: nothing else of the Context (its baggage) goes out.
                    (true, false) => {
                        let sc = cx.span().span_context().clone();
                        p.inject_context(&Context::new().with_remote_span_context(sc), carrier);
                    }
                    // The Context without its span.
                    _ => p.inject_context(
                        &cx.with_remote_span_context(SpanContext::empty_context()),
                        carrier,
                    ),
                }
            }),
        }
    }
}
