//! The one waterfall: a trace laid out as a tree by parent (with links, services, kinds,
//! durations and time bars) in a [`TraceView`] that has everything a renderer needs resolved,
//! its summary, and its renderings, each `(what, out: &mut String)`: [`Output::trace`] and
//! [`Output::findings`] for a terminal (text, colour optional) or JSON lines, [`html::trace`] and
//! [`html::page`] for a page.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::time::Duration;

use crate::model::{Span, SpanId, SpanKind, TraceId};

pub mod html;
pub mod json;
pub mod map;
pub mod text;
mod view;

pub use view::{Output, TraceView};

/// One row of a trace's tree.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Row<'a> {
    /// The span.
    pub span: &'a Span,
    /// Nesting depth (0 for a root).
    pub depth: usize,
    /// The tree drawing before the name (`│  ├─ `).
    pub prefix: String,
    /// The tree drawing for lines under this row (its links).
    pub continuation: String,
}

/// The spans of one trace, in tree order.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Layout<'a> {
    /// The trace.
    pub trace_id: TraceId,
    /// Every span, depth first, children by start time.
    pub rows: Vec<Row<'a>>,
    /// The earliest start, in Unix nanoseconds.
    pub start: u64,
    /// The latest end (not before `start`), in Unix nanoseconds.
    pub end: u64,
    /// Spans of the trace dropped by a bound of the assembler
    /// ([`TraceEntry::lost_spans`](crate::assemble::TraceEntry::lost_spans)); 0 from
    /// [`layout`], set by whoever knows: when non-zero the trace is shown as partial.
    pub lost_spans: u64,
    /// Shown before its quiet window had passed, because the receiver stopped (`false` from
    /// [`layout`]).
    pub cut_short: bool,
}

/// What the summary line says about a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Summary {
    /// The trace.
    pub trace_id: TraceId,
    /// Spans in it.
    pub spans: usize,
    /// Spans with no parent in the trace.
    pub roots: usize,
    /// Spans whose parent span id names a span missing from the trace.
    pub orphans: usize,
    /// Context crossings (spans with a remote parent), counted per kind of hop, in order of
    /// first appearance.
    pub hops: Vec<(String, usize)>,
    /// Span links.
    pub links: usize,
    /// From the earliest start to the latest end.
    pub duration: Duration,
    /// Spans dropped by a bound ([`Layout::lost_spans`]).
    pub lost_spans: u64,
    /// Shown before its quiet window had passed ([`Layout::cut_short`]).
    pub cut_short: bool,
    /// The span of another trace a root CONSUMER span links to: the trace continues that one by
    /// link (a batch receive, or a consumer that asked for links), by design.
    pub continued_from: Option<(TraceId, SpanId)>,
}

impl Summary {
    /// One root and every parent present.
    pub fn is_complete(&self) -> bool {
        self.roots == 1 && self.orphans == 0
    }

    /// Whether spans of the trace were dropped by a bound: what is shown is not all of it.
    pub fn is_partial(&self) -> bool {
        self.lost_spans > 0
    }

    /// Total context crossings.
    pub fn hop_count(&self) -> usize {
        self.hops.iter().map(|(_, n)| n).sum()
    }
}

/// How hops are named: instrumentation scopes whose spans with a remote parent are a known kind
/// of crossing (for lens: `("nemo.lens.ray", "remote call")`, `("lens-dist", "broadcast")`).
/// Spans with RPC or HTTP attributes are `grpc`/the RPC system and `http` whatever their scope.
#[derive(Clone, Copy, Debug, Default)]
pub struct HopNames<'a> {
    /// (scope name, label) pairs.
    pub scopes: &'a [(&'a str, &'a str)],
}

/// Groups spans by trace (traces in order of their earliest start) and lays each out as a
/// tree: children under their parent by start time; spans whose parent is not in the trace are
/// roots.
pub fn layouts<'a>(spans: impl IntoIterator<Item = &'a Span>) -> Vec<Layout<'a>> {
    let mut order: Vec<TraceId> = Vec::new();
    let mut by_trace: HashMap<TraceId, Vec<&'a Span>> = HashMap::new();
    for span in spans {
        by_trace
            .entry(span.trace_id)
            .or_insert_with(|| {
                order.push(span.trace_id);
                Vec::new()
            })
            .push(span);
    }
    let mut out: Vec<Layout<'a>> = order
        .into_iter()
        .filter_map(|id| by_trace.remove(&id).map(|spans| layout(id, spans)))
        .collect();
    out.sort_by_key(|t| t.start);
    out
}

