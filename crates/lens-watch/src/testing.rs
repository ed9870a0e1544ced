//! Spans for the unit tests.

use std::sync::Arc;

use crate::model::{
    KeyValue, Link, LogRecord, Resource, Scope, Span, SpanId, SpanKind, Status, TraceId, Value,
};

pub(crate) const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

/// Span `id` (parent `parent`, 0 for none) of trace [`TRACE`], from `start` to `end`
/// microseconds after 1,700,000,000 s.
pub(crate) fn span_at(
    service: &str,
    name: &str,
    id: u64,
    parent: u64,
    kind: SpanKind,
    (start, end): (u64, u64),
) -> Span {
    let t0 = 1_700_000_000_000_000_000u64;
    Span {
        trace_id: TraceId::from_hex(TRACE).unwrap_or(TraceId([1; 16])),
        span_id: SpanId(id.to_be_bytes()),
        parent_span_id: SpanId::from_slice(&parent.to_be_bytes()),
        trace_state: String::new(),
        flags: 0x101,
        name: name.to_owned(),
        kind,
        resource: Arc::new(Resource::for_service(service)),
        scope: Arc::new(Scope {
            name: "test".into(),
            version: String::new(),
        }),
        start_unix_nano: t0 + start * 1000,
        end_unix_nano: t0 + end * 1000,
        attributes: Vec::new(),
        events: Vec::new(),
        links: Vec::new(),
        status: Status::Unset,
    }
}

/// Span `span` of trace `trace` (ids made of those bytes), child of `parent`.
pub(crate) fn span(trace: u8, span: u8, parent: Option<u8>) -> Span {
    let mut s = span_at("svc", "s", u64::from(span), 0, SpanKind::Internal, (0, 1));
    s.trace_id = TraceId([trace; 16]);
    s.parent_span_id = parent.map(|p| SpanId([p; 8]));
    s.span_id = SpanId([span; 8]);
    s
}

/// root(1) ─ client(2) ─ server(3, remote parent, http) ─ a(4), b(5, linked to a)
pub(crate) fn sample() -> Vec<Span> {
    let root = span_at("client", "request", 1, 0, SpanKind::Internal, (0, 1000));
    let client = span_at("client", "POST", 2, 1, SpanKind::Client, (100, 900));
    let mut server = span_at("gateway", "POST /v1", 3, 2, SpanKind::Server, (200, 800));
    server.flags = 0x301;
    server.attributes.push(KeyValue::new(
        "http.request.method",
        Value::String("POST".into()),
    ));
    let a = span_at("gateway", "stage a", 4, 3, SpanKind::Internal, (300, 500));
    let mut b = span_at("gateway", "stage b", 5, 3, SpanKind::Internal, (500, 700));
    b.links.push(Link {
        trace_id: a.trace_id,
        span_id: a.span_id,
        trace_state: String::new(),
        attributes: Vec::new(),
        flags: 0,
    });
    // Out of order on purpose: the tree is built by parent and start time.
    vec![b, server, a, root, client]
}

/// `spans` (all of one trace) as a view, links resolved among them.
pub(crate) fn view(spans: &[Span]) -> crate::render::TraceView<'_> {
    crate::render::TraceView::from_spans(
        spans[0].trace_id,
        spans,
        crate::render::HopNames::default(),
    )
}

/// A log record of service `gateway` at 5 ns, severity INFO, body `body`, emitted in span `span`
/// of trace [`TRACE`] (or in none).
pub(crate) fn log(span: Option<u64>, body: &str) -> LogRecord {
    LogRecord {
        time_unix_nano: 5,
        observed_time_unix_nano: 6,
        severity_number: 9,
        severity_text: String::new(),
        body: Value::String(body.to_owned()),
        attributes: vec![KeyValue::new("k", Value::Int(1))],
        trace_id: span.and_then(|_| TraceId::from_hex(TRACE)),
        span_id: span.and_then(|s| SpanId::from_slice(&s.to_be_bytes())),
        resource: Arc::new(Resource::for_service("gateway")),
        scope: Arc::new(Scope {
            name: "test".into(),
            version: String::new(),
        }),
    }
}
