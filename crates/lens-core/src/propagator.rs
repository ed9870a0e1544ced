//! [`W3cPropagator`]: W3C trace context and baggage in one `TextMapPropagator`, and the
//! process-wide propagator behind [`inject_context`] and [`extract_context`].

use std::borrow::Cow;
use std::sync::OnceLock;

use opentelemetry::Context;
use opentelemetry::baggage::BaggageExt;
use opentelemetry::propagation::text_map_propagator::FieldIter;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{SpanContext, TraceContextExt, TraceState};

use crate::baggage::{BaggageList, header_from_otel as baggage_header_from_otel};
use crate::carrier::CarrierError;
use crate::carrier::json::{JsonLines, parse_propagation_lines, write_fields};
use crate::context::{LensState, TraceStateCopy, extract_baggage, extracted_context};
use crate::traceparent::TraceParent;
use crate::tracestate::{ExtractedTraceState, header_from_otel};
use crate::{HeaderCarrier, Limits};

/// Header name of the trace parent.
pub const TRACEPARENT_HEADER: &str = "traceparent";
/// Header name of the trace state.
pub const TRACESTATE_HEADER: &str = "tracestate";
/// Header name of the baggage.
pub const BAGGAGE_HEADER: &str = "baggage";

/// W3C Trace Context (`traceparent`, `tracestate`) and W3C Baggage (`baggage`) in one
/// [`TextMapPropagator`], with lens's own codec (docs/propagation-rules.md#traceparent, docs/propagation-rules.md#tracestate, docs/propagation-rules.md#baggage, docs/propagation-rules.md#limits).
///
/// ```
/// use std::collections::HashMap;
/// use lens_core::{MapCarrier, W3cPropagator};
/// use opentelemetry::propagation::TextMapPropagator;
/// use opentelemetry::trace::TraceContextExt;
///
/// let mut headers = HashMap::new();
/// headers.insert("traceparent".to_string(),
///     "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".to_string());
/// headers.insert("baggage".to_string(), "user=alice".to_string());
///
/// let propagator = W3cPropagator::new();
/// let cx = propagator.extract(&MapCarrier(&headers));
/// assert_eq!(cx.span().span_context().trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
///
/// let mut out = HashMap::new();
/// propagator.inject_context(&cx, &mut MapCarrier(&mut out));
/// assert_eq!(out["traceparent"], headers["traceparent"]);
/// assert_eq!(out["baggage"], "user=alice");
/// ```
#[derive(Clone, Debug)]
pub struct W3cPropagator {
    trace_context: bool,
    baggage: bool,
    plus_as_space: bool,
    limits: Limits,
    fields: Vec<String>,
}

impl Default for W3cPropagator {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for W3cPropagator {
    fn eq(&self, other: &Self) -> bool {
        self.trace_context == other.trace_context
            && self.baggage == other.baggage
            && self.plus_as_space == other.plus_as_space
            && self.limits == other.limits
    }
}

impl W3cPropagator {
    /// Trace context and baggage, default limits, `plus_as_space` off.
    pub fn new() -> Self {
        Self::with_parts(true, true)
    }

    fn with_parts(trace_context: bool, baggage: bool) -> Self {
        let mut p = W3cPropagator {
            trace_context,
            baggage,
            plus_as_space: false,
            limits: Limits::DEFAULT,
            fields: Vec::new(),
        };
        p.refresh_fields();
        p
    }

    fn refresh_fields(&mut self) {
        self.fields.clear();
        if self.trace_context {
            self.fields.push(TRACEPARENT_HEADER.to_owned());
            self.fields.push(TRACESTATE_HEADER.to_owned());
        }
        if self.baggage {
            self.fields.push(BAGGAGE_HEADER.to_owned());
        }
    }

    /// Only trace context (`traceparent`, `tracestate`).
    pub fn trace_context_only() -> Self {
        Self::with_parts(true, false)
    }

