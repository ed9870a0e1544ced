//! Extraction: what [`W3cPropagator`] reads from a carrier, header lines, a `HeaderMap` or JSON
//! bytes.

use opentelemetry::Context;
use opentelemetry::propagation::Extractor;
use opentelemetry::trace::{SpanContext, TraceState};

use super::w3c::{BAGGAGE_HEADER, TRACEPARENT_HEADER, TRACESTATE_HEADER, W3cPropagator};
use crate::baggage::BaggageList;
use crate::carrier::CarrierError;
use crate::carrier::json::{JsonLines, parse_propagation_lines};
use crate::context::{TraceStateCopy, extract_baggage, extracted_context};
use crate::traceparent::TraceParent;
use crate::tracestate::ExtractedTraceState;

impl W3cPropagator {
    /// The remote span context in the carrier, if its traceparent is valid (tracestate included).
    pub fn extract_span_context(&self, extractor: &dyn Extractor) -> Option<SpanContext> {
        let tp = self.traceparent_from(extractor)?;
        let tracestate = extractor.get_all(TRACESTATE_HEADER);
        Some(self.remote_span(&tp, tracestate.as_deref()).0)
    }

    /// The valid traceparent in the carrier, if any.
    pub(super) fn traceparent_from(&self, extractor: &dyn Extractor) -> Option<TraceParent> {
        let lines = extractor.get_all(TRACEPARENT_HEADER)?;
        TraceParent::parse_lines(lines, self.limits.traceparent_bytes).ok()
    }

    /// The remote span context of a valid traceparent and its tracestate lines; lens's own
    /// tracestate list is kept only when opentelemetry's `TraceState` cannot hold every member
    /// (otherwise inject writes the header from opentelemetry's, which costs less than a copy
    /// made on every extract).
    pub(super) fn remote_span(
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
    /// [`TextMapPropagator::extract_with_context`](opentelemetry::propagation::TextMapPropagator::extract_with_context) does once it has the lines, without asking an
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
    /// (this propagator's [`Limits`](crate::Limits)) and extracting from that carrier gives, without building
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
