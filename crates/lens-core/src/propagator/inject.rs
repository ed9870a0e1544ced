//! Injection: what [`W3cPropagator`] writes into a carrier, a `HeaderMap` or JSON bytes.

use std::borrow::Cow;

use opentelemetry::Context;
use opentelemetry::baggage::BaggageExt;
use opentelemetry::propagation::{Injector, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;

use super::outbound::Outbound;
use super::w3c::{BAGGAGE_HEADER, TRACEPARENT_HEADER, TRACESTATE_HEADER, W3cPropagator};
use crate::baggage::header_from_otel as baggage_header_from_otel;
use crate::carrier::HeaderCarrier;
use crate::carrier::json::write_fields;
use crate::context::LensState;
use crate::traceparent::TraceParent;
use crate::tracestate::header_from_otel;

impl W3cPropagator {
    /// Injects the parts chosen (used by outbound policies): trace context and/or baggage.
    pub fn inject_parts(
        &self,
        cx: &Context,
        injector: &mut dyn Injector,
        trace_context: bool,
        baggage: bool,
    ) {
        self.write_parts(cx, &mut Through(injector), trace_context, baggage);
    }

    /// Injects `cx` into an `http::HeaderMap`: exactly what injecting into
    /// [`HeaderCarrier`](crate::HeaderCarrier)`(headers)` gives (every line of a name replaced),
    /// without a `String` for the `traceparent` (it is encoded on the stack and checked into a
    /// `HeaderValue` as it is) or a lookup of the names. The HTTP client middleware uses it per
    /// request.
    ///
    /// ```
    /// use http::HeaderMap;
    /// use lens_core::{LensContextExt, W3cPropagator};
    /// use opentelemetry::Context;
    ///
    /// let cx = Context::new().with_baggage_entry("job", "pretrain").unwrap();
    /// let mut headers = HeaderMap::new();
    /// headers.insert("baggage", "stale=1".parse().unwrap());
    /// W3cPropagator::new().inject_headers(&cx, &mut headers);
    /// assert_eq!(headers["baggage"], "job=pretrain");
    /// ```
    pub fn inject_headers(&self, cx: &Context, headers: &mut http::HeaderMap) {
        self.inject_headers_parts(cx, headers, true, true);
    }

    /// [`W3cPropagator::inject_headers`] with the parts chosen, as
    /// [`W3cPropagator::inject_parts`] chooses them.
    pub fn inject_headers_parts(
        &self,
        cx: &Context,
        headers: &mut http::HeaderMap,
        trace_context: bool,
        baggage: bool,
    ) {
        self.write_parts(cx, &mut HeaderCarrier(headers), trace_context, baggage);
    }

    /// The one writer of trace context and baggage, into any [`Outbound`].
    fn write_parts<O: Outbound + ?Sized>(
        &self,
        cx: &Context,
        out: &mut O,
        trace_context: bool,
        baggage: bool,
    ) {
        let state = LensState::of(cx);
        if trace_context && self.trace_context {
            let span = cx.span();
            let sc = span.span_context();
            if let Some(tp) = TraceParent::from_span_context(sc) {
                out.traceparent(&tp);
                match state.and_then(|state| state.tracestate_for(sc)) {
                    Some(list) => out.header(TRACESTATE_HEADER, Cow::Borrowed(list.header())),
                    // `None` for an empty `TraceState` too: no header.
                    None => {
                        if let Some(header) = header_from_otel(sc.trace_state()) {
                            out.header(TRACESTATE_HEADER, Cow::Owned(header));
                        }
                    }
                }
            }
        }
        if baggage && self.baggage {
            match state.and_then(|state| state.baggage_for(cx)) {
                Some(copy) => {
                    let header = copy.header();
                    if !header.is_empty() {
                        out.header(BAGGAGE_HEADER, Cow::Borrowed(header));
                    }
                }
                None => {
                    let b = cx.baggage();
                    if !b.is_empty() {
                        let header = baggage_header_from_otel(b, &self.limits);
                        if !header.is_empty() {
                            out.header(BAGGAGE_HEADER, Cow::Owned(header));
                        }
                    }
                }
            }
        }
    }

    /// Injects `cx` as the bytes of a JSON carrier, appended to `out`: exactly what injecting into
    /// a [`Carrier`](crate::Carrier) and [`Carrier::write_json`](crate::Carrier::write_json) give
    /// (Python's `json.dumps` of the carrier, docs/propagation-rules.md#json-byte-format; `{}` when nothing is sent), without
    /// building the `Carrier`.
    ///
    /// ```
    /// use lens_core::{LensContextExt, W3cPropagator};
    /// use opentelemetry::Context;
    ///
    /// let cx = Context::new().with_baggage_entry("job", "pretrain").unwrap();
    /// let mut out = Vec::new();
    /// W3cPropagator::new().inject_json(&cx, &mut out);
    /// assert_eq!(out, br#"{"baggage": "job=pretrain"}"#);
    /// ```
    pub fn inject_json(&self, cx: &Context, out: &mut Vec<u8>) {
        let mut fields = JsonFields([
            (TRACEPARENT_HEADER, None),
            (TRACESTATE_HEADER, None),
            (BAGGAGE_HEADER, None),
        ]);
        self.inject_context(cx, &mut fields);
        write_fields(&fields.0, out);
    }
}

/// What inject sets, kept for [`W3cPropagator::inject_json`] in the order a `Carrier` would hold
/// it (inject sets traceparent, tracestate, baggage, in that order, each at most once).
struct JsonFields([(&'static str, Option<String>); 3]);

impl Injector for JsonFields {
    fn set(&mut self, key: &str, value: String) {
        if let Some((_, slot)) = self.0.iter_mut().find(|(name, _)| *name == key) {
            *slot = Some(value);
        }
    }
}

/// An `Injector` as an [`Outbound`]: every value handed over as a `String`.
struct Through<'a>(&'a mut dyn Injector);

impl Outbound for Through<'_> {
    fn traceparent(&mut self, tp: &TraceParent) {
        self.0.set(TRACEPARENT_HEADER, tp.to_header_string());
    }

    fn header(&mut self, name: &'static str, value: Cow<'_, str>) {
        self.0.set(name, value.into_owned());
    }
}