    /// Only baggage.
    pub fn baggage_only() -> Self {
        Self::with_parts(false, true)
    }

    /// Propagates nothing (`OTEL_PROPAGATORS=none`).
    pub fn none() -> Self {
        Self::with_parts(false, false)
    }

    /// Reads `OTEL_PROPAGATORS`: `tracecontext`, `baggage` and `none`, comma-separated.
    /// Unset or empty gives [`W3cPropagator::new`].
    pub fn from_env() -> Result<Self, PropagatorConfigError> {
        match std::env::var("OTEL_PROPAGATORS") {
            Ok(v) => Self::from_names(&v),
            Err(_) => Ok(Self::new()),
        }
    }

    /// Parses a comma-separated list of propagator names as `OTEL_PROPAGATORS` does.
    pub fn from_names(names: &str) -> Result<Self, PropagatorConfigError> {
        let (mut tc, mut bg, mut any) = (false, false, false);
        for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            any = true;
            match name.to_ascii_lowercase().as_str() {
                "tracecontext" => tc = true,
                "baggage" => bg = true,
                "none" => {}
                _ => return Err(PropagatorConfigError::UnknownPropagator(name.to_owned())),
            }
        }
        Ok(if any {
            Self::with_parts(tc, bg)
        } else {
            Self::new()
        })
    }

