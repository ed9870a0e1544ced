//! A trace laid out as a tree by parent ([`Layout`], a [`Row`] a span), its time bounds, and
//! its summary.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use crate::model::{Span, SpanId, SpanKind, TraceId};

use super::hops::{HopNames, hop_label};
use super::summary::Summary;

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
