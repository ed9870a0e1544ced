//! The waterfall: spans grouped by trace, laid out as a tree by parent, with links, service,
//! kind, duration and a time bar; as text (coloured or plain), as JSON, and (see
//! [`super::html`]) as an HTML page.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use opentelemetry::trace::{SpanId, SpanKind, Status, TraceId};
use opentelemetry::{Array, Value};
use opentelemetry_sdk::trace::SpanData;
use serde_json::{Map, Value as Json, json};
use unicode_width::{UnicodeWidthChar as _, UnicodeWidthStr as _};

use super::collect::CollectedSpan;

/// The instrumentation scope of the pipeline-rank spans: a span of this scope with a remote
/// parent got its context through the trace-context broadcast.
pub(crate) const BROADCAST_SCOPE: &str = "lens-dist";

/// Width of the time bar, in characters.
const BAR_WIDTH: usize = 40;

/// The widest the name column grows (tree prefix included), in characters.
const NAME_WIDTH_MAX: usize = 56;

/// One row of a trace's tree.
#[derive(Clone, Debug)]
pub(crate) struct Row<'a> {
    pub(crate) span: &'a CollectedSpan,
    /// Nesting depth (0 for a root).
    pub(crate) depth: usize,
    /// The tree drawing before the name (`│  ├─ `).
    pub(crate) prefix: String,
    /// The tree drawing for lines under this row (its links).
    pub(crate) continuation: String,
}

/// The spans of one trace, in tree order.
#[derive(Clone, Debug)]
pub(crate) struct Trace<'a> {
    pub(crate) trace_id: TraceId,
    pub(crate) rows: Vec<Row<'a>>,
    pub(crate) start: SystemTime,
    pub(crate) end: SystemTime,
}

/// What the summary line says about a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Summary {
    pub(crate) trace_id: TraceId,
    pub(crate) spans: usize,
    /// Spans with no parent in the trace.
    pub(crate) roots: usize,
    /// Spans whose parent span id names a span missing from the trace.
    pub(crate) orphans: usize,
    /// Context crossings (spans with a remote parent), counted per kind of hop, in order of
    /// first appearance.
    pub(crate) hops: Vec<(String, usize)>,
    /// Span links.
    pub(crate) links: usize,
    pub(crate) duration: Duration,
}

impl Summary {
    /// One root and every parent present.
    pub(crate) fn is_complete(&self) -> bool {
        self.roots == 1 && self.orphans == 0
    }

    /// Total context crossings.
    pub(crate) fn hop_count(&self) -> usize {
        self.hops.iter().map(|(_, n)| n).sum()
    }
}

/// Groups spans by trace (traces in order of their first start) and lays each out as a tree:
/// children under their parent by start time; spans whose parent is not in the trace are roots.
pub(crate) fn traces(spans: &[CollectedSpan]) -> Vec<Trace<'_>> {
    let mut order: Vec<TraceId> = Vec::new();
    let mut by_trace: HashMap<TraceId, Vec<&CollectedSpan>> = HashMap::new();
    for span in spans {
        let id = span.data.span_context.trace_id();
        by_trace
            .entry(id)
            .or_insert_with(|| {
                order.push(id);
                Vec::new()
            })
            .push(span);
    }
    let mut traces: Vec<Trace<'_>> = order
        .into_iter()
        .filter_map(|id| by_trace.remove(&id).map(|spans| layout(id, spans)))
        .collect();
    traces.sort_by_key(|t| t.start);
    traces
}