    /// Sets the limits (docs/propagation-rules.md#limits).
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Decodes `+` in incoming baggage values as a space, for Python OpenTelemetry senders
    /// (docs/propagation-rules.md#baggage). Off by default.
    pub fn with_plus_as_space(mut self, on: bool) -> Self {
        self.plus_as_space = on;
        self
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Whether trace context is propagated.
    pub fn propagates_trace_context(&self) -> bool {
        self.trace_context
    }

    /// Whether baggage is propagated.
    pub fn propagates_baggage(&self) -> bool {
        self.baggage
    }

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

    /// The remote span context in the carrier, if its traceparent is valid (tracestate included).
    pub fn extract_span_context(&self, extractor: &dyn Extractor) -> Option<SpanContext> {
        let tp = self.traceparent_from(extractor)?;
        let tracestate = extractor.get_all(TRACESTATE_HEADER);
        Some(self.remote_span(&tp, tracestate.as_deref()).0)
    }

    /// The valid traceparent in the carrier, if any.
    fn traceparent_from(&self, extractor: &dyn Extractor) -> Option<TraceParent> {
        let lines = extractor.get_all(TRACEPARENT_HEADER)?;
        TraceParent::parse_lines(lines, self.limits.traceparent_bytes).ok()
    }

    /// The remote span context of a valid traceparent and its tracestate lines; lens's own
    /// tracestate list is kept only when opentelemetry's `TraceState` cannot hold every member
    /// (otherwise inject writes the header from opentelemetry's, which costs less than a copy
    /// made on every extract).
    fn remote_span(
        &self,
        tp: &TraceParent,
        tracestate: Option<&[&str]>,
    ) -> (SpanContext, Option<TraceStateCopy>) {
        let Some(lines) = tracestate else {
            return (tp.to_remote_span_context(TraceState::NONE), None);
        };
        let mut state = ExtractedTraceState::new();
        state.parse(lines, &self.limits);
        let sc = tp.to_remote_span_context(state.to_otel());
        let copy = state.into_list().map(|list| TraceStateCopy {
            trace_id: tp.trace_id,
            list,
        });
        (sc, copy)
    }

    /// The baggage in the carrier, `None` when there is no baggage header.
    pub fn extract_baggage(&self, extractor: &dyn Extractor) -> Option<BaggageList> {
        let lines = extractor.get_all(BAGGAGE_HEADER)?;
        Some(BaggageList::parse(lines, &self.limits, self.plus_as_space))
    }

    /// Extracts into `cx` from header lines already read from a carrier: what
    /// [`TextMapPropagator::extract_with_context`] does once it has the lines, without asking an
    /// [`Extractor`] for them (no `Vec` per header). An empty slice is an absent header.
    ///
    /// ```
    /// use lens_core::{HeaderLines, W3cPropagator};
    /// use opentelemetry::Context;
    /// use opentelemetry::baggage::BaggageExt;
    /// use opentelemetry::trace::TraceContextExt;
    ///
    /// let lines = HeaderLines {
    ///     traceparent: &["00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"],
    ///     baggage: &["user=alice", "tier=gold"],
    ///     ..HeaderLines::default()
    /// };
    /// let cx = W3cPropagator::new().extract_lines(&Context::new(), lines);
    /// assert!(cx.span().span_context().is_remote());
    /// assert_eq!(cx.baggage().get("tier").map(|v| v.as_str()), Some("gold"));
    /// ```
    pub fn extract_lines(&self, cx: &Context, lines: HeaderLines<'_>) -> Context {
        let trace = if self.trace_context {
            TraceParent::parse_lines(
                lines.traceparent.iter().copied(),
                self.limits.traceparent_bytes,
            )
            .ok()
            .map(|tp| {
                let tracestate = (!lines.tracestate.is_empty()).then_some(lines.tracestate);
                self.remote_span(&tp, tracestate)
            })
        } else {
            None
        };
        let baggage = if self.baggage && !lines.baggage.is_empty() {
            extract_baggage(lines.baggage, &self.limits, self.plus_as_space)
        } else {
            None
        };
        extracted_context(cx, trace, baggage)
    }

    /// Extracts into `cx` from an `http::HeaderMap`: exactly what extracting from
    /// [`HeaderCarrier`](crate::HeaderCarrier)`(headers)` gives (every line of a name, lines that
    /// are not visible ASCII skipped), without parsing the header names or collecting the lines
    /// into a `Vec` (up to [`INLINE_LINES`] lines of a name). A request's few headers are read in
    /// one pass; a map of many names, by three lookups. The HTTP layers use it per request.
    ///
    /// ```
    /// use http::{HeaderMap, HeaderValue};
    /// use lens_core::W3cPropagator;
    /// use opentelemetry::Context;
    /// use opentelemetry::baggage::BaggageExt;
    ///
    /// let mut headers = HeaderMap::new();
    /// headers.append("baggage", HeaderValue::from_static("a=1"));
    /// headers.append("Baggage", HeaderValue::from_static("b=2"));
    /// let cx = W3cPropagator::new().extract_headers(&Context::new(), &headers);
    /// assert_eq!(cx.baggage().len(), 2);
    /// ```
    pub fn extract_headers(&self, cx: &Context, headers: &http::HeaderMap) -> Context {
        const TRACEPARENT: http::HeaderName = http::HeaderName::from_static(TRACEPARENT_HEADER);
        const TRACESTATE: http::HeaderName = http::HeaderName::from_static(TRACESTATE_HEADER);
        const BAGGAGE: http::HeaderName = http::HeaderName::from_static(BAGGAGE_HEADER);
        let mut traceparent = StackLines::new();
        let mut tracestate = StackLines::new();
        let mut baggage = StackLines::new();
        if headers.keys_len() <= SCAN_HEADER_NAMES {
            // A request's few headers: one pass over them costs less than three hashed lookups.
            for (name, value) in headers {
                let lines = match name.as_str() {
                    TRACEPARENT_HEADER => &mut traceparent,
                    TRACESTATE_HEADER => &mut tracestate,
                    BAGGAGE_HEADER => &mut baggage,
                    _ => continue,
                };
                if let Ok(line) = value.to_str() {
                    lines.push(line);
                }
            }
        } else {
            for (name, lines) in [
                (&TRACEPARENT, &mut traceparent),
                (&TRACESTATE, &mut tracestate),
                (&BAGGAGE, &mut baggage),
            ] {
                for value in headers.get_all(name) {
                    if let Ok(line) = value.to_str() {
                        lines.push(line);
                    }
                }
            }
        }
        self.extract_lines(
            cx,
            HeaderLines {
                traceparent: traceparent.as_slice(),
                tracestate: tracestate.as_slice(),
                baggage: baggage.as_slice(),
            },
        )
    }

    /// Extracts into `cx` straight from the bytes of a JSON carrier (docs/propagation-rules.md#carriers): what decoding
    /// them with [`Carrier::from_json_bytes_with_limits`](crate::Carrier::from_json_bytes_with_limits)
    /// (this propagator's [`Limits`]) and extracting from that carrier gives, without building
    /// the `Carrier`: the header values
    /// are read in place unless a JSON escape forces a copy. Bytes the decoder rejects are the
    /// same error.
    ///
    /// ```
    /// use lens_core::W3cPropagator;
    /// use opentelemetry::Context;
    /// use opentelemetry::trace::TraceContextExt;
    ///
    /// let json = br#"{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}"#;
    /// let cx = W3cPropagator::new().extract_json(&Context::new(), json).unwrap();
    /// assert!(cx.span().span_context().is_remote());
    /// assert!(W3cPropagator::new().extract_json(&Context::new(), b"[1]").is_err());
    /// ```
    pub fn extract_json(&self, cx: &Context, json: &[u8]) -> Result<Context, CarrierError> {
        let found = parse_propagation_lines(json, &self.limits)?;
        let (traceparent, tracestate, baggage) = (
            LineRefs::of(&found.traceparent),
            LineRefs::of(&found.tracestate),
            LineRefs::of(&found.baggage),
        );
        Ok(self.extract_lines(
            cx,
            HeaderLines {
                traceparent: traceparent.as_slice(),
                tracestate: tracestate.as_slice(),
                baggage: baggage.as_slice(),
            },
        ))
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

/// Lines of one header name that [`W3cPropagator::extract_headers`] reads without a `Vec`
/// (more are still all read, into a `Vec`). A stable entry point for carriers of their own that
/// collect header lines for [`W3cPropagator::extract_lines`] on the stack: up to this many lines
/// per name is the common case lens itself is tuned for.
///
/// ```
/// use lens_core::{HeaderLines, INLINE_LINES, W3cPropagator};
/// use opentelemetry::Context;
/// use opentelemetry::baggage::BaggageExt;
///
/// // A carrier's `baggage` lines gathered on the stack, then extracted without an `Extractor`.
/// let mut lines = [""; INLINE_LINES];
/// lines[0] = "a=1";
/// lines[1] = "b=2";
/// let cx = W3cPropagator::new().extract_lines(
///     &Context::new(),
///     HeaderLines { baggage: &lines[..2], ..HeaderLines::default() },
/// );
/// assert_eq!(cx.baggage().len(), 2);
/// ```
pub const INLINE_LINES: usize = 4;

/// Up to this many header names, [`W3cPropagator::extract_headers`] finds lens's three headers
/// in one pass over the map; beyond, by three lookups.
const SCAN_HEADER_NAMES: usize = 24;

/// The visible-ASCII lines of one name of a `HeaderMap`, on the stack up to [`INLINE_LINES`].
enum StackLines<'a> {
    Inline([&'a str; INLINE_LINES], usize),
    Heap(Vec<&'a str>),
}

impl<'a> StackLines<'a> {
    fn new() -> Self {
        StackLines::Inline([""; INLINE_LINES], 0)
    }

    fn push(&mut self, line: &'a str) {
        match self {
            StackLines::Inline(buf, len) if *len < INLINE_LINES => {
                if let Some(slot) = buf.get_mut(*len) {
                    *slot = line;
                }
                *len += 1;
            }
            StackLines::Inline(buf, _) => {
                let mut all = buf.to_vec();
                all.push(line);
                *self = StackLines::Heap(all);
            }
            StackLines::Heap(all) => all.push(line),
        }
    }

    fn as_slice(&self) -> &[&'a str] {
        match self {
            StackLines::Inline(buf, len) => buf.get(..*len).unwrap_or_default(),
            StackLines::Heap(all) => all,
        }
    }
}

/// The lines of one header of a JSON carrier as `&str`s: one line needs no `Vec`.
enum LineRefs<'a> {
    Inline([&'a str; 1], usize),
    Heap(Vec<&'a str>),
}

impl<'a> LineRefs<'a> {
    fn of(lines: &'a JsonLines<'_>) -> Self {
        match lines {
            JsonLines::Absent => LineRefs::Inline([""], 0),
            JsonLines::One(line) => LineRefs::Inline([line.as_ref()], 1),
            JsonLines::Many(lines) => LineRefs::Heap(lines.iter().map(AsRef::as_ref).collect()),
        }
    }

    fn as_slice(&self) -> &[&'a str] {
        match self {
            LineRefs::Inline(line, len) => line.get(..*len).unwrap_or_default(),
            LineRefs::Heap(lines) => lines,
        }
    }
}

/// Header lines read from a carrier, for [`W3cPropagator::extract_lines`]; an empty slice is an
/// absent header. Several lines of one header are what several header fields of that name
/// give (docs/propagation-rules.md#traceparent, docs/propagation-rules.md#tracestate, docs/propagation-rules.md#baggage say how they combine).
#[derive(Clone, Copy, Debug, Default)]
pub struct HeaderLines<'a> {
    /// The `traceparent` lines.
    pub traceparent: &'a [&'a str],
    /// The `tracestate` lines.
    pub tracestate: &'a [&'a str],
    /// The `baggage` lines.
    pub baggage: &'a [&'a str],
}

/// Where [`W3cPropagator`] writes what it injects: any `Injector` (through [`Through`]), or an
/// `http::HeaderMap` written directly (`carrier/header.rs`).
pub(crate) trait Outbound {
    /// Sets the `traceparent` of `tp`.
    fn traceparent(&mut self, tp: &TraceParent);
    /// Sets header `name` (`tracestate` or `baggage`) to `value`.
    fn header(&mut self, name: &'static str, value: Cow<'_, str>);
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

impl TextMapPropagator for W3cPropagator {
    fn inject_context(&self, cx: &Context, injector: &mut dyn Injector) {
        self.inject_parts(cx, injector, true, true);
    }

    fn extract_with_context(&self, cx: &Context, extractor: &dyn Extractor) -> Context {
        let trace = if self.trace_context {
            self.traceparent_from(extractor).map(|tp| {
                let tracestate = extractor.get_all(TRACESTATE_HEADER);
                self.remote_span(&tp, tracestate.as_deref())
            })
        } else {
            None
        };
        let baggage = if self.baggage {
            extractor
                .get_all(BAGGAGE_HEADER)
                .and_then(|lines| extract_baggage(&lines, &self.limits, self.plus_as_space))
        } else {
            None
        };
        extracted_context(cx, trace, baggage)
    }

    fn fields(&self) -> FieldIter<'_> {
        FieldIter::new(&self.fields)
    }
}

/// A bad propagator configuration.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PropagatorConfigError {
    /// `OTEL_PROPAGATORS` names a propagator lens does not provide.
    #[error(
        "unknown propagator {0:?} in OTEL_PROPAGATORS: lens provides tracecontext, baggage and none"
    )]
    UnknownPropagator(String),
    /// [`install`] was called after the process-wide propagator was fixed to another configuration.
    #[error(
        "the lens propagator is already in use with another configuration; call install() before the first inject or extract"
    )]
    AlreadyInitialized,
}