/// Lays out the spans of one trace (all of `spans` are taken as belonging to `trace_id`).
pub fn layout(trace_id: TraceId, mut spans: Vec<&Span>) -> Layout<'_> {
    spans.sort_by_key(|s| (s.start_unix_nano, s.span_id));
    let present: HashSet<SpanId> = spans.iter().map(|s| s.span_id).collect();
    let mut children: HashMap<SpanId, Vec<&Span>> = HashMap::new();
    let mut roots = Vec::new();
    for span in &spans {
        match span.parent_span_id {
            Some(parent) if parent != span.span_id && present.contains(&parent) => {
                children.entry(parent).or_default().push(span);
            }
            _ => roots.push(*span),
        }
    }

    // Depth-first with an explicit stack (no recursion); `visited` guards against cycles and
    // duplicate span ids.
    let mut rows = Vec::with_capacity(spans.len());
    let mut visited: HashSet<*const Span> = HashSet::with_capacity(spans.len());
    let mut expanded: HashSet<SpanId> = HashSet::with_capacity(spans.len());
    // (span, depth, prefix for the row, continuation for its children and links)
    let mut stack: Vec<(&Span, usize, String, String)> = Vec::new();
    for root in roots.into_iter().rev() {
        stack.push((root, 0, String::new(), String::new()));
    }
    while let Some((span, depth, prefix, continuation)) = stack.pop() {
        if !visited.insert(span) {
            continue;
        }
        let kids = if expanded.insert(span.span_id) {
            children
                .get(&span.span_id)
                .map(Vec::as_slice)
                .unwrap_or_default()
        } else {
            &[]
        };
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
        if visited.insert(*span) {
            rows.push(Row {
                span,
                depth: 0,
                prefix: String::new(),
                continuation: "   ".to_owned(),
            });
        }
    }

    let (start, end) = bounds(spans.iter().copied());
    Layout {
        trace_id,
        rows,
        start,
        end,
        lost_spans: 0,
        cut_short: false,
    }
}

/// The earliest start and the latest end (not before the start) of `spans`, in Unix
/// nanoseconds; `(0, 0)` for none.
pub fn bounds<'a>(spans: impl IntoIterator<Item = &'a Span>) -> (u64, u64) {
    let (mut start, mut end) = (u64::MAX, 0);
    for span in spans {
        start = start.min(span.start_unix_nano);
        end = end.max(span.end_unix_nano);
    }
    if start == u64::MAX {
        return (0, 0);
    }
    (start, end.max(start))
}

impl Layout<'_> {
    /// The trace's summary: spans, roots, orphans, hops by kind, links, duration.
    pub fn summary(&self, names: HopNames<'_>) -> Summary {
        let present: HashSet<SpanId> = self.rows.iter().map(|r| r.span.span_id).collect();
        let mut roots = 0;
        let mut orphans = 0;
        let mut links = 0;
        let mut hops: Vec<(String, usize)> = Vec::new();
        let mut continued_from = None;
        for row in &self.rows {
            let span = row.span;
            if continued_from.is_none()
                && span.kind == SpanKind::Consumer
                && span.parent_span_id.is_none()
            {
                continued_from = span
                    .links
                    .iter()
                    .find(|l| l.trace_id != self.trace_id)
                    .map(|l| (l.trace_id, l.span_id));
            }
            match span.parent_span_id {
                None => roots += 1,
                Some(parent) if !present.contains(&parent) => {
                    roots += 1;
                    orphans += 1;
                }
                Some(_) => {}
            }
            links += span.links.len();
            if let Some(label) = hop_label(span, names) {
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
            duration: Duration::from_nanos(self.end - self.start),
            lost_spans: self.lost_spans,
            cut_short: self.cut_short,
            continued_from,
        }
    }

    /// Where `unix_nano` falls in the trace, from 0.0 (start) to 1.0 (end).
    pub fn position(&self, unix_nano: u64) -> f64 {
        let total = self.end - self.start;
        if total == 0 {
            return 0.0;
        }
        let at = unix_nano.saturating_sub(self.start);
        (at as f64 / total as f64).clamp(0.0, 1.0)
    }

    /// Services in order of first appearance in the tree.
    pub fn services(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for row in &self.rows {
            if !out.contains(&row.span.service()) {
                out.push(row.span.service());
            }
        }
        out
    }
}

