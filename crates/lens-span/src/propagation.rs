//! Which propagator an adapter reads and writes with: lens's (process-wide or given), or the
//! one installed globally in opentelemetry (B3, Jaeger or a composite someone installed).

use std::sync::Arc;

use http::HeaderMap;
use http::header::HeaderName;
use lens_core::policy::{
    InboundContext, InboundDecision, InboundPolicy, InboundRequest, OutboundDecision,
};
use lens_core::{HeaderCarrier, TRACEPARENT_HEADER, TRACESTATE_HEADER, W3cPropagator};
use opentelemetry::Context;
use opentelemetry::propagation::{Injector, TextMapPropagator};
use opentelemetry::trace::{SpanContext, TraceContextExt};

/// A carrier over an `http::HeaderMap` with rules of its own for names and values (gRPC
/// metadata): what [`Propagation::inject`] writes into, after removing stale trace-context
/// headers. Plain HTTP headers go through [`Propagation::inject_headers`].
pub trait HeaderInjector {
    /// The headers, to remove stale entries from.
    fn headers_mut(&mut self) -> &mut HeaderMap;
    /// The carrier, to inject through (with its own rules for names and values).
    fn injector(&mut self) -> &mut dyn Injector;
}

/// A message's headers as a carrier (a broker's header map, lens-nats's `NatsHeaders`): what
/// [`Propagation::inject_message`] writes into, after removing stale trace-context fields.
pub trait MessageCarrier: Injector {
    /// Removes every value of `field` (exact name, as the carrier compares names).
    fn remove(&mut self, field: &str);
}

/// Where [`Propagation`] injects.
enum Target<'a> {
    /// Plain HTTP headers: lens's propagator writes them directly.
    Headers(&'a mut HeaderMap),
    /// A carrier with rules of its own.
    Carrier(&'a mut dyn HeaderInjector),
}

impl Target<'_> {
    fn headers_mut(&mut self) -> &mut HeaderMap {
        match self {
            Target::Headers(headers) => headers,
            Target::Carrier(carrier) => carrier.headers_mut(),
        }
    }

    fn inject_global(&mut self, f: impl FnOnce(&mut dyn Injector)) {
        match self {
            Target::Headers(headers) => f(&mut HeaderCarrier(&mut **headers)),
            Target::Carrier(carrier) => f(carrier.injector()),
        }
    }
}

/// The propagator of an adapter: lens's process-wide one (the default), a given lens
/// propagator, or the one installed globally in opentelemetry.
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
/// Propagation::default().inject_headers(all, &inbound.parent, &mut out);
/// assert_eq!(out["traceparent"], headers["traceparent"]); // the stale one replaced
/// ```
#[derive(Clone, Debug, Default)]
pub struct Propagation(Kind);

#[derive(Clone, Debug, Default)]
enum Kind {
    #[default]
    Lens,
    With(Arc<W3cPropagator>),
    Global,
}

impl Propagation {
    /// lens's process-wide propagator ([`lens_core::propagator`]), the default.
    pub fn lens() -> Self {
        Propagation(Kind::Lens)
    }

    /// This lens propagator.
    pub fn with(propagator: W3cPropagator) -> Self {
        Propagation(Kind::With(Arc::new(propagator)))
    }

    /// The propagator installed with `opentelemetry::global::set_text_map_propagator` (read under
    /// opentelemetry's lock on every request: lens's own propagators take none).
    pub fn global() -> Self {
        Propagation(Kind::Global)
    }

    /// The lens propagator, unless this is the global one.
    fn lens_propagator(&self) -> Option<&W3cPropagator> {
        match &self.0 {
            Kind::Lens => Some(lens_core::propagator()),
            Kind::With(p) => Some(p),
            Kind::Global => None,
        }
    }

    /// Decides with `policy` and extracts what it allows (docs/propagation-rules.md#trust): the parent to start the
    /// span under, or the remote span context to link to.
    pub fn extract(&self, policy: &InboundPolicy, request: &InboundRequest<'_>) -> InboundContext {
        if let Some(p) = self.lens_propagator() {
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

    /// Injects `cx` into HTTP `headers` as `decision` allows. Trace-context headers already
    /// there are removed first wherever trace context may go (a stale `traceparent` never
    /// travels beside, or instead of, the new one), also when `cx` has no valid span.
    pub fn inject_headers(
        &self,
        decision: OutboundDecision,
        cx: &Context,
        headers: &mut HeaderMap,
    ) {
        self.inject_into(decision, cx, Target::Headers(headers));
    }

    /// [`Propagation::inject_headers`] through a carrier with rules of its own (gRPC metadata).
    pub fn inject(
        &self,
        decision: OutboundDecision,
        cx: &Context,
        carrier: &mut dyn HeaderInjector,
    ) {
        self.inject_into(decision, cx, Target::Carrier(carrier));
    }

    /// Injects `cx` into a message's headers as `decision` allows: the rules of
    /// [`Propagation::inject_headers`] (stale trace-context fields removed first, also when
    /// `cx` has no valid span), through [`MessageCarrier`].
    pub fn inject_message(
        &self,
        decision: OutboundDecision,
        cx: &Context,
        carrier: &mut dyn MessageCarrier,
    ) {
        if !decision.trace_context && !decision.baggage {
            return;
        }
        match self.lens_propagator() {
            Some(p) => {
                if decision.trace_context {
                    carrier.remove(TRACEPARENT_HEADER);
                    carrier.remove(TRACESTATE_HEADER);
                }
                p.inject_parts(cx, carrier, decision.trace_context, decision.baggage);
            }
            None => opentelemetry::global::get_text_map_propagator(|p| {
                if decision.trace_context {
                    for field in p.fields() {
                        carrier.remove(field);
                    }
                }
                inject_global(p, decision, cx, carrier);
            }),
        }
    }

    fn inject_into(&self, decision: OutboundDecision, cx: &Context, mut target: Target<'_>) {
        // Static names: a `&str` key would be parsed into a header name on every lookup.
        const TRACEPARENT: HeaderName = HeaderName::from_static(TRACEPARENT_HEADER);
        const TRACESTATE: HeaderName = HeaderName::from_static(TRACESTATE_HEADER);
        if !decision.trace_context && !decision.baggage {
            return;
        }
        match self.lens_propagator() {
            Some(p) => {
                // Usually there is nothing to remove: a request's headers are empty at this point
                // unless the caller set some.
                let headers = target.headers_mut();
                if decision.trace_context && !headers.is_empty() {
                    headers.remove(&TRACEPARENT);
                    headers.remove(&TRACESTATE);
                }
                match target {
                    // The same headers as through the carrier, without a `String` for the
                    // `traceparent`.
                    Target::Headers(headers) => p.inject_headers_parts(
                        cx,
                        headers,
                        decision.trace_context,
                        decision.baggage,
                    ),
                    Target::Carrier(carrier) => p.inject_parts(
                        cx,
                        carrier.injector(),
                        decision.trace_context,
                        decision.baggage,
                    ),
                }
            }
            None => opentelemetry::global::get_text_map_propagator(|p| {
                let headers = target.headers_mut();
                if decision.trace_context && !headers.is_empty() {
                    for field in p.fields() {
                        headers.remove(field);
                    }
                }
                target.inject_global(|carrier| inject_global(p, decision, cx, carrier));
            }),
        }
    }
}

/// Injects with the global propagator `p` what `decision` allows of `cx`.
fn inject_global(
    p: &dyn TextMapPropagator,
    decision: OutboundDecision,
    cx: &Context,
    carrier: &mut dyn Injector,
) {
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
}