fn layout(trace_id: TraceId, mut spans: Vec<&CollectedSpan>) -> Trace<'_> {
    spans.sort_by_key(|s| (s.data.start_time, s.data.span_context.span_id().to_bytes()));
    let present: HashSet<SpanId> = spans
        .iter()
        .map(|s| s.data.span_context.span_id())
        .collect();
    let mut children: HashMap<SpanId, Vec<&CollectedSpan>> = HashMap::new();
    let mut roots = Vec::new();
    for span in &spans {
        let parent = span.data.parent_span_id;
        if parent != SpanId::INVALID
            && parent != span.data.span_context.span_id()
            && present.contains(&parent)
        {
            children.entry(parent).or_default().push(span);
        } else {
            roots.push(*span);
        }
    }

    // Depth-first with an explicit stack (no recursion); `visited` guards against cycles.
    let mut rows = Vec::with_capacity(spans.len());
    let mut visited: HashSet<SpanId> = HashSet::with_capacity(spans.len());
    // (span, depth, prefix for the row, continuation for its children and links)
    let mut stack: Vec<(&CollectedSpan, usize, String, String)> = Vec::new();
    for root in roots.into_iter().rev() {
        stack.push((root, 0, String::new(), String::new()));
    }
    while let Some((span, depth, prefix, continuation)) = stack.pop() {
        if !visited.insert(span.data.span_context.span_id()) {
            continue;
        }
        let kids = children
            .get(&span.data.span_context.span_id())
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (i, kid) in kids.iter().enumerate().rev() {
            let last = i + 1 == kids.len();
            let kid_prefix = format!("{continuation}{}", if last { "└─ " } else { "├─ " });
            let kid_continuation = format!("{continuation}{}", if last { "   " } else { "│  " });
            stack.push((kid, depth + 1, kid_prefix, kid_continuation));
        }
        let link_continuation = if kids.is_empty() {
            format!("{continuation}   ")
        } else {
            format!("{continuation}│  ")
        };
        rows.push(Row {
            span,
            depth,
            prefix,
            continuation: link_continuation,
        });
    }
    // Spans only reachable through a cycle of parents: shown as roots.
    for span in &spans {
        if visited.insert(span.data.span_context.span_id()) {
            rows.push(Row {
                span,
                depth: 0,
                prefix: String::new(),
                continuation: "   ".to_owned(),
            });
        }
    }

    let start = spans
        .iter()
        .map(|s| s.data.start_time)
        .min()
        .unwrap_or(UNIX_EPOCH);
    let end = spans
        .iter()
        .map(|s| s.data.end_time)
        .max()
        .unwrap_or(start)
        .max(start);
    Trace {
        trace_id,
        rows,
        start,
        end,
    }
}

impl Trace<'_> {
    /// The trace's summary: spans, roots, orphans, hops by kind, links, duration.
    pub(crate) fn summary(&self) -> Summary {
        let present: HashSet<SpanId> = self
            .rows
            .iter()
            .map(|r| r.span.data.span_context.span_id())
            .collect();
        let mut roots = 0;
        let mut orphans = 0;
        let mut links = 0;
        let mut hops: Vec<(String, usize)> = Vec::new();
        for row in &self.rows {
            let data = &row.span.data;
            let parent = data.parent_span_id;
            if parent == SpanId::INVALID {
                roots += 1;
            } else if !present.contains(&parent) {
                roots += 1;
                orphans += 1;
            }
            links += data.links.links.len();
            if let Some(label) = hop_label(data) {
                match hops.iter_mut().find(|(l, _)| *l == label) {
                    Some((_, n)) => *n += 1,
                    None => hops.push((label.to_owned(), 1)),
                }
            }
        }
        Summary {
            trace_id: self.trace_id,
            spans: self.rows.len(),
            roots,
            orphans,
            hops,
            links,
            duration: self.duration(),
        }
    }

    fn duration(&self) -> Duration {
        self.end.duration_since(self.start).unwrap_or_default()
    }

    /// Where `time` falls in the trace, from 0.0 (start) to 1.0 (end).
    pub(crate) fn position(&self, time: SystemTime) -> f64 {
        let total = self.duration().as_secs_f64();
        if total <= 0.0 {
            return 0.0;
        }
        let at = time.duration_since(self.start).unwrap_or_default();
        (at.as_secs_f64() / total).clamp(0.0, 1.0)
    }
}