/// The kind of context crossing that gave `span` its remote parent, if it has one: the RPC
/// system (`rpc.system` or `rpc.system.name`, e.g. `grpc`), `http` (stable or older HTTP
/// conventions), `messaging` (a message's consumer), else the label of its scope in `names`,
/// else the scope's name.
pub fn hop_label<'a>(span: &'a Span, names: HopNames<'a>) -> Option<&'a str> {
    if span.parent_is_remote() != Some(true) || span.parent_span_id.is_none() {
        return None;
    }
    let rpc = span
        .attribute("rpc.system.name")
        .or_else(|| span.attribute("rpc.system"));
    if let Some(system) = rpc {
        return Some(system.as_str().unwrap_or("rpc"));
    }
    if span.attribute("http.request.method").is_some() || span.attribute("http.method").is_some() {
        return Some("http");
    }
    // A message's consumer (current and older messaging conventions: `messaging.system`, or a
    // destination only, as celery writes it).
    if span.attribute("messaging.system").is_some()
        || span.attribute("messaging.destination.name").is_some()
        || span.attribute("messaging.destination").is_some()
    {
        return Some("messaging");
    }
    let scope = span.scope.name.as_str();
    Some(
        names
            .scopes
            .iter()
            .find(|(name, _)| *name == scope)
            .map_or(scope, |(_, label)| label),
    )
}

/// A duration as `850 µs`, `12.3 ms` or `1.24 s`.
pub fn format_duration(d: Duration) -> String {
    let micros = d.as_secs_f64() * 1e6;
    if micros < 1000.0 {
        format!("{micros:.0} µs")
    } else if micros < 1e6 {
        format!("{:.1} ms", micros / 1e3)
    } else {
        format!("{:.2} s", micros / 1e6)
    }
}

/// A span's duration.
pub fn span_duration(span: &Span) -> Duration {
    Duration::from_nanos(span.duration_nanos())
}

/// The summary line of a trace.
pub fn summary_line(summary: &Summary) -> String {
    let shape = if summary.is_partial() {
        // What is missing was dropped here, not lost on the way: say so before the shape.
        let mut shape = format!(
            "PARTIAL ({} more spans dropped over the per-trace limit",
            summary.lost_spans
        );
        if !summary.is_complete() {
            let _ = write!(
                shape,
                "; {} roots, {} spans without their parent",
                summary.roots, summary.orphans
            );
        }
        shape.push(')');
        shape
    } else if summary.is_complete() {
        "complete".to_owned()
    } else {
        format!(
            "INCOMPLETE ({} roots, {} spans without their parent)",
            summary.roots, summary.orphans
        )
    };
    let mut line = format!(
        "trace {}: {} spans, {shape}, {}",
        summary.trace_id,
        summary.spans,
        format_duration(summary.duration)
    );
    let _ = write!(line, "; {}", counted(summary.hop_count(), "hop"));
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
    let _ = write!(line, "; {}", counted(summary.links, "link"));
    if let Some((trace, span)) = summary.continued_from {
        let _ = write!(
            line,
            "; continued by link from span {span} of trace {trace}"
        );
    }
    if summary.cut_short {
        line.push_str("; cut short by the stop (its quiet window had not passed)");
    }
    line
}