static DEFAULT: OnceLock<W3cPropagator> = OnceLock::new();

/// The propagator lens uses when none is given: the one [`install`] set, else W3C trace context +
/// baggage as `OTEL_PROPAGATORS` selects (an unknown name there falls back to both; [`install`]
/// reports it), even if the application installed no propagator (NeMo Lens's default).
pub fn propagator() -> &'static W3cPropagator {
    DEFAULT.get_or_init(|| W3cPropagator::from_env().unwrap_or_default())
}

/// Reads `OTEL_PROPAGATORS`, makes the result lens's process-wide propagator and opentelemetry's
/// global text-map propagator.
///
/// ```
/// let propagator = lens_core::install().expect("valid OTEL_PROPAGATORS");
/// assert!(propagator.propagates_trace_context());
/// ```
pub fn install() -> Result<&'static W3cPropagator, PropagatorConfigError> {
    install_propagator(W3cPropagator::from_env()?)
}

/// Makes `propagator` lens's process-wide propagator and opentelemetry's global one.
pub fn install_propagator(
    propagator: W3cPropagator,
) -> Result<&'static W3cPropagator, PropagatorConfigError> {
    let installed = DEFAULT.get_or_init(|| propagator.clone());
    if *installed != propagator {
        return Err(PropagatorConfigError::AlreadyInitialized);
    }
    opentelemetry::global::set_text_map_propagator(installed.clone());
    Ok(installed)
}