/// The kind of context crossing that gave `span` its remote parent, if it has one.
pub(crate) fn hop_label(span: &SpanData) -> Option<&str> {
    if !span.parent_span_is_remote || span.parent_span_id == SpanId::INVALID {
        return None;
    }
    let has = |key: &str| span.attributes.iter().any(|kv| kv.key.as_str() == key);
    // `rpc.system` before semantic conventions 1.37, `rpc.system.name` after
    // (`OTEL_SEMCONV_STABILITY_OPT_IN=rpc`); `rpc/dup` writes both.
    Some(if has("rpc.system") || has("rpc.system.name") {
        "grpc"
    } else if has("http.request.method") {
        "http"
    } else {
        match span.instrumentation_scope.name() {
            lens_tonic::RAY_TRACER_NAME => "remote call",
            BROADCAST_SCOPE => "broadcast",
            other => other,
        }
    })
}

/// `SERVER`, `CLIENT`, ...
pub(crate) fn kind_name(kind: &SpanKind) -> &'static str {
    match kind {
        SpanKind::Client => "CLIENT",
        SpanKind::Server => "SERVER",
        SpanKind::Producer => "PRODUCER",
        SpanKind::Consumer => "CONSUMER",
        SpanKind::Internal => "INTERNAL",
    }
}

/// A duration as `850 µs`, `12.3 ms` or `1.24 s`.
pub(crate) fn format_duration(d: Duration) -> String {
    let micros = d.as_secs_f64() * 1e6;
    if micros < 1000.0 {
        format!("{micros:.0} µs")
    } else if micros < 1e6 {
        format!("{:.1} ms", micros / 1e3)
    } else {
        format!("{:.2} s", micros / 1e6)
    }
}

pub(crate) fn span_duration(data: &SpanData) -> Duration {
    data.end_time
        .duration_since(data.start_time)
        .unwrap_or_default()
}

/// The summary line of a trace.
pub(crate) fn summary_line(summary: &Summary) -> String {
    let mut line = format!(
        "trace {}: {} spans, {}, {}",
        summary.trace_id,
        summary.spans,
        if summary.is_complete() {
            "complete".to_owned()
        } else {
            format!(
                "INCOMPLETE ({} roots, {} spans without their parent)",
                summary.roots, summary.orphans
            )
        },
        format_duration(summary.duration)
    );
    let _ = write!(line, "; {} hops", summary.hop_count());
    if !summary.hops.is_empty() {
        line.push_str(" (");
        for (i, (label, n)) in summary.hops.iter().enumerate() {
            if i > 0 {
                line.push_str(", ");
            }
            let _ = write!(line, "{n} {label}");
        }
        line.push(')');
    }
    let _ = write!(line, "; {} links", summary.links);
    line
}

/// Colours for services, in order of first appearance (ANSI foreground codes).
const ANSI_PALETTE: [&str; 8] = ["36", "32", "33", "35", "34", "96", "92", "95"];
const ANSI_DIM: &str = "2";
const ANSI_BOLD: &str = "1";
const ANSI_RED: &str = "31";

/// Services in order of first appearance in the trace's tree.
pub(crate) fn services<'a>(trace: &'a Trace<'_>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for row in &trace.rows {
        if !out.contains(&&*row.span.service) {
            out.push(&row.span.service);
        }
    }
    out
}

struct Painter {
    colour: bool,
}

impl Painter {
    fn paint(&self, out: &mut String, code: &str, text: &str) {
        if self.colour && !text.is_empty() {
            let _ = write!(out, "\x1b[{code}m{text}\x1b[0m");
        } else {
            out.push_str(text);
        }
    }
}

fn pad(out: &mut String, width: usize, used: usize) {
    for _ in used..width {
        out.push(' ');
    }
}