/// `n` and `noun`, in the plural unless `n` is 1: `1 hop`, `2 hops`.
pub(crate) fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::model::{KeyValue, Value};
    use crate::testing::{TRACE, sample, span_at};

    #[test]
    fn tree_is_ordered_by_parent_then_start() {
        let spans = sample();
        let traces = layouts(&spans);
        assert_eq!(traces.len(), 1);
        let rows: Vec<(&str, usize, &str)> = traces[0]
            .rows
            .iter()
            .map(|r| (r.span.name.as_str(), r.depth, r.prefix.as_str()))
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
        let summary = layouts(&spans)[0].summary(HopNames::default());
        assert_eq!(summary.spans, 5);
        assert!(summary.is_complete());
        assert_eq!(summary.hops, [("http".to_owned(), 1)]);
        assert_eq!(summary.links, 1);
        assert_eq!(summary.duration, Duration::from_micros(1000));
        assert_eq!(
            summary_line(&summary),
            format!("trace {TRACE}: 5 spans, complete, 1.0 ms; 1 hop (1 http); 1 link")
        );
    }

    #[test]
    fn hop_labels_read_both_rpc_conventions_old_http_messaging_and_scope_names() {
        let mut s = span_at("svc", "x", 2, 1, crate::model::SpanKind::Server, (0, 1));
        s.flags = 0x301;
        let names = HopNames {
            scopes: &[("test", "remote call")],
        };
        assert_eq!(hop_label(&s, names), Some("remote call"));
        s.attributes = vec![KeyValue::new("http.method", Value::String("GET".into()))];
        assert_eq!(hop_label(&s, names), Some("http"));
        s.attributes = vec![KeyValue::new("rpc.system", Value::String("grpc".into()))];
        assert_eq!(hop_label(&s, names), Some("grpc"));
        s.attributes = vec![KeyValue::new(
            "rpc.system.name",
            Value::String("grpc".into()),
        )];
        assert_eq!(hop_label(&s, names), Some("grpc"));
        s.attributes = vec![KeyValue::new(
            "messaging.system",
            Value::String("nats".into()),
        )];
        assert_eq!(hop_label(&s, names), Some("messaging"));
        s.attributes = vec![KeyValue::new(
            "messaging.destination",
            Value::String("celery".into()),
        )];
        assert_eq!(hop_label(&s, names), Some("messaging"));
        // Not known to be remote (Python's 0x100 without 0x200, or no 0x100): no hop.
        s.flags = 0x100;
        assert_eq!(hop_label(&s, names), None);
        s.flags = 0x001;
        assert_eq!(hop_label(&s, names), None);
    }

    #[test]
    fn a_missing_parent_makes_the_trace_incomplete() {
        let mut spans = sample();
        spans.retain(|s| s.name != "POST /v1");
        let summary = layouts(&spans)[0].summary(HopNames::default());
        assert!(!summary.is_complete());
        assert_eq!(summary.orphans, 2);
        assert_eq!(summary.roots, 3);
        assert!(summary_line(&summary).contains("INCOMPLETE"));
    }

    #[test]
    fn a_parent_cycle_and_duplicate_ids_still_show_every_span_once() {
        let mut spans = sample();
        // Two spans that name each other as parent, and a duplicate of a span id.
        spans.push(span_at(
            "x",
            "cycle 1",
            20,
            21,
            crate::model::SpanKind::Internal,
            (0, 1),
        ));
        spans.push(span_at(
            "x",
            "cycle 2",
            21,
            20,
            crate::model::SpanKind::Internal,
            (0, 1),
        ));
        spans.push(span_at(
            "x",
            "dup",
            4,
            3,
            crate::model::SpanKind::Internal,
            (0, 1),
        ));
        let traces = layouts(&spans);
        let total: usize = traces.iter().map(|t| t.rows.len()).sum();
        assert_eq!(total, spans.len());
    }

    #[test]
    fn a_partial_or_cut_short_trace_says_so_in_its_summary() {
        let spans = sample();
        let mut layout = layouts(&spans).remove(0);
        layout.lost_spans = 3;
        layout.cut_short = true;
        let summary = layout.summary(HopNames::default());
        assert!(summary.is_partial());
        assert_eq!(
            summary_line(&summary),
            format!(
                "trace {TRACE}: 5 spans, PARTIAL (3 more spans dropped over the per-trace limit), \
1.0 ms; 1 hop (1 http); 1 link; cut short by the stop (its quiet window had not passed)"
            )
        );
    }

    #[test]
    fn a_consumer_root_linked_to_another_trace_is_continued_by_link() {
        let mut consumer = span_at("worker", "process jobs", 7, 0, SpanKind::Consumer, (0, 10));
        let other = TraceId([9; 16]);
        consumer.links.push(crate::model::Link {
            trace_id: other,
            span_id: SpanId([3; 8]),
            trace_state: String::new(),
            attributes: Vec::new(),
            flags: 0,
        });
        let spans = [consumer];
        let summary = layouts(&spans)[0].summary(HopNames::default());
        assert_eq!(summary.continued_from, Some((other, SpanId([3; 8]))));
        assert!(
            summary_line(&summary).ends_with(&format!(
                "; continued by link from span 0303030303030303 of trace {other}"
            )),
            "{}",
            summary_line(&summary)
        );
        // A link inside the trace, or from a span that is not a consumer root: no continuation.
        let mut server = spans[0].clone();
        server.kind = SpanKind::Server;
        let summary = layouts(&[server]).remove(0).summary(HopNames::default());
        assert_eq!(summary.continued_from, None);
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(format_duration(Duration::from_micros(850)), "850 µs");
        assert_eq!(format_duration(Duration::from_micros(12_345)), "12.3 ms");
        assert_eq!(format_duration(Duration::from_millis(1240)), "1.24 s");
    }
}