/// Injects the current Context (NeMo Lens `inject_context`).
pub fn inject_context(injector: &mut dyn Injector) {
    Context::map_current(|cx| propagator().inject_context(cx, injector));
}

/// Injects the given Context.
pub fn inject_context_from(cx: &Context, injector: &mut dyn Injector) {
    propagator().inject_context(cx, injector);
}

/// Extracts a Context from a carrier, always starting from an empty Context (NeMo Lens
/// `extract_context`, docs/propagation-rules.md#extract-and-inject): without a valid traceparent the result has no remote span.
pub fn extract_context(extractor: &dyn Extractor) -> Context {
    propagator().extract_with_context(&Context::new(), extractor)
}

/// Extracts into the given Context.
pub fn extract_context_with(cx: &Context, extractor: &dyn Extractor) -> Context {
    propagator().extract_with_context(cx, extractor)
}

/// The Context in the bytes of a JSON carrier (NCCL bytes, a Ray-style call's carrier), with the
/// process-wide propagator (docs/propagation-rules.md#carriers, docs/propagation-rules.md#extract-and-inject): bytes holding a carrier are extracted from an empty
/// Context (`{}` gives an empty Context); bytes that are not a valid JSON carrier give the
/// caller's current Context, as NeMo Lens does. The bytes are read in place (see
/// [`W3cPropagator::extract_json`]).
///
/// ```
/// use lens_core::extract_json_context;
/// use opentelemetry::trace::TraceContextExt;
///
/// let json = br#"{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}"#;
/// assert!(extract_json_context(json).span().span_context().is_remote());
/// // Not a JSON object: the caller's Context.
/// assert!(!extract_json_context(b"[1]").span().span_context().is_valid());
/// ```
pub fn extract_json_context(json: &[u8]) -> Context {
    callers_context_unless(propagator().extract_json(&Context::new(), json).ok())
}

/// The Context of a JSON carrier already decoded (docs/propagation-rules.md#extract-and-inject): `Some` is extracted from an empty
/// Context; `None` (no carrier was sent, or its bytes were rejected) gives the caller's current
/// Context, as NeMo Lens does.
///
/// ```
/// use lens_core::{Carrier, extract_carrier_context};
/// use opentelemetry::trace::TraceContextExt;
///
/// let mut carrier = Carrier::new();
/// carrier.insert("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
/// assert!(extract_carrier_context(Some(&carrier)).span().span_context().is_remote());
/// assert!(!extract_carrier_context(None).span().span_context().is_valid());
/// ```
pub fn extract_carrier_context(carrier: Option<&crate::Carrier>) -> Context {
    callers_context_unless(carrier.map(|carrier| extract_context(carrier)))
}

/// docs/propagation-rules.md#extract-and-inject, written once: no carrier, or one that is rejected, means the caller's Context.
fn callers_context_unless(extracted: Option<Context>) -> Context {
    extracted.unwrap_or_else(Context::current)
}