/// `text` cut to at most `max` terminal columns (display width: a CJK character or an emoji
/// takes two), with `…` where it was cut; and the columns it takes.
fn truncate(text: &str, max: usize) -> (String, usize) {
    let width = text.width();
    if width <= max {
        return (text.to_owned(), width);
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > max {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    (out, used + 1)
}

/// The span (by id, in any trace of `all`) a link points at, as `name (service)`.
fn link_target(
    all: &HashMap<(TraceId, SpanId), &CollectedSpan>,
    trace: TraceId,
    span: SpanId,
) -> String {
    match all.get(&(trace, span)) {
        Some(target) => format!("{} ({})", target.data.name, target.service),
        None => format!("span {span} of trace {trace}"),
    }
}

/// Every span by (trace id, span id).
pub(crate) fn index(spans: &[CollectedSpan]) -> HashMap<(TraceId, SpanId), &CollectedSpan> {
    spans
        .iter()
        .map(|s| {
            (
                (
                    s.data.span_context.trace_id(),
                    s.data.span_context.span_id(),
                ),
                s,
            )
        })
        .collect()
}

/// Writes the waterfall of `trace` (header, one row per span, a line per link, the summary
/// line); ANSI colours when `colour`.
pub(crate) fn render_text(
    trace: &Trace<'_>,
    all: &HashMap<(TraceId, SpanId), &CollectedSpan>,
    colour: bool,
    out: &mut String,
) {
    let p = Painter { colour };
    let services = services(trace);
    let service_width = services
        .iter()
        .map(|s| s.width())
        .max()
        .unwrap_or(0)
        .max("service".len());
    let name_width = trace
        .rows
        .iter()
        .map(|r| r.prefix.width() + r.span.data.name.width())
        .max()
        .unwrap_or(0)
        .clamp("span".len(), NAME_WIDTH_MAX);
    let kind_width = "INTERNAL".len();
    let duration_width = 9;

    p.paint(out, ANSI_BOLD, &format!("trace {}", trace.trace_id));
    out.push('\n');
    let mut header = String::new();
    header.push_str("span");
    pad(&mut header, name_width, 4);
    let _ = write!(
        header,
        "  {:<service_width$}  {:<kind_width$}  {:>duration_width$}  timeline",
        "service", "kind", "duration"
    );
    p.paint(out, ANSI_DIM, &header);
    out.push('\n');

    for row in &trace.rows {
        let data = &row.span.data;
        let colour_code = service_colour(&services, &row.span.service);
        let prefix_len = row.prefix.width();
        let (name, name_len) = truncate(&data.name, name_width.saturating_sub(prefix_len));
        p.paint(out, ANSI_DIM, &row.prefix);
        let error = matches!(data.status, Status::Error { .. });
        p.paint(out, if error { ANSI_RED } else { ANSI_BOLD }, &name);
        pad(out, name_width, prefix_len + name_len);
        out.push_str("  ");
        p.paint(out, colour_code, &row.span.service);
        pad(out, service_width, row.span.service.width());
        out.push_str("  ");
        let kind = kind_name(&data.span_kind);
        p.paint(out, ANSI_DIM, kind);
        pad(out, kind_width, kind.len());
        let _ = write!(
            out,
            "  {:>duration_width$}  ",
            format_duration(span_duration(data))
        );
        let (from, to) = bar_cells(trace, data);
        out.push('│');
        pad(out, from, 0);
        p.paint(out, colour_code, &"█".repeat(to - from));
        pad(out, BAR_WIDTH, to);
        out.push('│');
        if error {
            out.push(' ');
            p.paint(out, ANSI_RED, "error");
        }
        out.push('\n');
        for link in &data.links.links {
            let target = link_target(
                all,
                link.span_context.trace_id(),
                link.span_context.span_id(),
            );
            p.paint(out, ANSI_DIM, &row.continuation);
            p.paint(out, ANSI_DIM, &format!("↳ link → {target}"));
            out.push('\n');
        }
    }
    out.push_str(&summary_line(&trace.summary()));
    out.push('\n');
}

fn service_colour(services: &[&str], service: &str) -> &'static str {
    let i = services.iter().position(|s| *s == service).unwrap_or(0);
    ANSI_PALETTE[i % ANSI_PALETTE.len()]
}

/// The bar's first cell and one past its last, out of [`BAR_WIDTH`]; at least one cell.
fn bar_cells(trace: &Trace<'_>, data: &SpanData) -> (usize, usize) {
    let width = BAR_WIDTH as f64;
    let from = (trace.position(data.start_time) * width).floor() as usize;
    let to = (trace.position(data.end_time) * width).ceil() as usize;
    let from = from.min(BAR_WIDTH - 1);
    (from, to.clamp(from + 1, BAR_WIDTH))
}

/// Nanoseconds since the Unix epoch (0 before it).
pub(crate) fn unix_nanos(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

fn value_json(value: &Value) -> Json {
    match value {
        Value::Bool(b) => Json::from(*b),
        Value::I64(i) => Json::from(*i),
        Value::F64(f) => Json::from(*f),
        Value::String(s) => Json::from(s.as_str()),
        Value::Array(Array::Bool(v)) => Json::from(v.clone()),
        Value::Array(Array::I64(v)) => Json::from(v.clone()),
        Value::Array(Array::F64(v)) => Json::from(v.clone()),
        Value::Array(Array::String(v)) => {
            Json::Array(v.iter().map(|s| Json::from(s.as_str())).collect())
        }
        other => Json::from(other.to_string()),
    }
}

fn attributes_json(attributes: &[opentelemetry::KeyValue]) -> Json {
    let mut map = Map::new();
    for kv in attributes {
        map.insert(kv.key.as_str().to_owned(), value_json(&kv.value));
    }
    Json::Object(map)
}

/// One span as a JSON object (ids in W3C hex; times in Unix nanoseconds).
pub(crate) fn span_json(span: &CollectedSpan) -> Json {
    let data = &span.data;
    let parent = (data.parent_span_id != SpanId::INVALID).then(|| data.parent_span_id.to_string());
    let (status, message) = match &data.status {
        Status::Unset => ("UNSET", None),
        Status::Ok => ("OK", None),
        Status::Error { description } => ("ERROR", Some(description.to_string())),
    };
    json!({
        "trace_id": data.span_context.trace_id().to_string(),
        "span_id": data.span_context.span_id().to_string(),
        "parent_span_id": parent,
        "parent_is_remote": data.parent_span_is_remote,
        "name": data.name,
        "kind": kind_name(&data.span_kind),
        "service": &*span.service,
        "scope": data.instrumentation_scope.name(),
        "start_unix_nano": unix_nanos(data.start_time),
        "end_unix_nano": unix_nanos(data.end_time),
        "duration_ns": u64::try_from(span_duration(data).as_nanos()).unwrap_or(u64::MAX),
        "status": status,
        "status_message": message,
        "attributes": attributes_json(&data.attributes),
        "links": data.links.links.iter().map(|l| json!({
            "trace_id": l.span_context.trace_id().to_string(),
            "span_id": l.span_context.span_id().to_string(),
            "attributes": attributes_json(&l.attributes),
        })).collect::<Vec<_>>(),
        "events": data.events.events.iter().map(|e| json!({
            "name": e.name,
            "time_unix_nano": unix_nanos(e.timestamp),
            "attributes": attributes_json(&e.attributes),
        })).collect::<Vec<_>>(),
    })
}

/// Every span, trace by trace in tree order, as a JSON array.
pub(crate) fn render_json(traces: &[Trace<'_>]) -> Json {
    Json::Array(
        traces
            .iter()
            .flat_map(|t| t.rows.iter().map(|r| span_json(r.span)))
            .collect(),
    )
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::borrow::Cow;
    use std::sync::Arc;

    use opentelemetry::trace::{Link, SpanContext, TraceFlags, TraceState};
    use opentelemetry::{InstrumentationScope, KeyValue};
    use opentelemetry_sdk::trace::{SpanEvents, SpanLinks};

    use super::*;

    pub(crate) const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

    /// A span `id` (hex, 16 digits) of trace [`TRACE`] from `start` to `end` microseconds.
    pub(crate) fn span(
        service: &str,
        name: &'static str,
        id: u64,
        parent: u64,
        kind: SpanKind,
        (start, end): (u64, u64),
    ) -> CollectedSpan {
        let t0 = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        CollectedSpan {
            service: Arc::from(service),
            data: SpanData {
                span_context: SpanContext::new(
                    TraceId::from_hex(TRACE).unwrap(),
                    SpanId::from(id),
                    TraceFlags::SAMPLED,
                    false,
                    TraceState::NONE,
                ),
                parent_span_id: SpanId::from(parent),
                parent_span_is_remote: false,
                span_kind: kind,
                name: Cow::Borrowed(name),
                start_time: t0 + Duration::from_micros(start),
                end_time: t0 + Duration::from_micros(end),
                attributes: Vec::new(),
                dropped_attributes_count: 0,
                events: SpanEvents::default(),
                links: SpanLinks::default(),
                status: Status::Unset,
                instrumentation_scope: InstrumentationScope::builder("test").build(),
            },
        }
    }

    pub(crate) fn link_to(span: &mut CollectedSpan, target: &CollectedSpan) {
        span.data
            .links
            .links
            .push(Link::with_context(target.data.span_context.clone()));
    }

    /// root(1) ─ client(2) ─ server(3, remote parent, http) ─ a(4), b(5, linked to a)
    pub(crate) fn sample() -> Vec<CollectedSpan> {
        let root = span("client", "request", 1, 0, SpanKind::Internal, (0, 1000));
        let client = span("client", "POST", 2, 1, SpanKind::Client, (100, 900));
        let mut server = span("gateway", "POST /v1", 3, 2, SpanKind::Server, (200, 800));
        server.data.parent_span_is_remote = true;
        server
            .data
            .attributes
            .push(KeyValue::new("http.request.method", "POST"));
        let a = span("gateway", "stage a", 4, 3, SpanKind::Internal, (300, 500));
        let mut b = span("gateway", "stage b", 5, 3, SpanKind::Internal, (500, 700));
        link_to(&mut b, &a);
        // Out of order on purpose: the tree is built by parent and start time.
        vec![b, server, a, root, client]
    }

    fn plain(spans: &[CollectedSpan]) -> String {
        let traces = traces(spans);
        let all = index(spans);
        let mut out = String::new();
        for t in &traces {
            render_text(t, &all, false, &mut out);
        }
        out
    }

    #[test]
    fn tree_is_ordered_by_parent_then_start() {
        let spans = sample();
        let traces = traces(&spans);
        assert_eq!(traces.len(), 1);
        let rows: Vec<(&str, usize, &str)> = traces[0]
            .rows
            .iter()
            .map(|r| (r.span.data.name.as_ref(), r.depth, r.prefix.as_str()))
            .collect();
        assert_eq!(
            rows,
            [
                ("request", 0, ""),
                ("POST", 1, "└─ "),
                ("POST /v1", 2, "   └─ "),
                ("stage a", 3, "      ├─ "),
                ("stage b", 3, "      └─ "),
            ]
        );
    }

    #[test]
    fn summary_counts_spans_hops_and_links() {
        let spans = sample();
        let summary = traces(&spans)[0].summary();
        assert_eq!(summary.spans, 5);
        assert!(summary.is_complete());
        assert_eq!(summary.hops, [("http".to_owned(), 1)]);
        assert_eq!(summary.links, 1);
        assert_eq!(summary.duration, Duration::from_micros(1000));
        assert_eq!(
            summary_line(&summary),
            format!("trace {TRACE}: 5 spans, complete, 1.0 ms; 1 hops (1 http); 1 links")
        );
    }

    /// A gRPC hop is named `grpc` under every `OTEL_SEMCONV_STABILITY_OPT_IN` choice: the
    /// key before semantic conventions 1.37, the key after, or both.
    #[test]
    fn a_grpc_hop_is_named_by_either_rpc_system_key() {
        for keys in [
            &["rpc.system"][..],
            &["rpc.system.name"],
            &["rpc.system", "rpc.system.name"],
        ] {
            let mut server = span("svc", "p.S/M", 3, 2, SpanKind::Server, (0, 10));
            server.data.parent_span_is_remote = true;
            server.data.instrumentation_scope = InstrumentationScope::builder("lens-tonic").build();
            for key in keys {
                server.data.attributes.push(KeyValue::new(*key, "grpc"));
            }
            assert_eq!(hop_label(&server.data), Some("grpc"), "{keys:?}");
        }
    }

    #[test]
    fn a_missing_parent_makes_the_trace_incomplete() {
        let mut spans = sample();
        spans.retain(|s| s.data.name != "POST /v1");
        let summary = traces(&spans)[0].summary();
        assert!(!summary.is_complete());
        assert_eq!(summary.orphans, 2);
        assert_eq!(summary.roots, 3);
        assert!(summary_line(&summary).contains("INCOMPLETE"));
    }

    #[test]
    fn plain_text_has_no_escape_codes_and_shows_every_span_and_link() {
        let text = plain(&sample());
        assert!(!text.contains('\x1b'), "{text}");
        for name in ["request", "POST", "POST /v1", "stage a", "stage b"] {
            assert!(text.lines().any(|l| l.contains(name)), "{name} in {text}");
        }
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], format!("trace {TRACE}"));
        assert!(lines[1].starts_with("span") && lines[1].contains("timeline"));
        // stage b's link line sits under it and names its target and service.
        let b = lines.iter().position(|l| l.contains("stage b")).unwrap();
        assert!(
            lines[b + 1].contains("↳ link → stage a (gateway)"),
            "{}",
            lines[b + 1]
        );
        assert!(lines[b].contains("gateway") && lines[b].contains("INTERNAL"));
        assert!(lines[b].contains("200 µs"));
        assert!(lines.last().unwrap().starts_with("trace "));
    }

    #[test]
    fn wide_characters_line_up_by_display_width() {
        let mut spans = sample();
        for span in &mut spans {
            if &*span.service == "gateway" {
                span.service = Arc::from("训练网关");
            }
        }
        spans[0].data.name = Cow::Borrowed("阶段 b 🚀");
        let text = plain(&spans);
        // The terminal column where each row's timeline starts, and where its kind starts.
        let column = |line: &str, at: usize| line[..at].width();
        let rows: Vec<&str> = text.lines().filter(|l| l.contains('│')).collect();
        assert_eq!(rows.len(), 5, "{text}");
        let bars: Vec<usize> = rows
            .iter()
            .map(|l| column(l, l.find('│').unwrap()))
            .collect();
        assert!(bars.iter().all(|c| *c == bars[0]), "{bars:?}\n{text}");
        let kinds: Vec<usize> = rows
            .iter()
            .map(|l| {
                let at = ["INTERNAL", "CLIENT", "SERVER"]
                    .iter()
                    .find_map(|k| l.find(k))
                    .unwrap();
                column(l, at)
            })
            .collect();
        assert!(kinds.iter().all(|c| *c == kinds[0]), "{kinds:?}\n{text}");
    }

    #[test]
    fn truncation_counts_columns() {
        assert_eq!(truncate("训练网关", 8), ("训练网关".to_owned(), 8));
        // Five columns: two wide characters and the ellipsis.
        assert_eq!(truncate("训练网关", 6), ("训练…".to_owned(), 5));
        assert_eq!(truncate("abcdef", 4), ("abc…".to_owned(), 4));
    }

    #[test]
    fn bars_are_placed_by_time() {
        let text = plain(&sample());
        let bar = |name: &str| -> String {
            let line = text.lines().find(|l| l.contains(name)).unwrap();
            let start = line.find('│').unwrap();
            line[start..].chars().skip(1).take(BAR_WIDTH).collect()
        };
        // The root spans the whole trace; stage a covers 300..500 µs of 1000: cells 12..20.
        assert_eq!(bar("request"), "█".repeat(BAR_WIDTH));
        let a = bar("stage a");
        assert_eq!(a.chars().position(|c| c == '█'), Some(12));
        assert_eq!(a.chars().filter(|c| *c == '█').count(), 8);
    }

    #[test]
    fn colour_uses_one_code_per_service() {
        let spans = sample();
        let traces = traces(&spans);
        let mut out = String::new();
        render_text(&traces[0], &index(&spans), true, &mut out);
        let client = out
            .lines()
            .find(|l| l.contains("INTERNAL") && l.contains("request"))
            .unwrap();
        let gateway = out.lines().find(|l| l.contains("POST /v1")).unwrap();
        assert!(client.contains("\x1b[36mclient"), "{client:?}");
        assert!(gateway.contains("\x1b[32mgateway"), "{gateway:?}");
        // Stripped of escapes, the coloured text is the plain text.
        let mut stripped = String::new();
        let mut chars = out.chars();
        while let Some(c) = chars.next() {
            if c == '\x1b' {
                for c in chars.by_ref() {
                    if c == 'm' {
                        break;
                    }
                }
            } else {
                stripped.push(c);
            }
        }
        assert_eq!(stripped, plain(&spans));
    }

    #[test]
    fn json_has_every_span_with_ids_kinds_services_and_links() {
        let spans = sample();
        let json = render_json(&traces(&spans));
        let array = json.as_array().unwrap();
        assert_eq!(array.len(), 5);
        let b = array.iter().find(|s| s["name"] == "stage b").unwrap();
        assert_eq!(b["trace_id"], TRACE);
        assert_eq!(b["span_id"], "0000000000000005");
        assert_eq!(b["parent_span_id"], "0000000000000003");
        assert_eq!(b["kind"], "INTERNAL");
        assert_eq!(b["service"], "gateway");
        assert_eq!(b["duration_ns"], 200_000);
        assert_eq!(b["links"][0]["span_id"], "0000000000000004");
        let root = &array[0];
        assert_eq!(root["name"], "request");
        assert!(root["parent_span_id"].is_null());
        let server = array.iter().find(|s| s["kind"] == "SERVER").unwrap();
        assert_eq!(server["attributes"]["http.request.method"], "POST");
        assert_eq!(server["parent_is_remote"], true);
    }

    #[test]
    fn traces_are_grouped_and_a_parent_cycle_still_shows_every_span() {
        let mut spans = sample();
        let mut other = span("x", "other", 9, 0, SpanKind::Server, (0, 10));
        other.data.span_context = SpanContext::new(
            TraceId::from(7u128),
            SpanId::from(9u64),
            TraceFlags::SAMPLED,
            false,
            TraceState::NONE,
        );
        spans.push(other);
        // Two spans that name each other as parent.
        let mut c1 = span("x", "cycle 1", 20, 21, SpanKind::Internal, (0, 1));
        let mut c2 = span("x", "cycle 2", 21, 20, SpanKind::Internal, (0, 1));
        for c in [&mut c1, &mut c2] {
            c.data.span_context = SpanContext::new(
                TraceId::from(8u128),
                c.data.span_context.span_id(),
                TraceFlags::SAMPLED,
                false,
                TraceState::NONE,
            );
        }
        spans.extend([c1, c2]);
        let traces = traces(&spans);
        assert_eq!(traces.len(), 3);
        let total: usize = traces.iter().map(|t| t.rows.len()).sum();
        assert_eq!(total, spans.len());
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(format_duration(Duration::from_micros(850)), "850 µs");
        assert_eq!(format_duration(Duration::from_micros(12_345)), "12.3 ms");
        assert_eq!(format_duration(Duration::from_millis(1240)), "1.24 s");
    }
}
