//! What a renderer is given: one trace with everything resolved ([`TraceView`]).

use std::collections::{HashMap, HashSet};

use super::hops::HopNames;
use super::layout::{Layout, layout};
use super::summary::Summary;
use crate::model::{LogRecord, Span, SpanId, Status, TraceId};

/// One trace, ready to draw: its spans laid out as a tree, the targets of its links resolved
/// (inside the trace and into the other traces given), and how hops are named. A
/// [`Session`](crate::session::Session) makes them; [`TraceView::from_spans`] makes one from
/// spans alone.
#[derive(Clone, Debug)]
pub struct TraceView<'a> {
    layout: Layout<'a>,
    targets: HashMap<(TraceId, SpanId), &'a Span>,
    names: HopNames<'a>,
    logs: HashMap<SpanId, Vec<&'a LogRecord>>,
}

impl<'a> TraceView<'a> {
    /// The trace `trace_id` made of `spans`; its links resolved among `spans` and `others`
    /// (spans of other traces a link may point at).
    pub fn new(
        trace_id: TraceId,
        spans: &'a [Span],
        others: impl IntoIterator<Item = &'a Span>,
        names: HopNames<'a>,
    ) -> Self {
        let mut targets: HashMap<(TraceId, SpanId), &'a Span> = HashMap::new();
        for span in spans {
            targets.insert((span.trace_id, span.span_id), span);
        }
        // Only the spans of other traces that a link names are kept.
        let wanted: HashSet<(TraceId, SpanId)> = spans
            .iter()
            .flat_map(|span| &span.links)
            .filter(|l| l.trace_id != trace_id)
            .map(|l| (l.trace_id, l.span_id))
            .collect();
        if !wanted.is_empty() {
            for span in others {
                if wanted.contains(&(span.trace_id, span.span_id)) {
                    targets.entry((span.trace_id, span.span_id)).or_insert(span);
                }
            }
        }
        TraceView {
            layout: layout(trace_id, spans.iter().collect()),
            targets,
            names,
            logs: HashMap::new(),
        }
    }

    /// The trace `trace_id` made of `spans`, links resolved among them.
    pub fn from_spans(trace_id: TraceId, spans: &'a [Span], names: HopNames<'a>) -> Self {
        TraceView::new(trace_id, spans, [], names)
    }

    /// Shows `logs` under their spans: those of this trace with a span id, each span's in
    /// order of time (a [`Session`](crate::session::Session) gives them:
    /// [`Session::with_logs`](crate::session::Session::with_logs)).
    pub fn with_logs(mut self, logs: impl IntoIterator<Item = &'a LogRecord>) -> Self {
        let trace = self.layout.trace_id;
        for log in logs {
            if let Some((t, span)) = log.span()
                && t == trace
            {
                self.logs.entry(span).or_default().push(log);
            }
        }
        for records in self.logs.values_mut() {
            records.sort_by_key(|l| l.time());
        }
        self
    }

    /// The log records shown under span `span`, in order of time (none unless given by
    /// [`TraceView::with_logs`]).
    pub fn logs(&self, span: SpanId) -> &[&'a LogRecord] {
        self.logs.get(&span).map_or(&[], Vec::as_slice)
    }

    /// Marks the trace partial: `lost` of its spans were dropped by a bound.
    pub fn with_lost_spans(mut self, lost: u64) -> Self {
        self.layout.lost_spans = lost;
        self
    }

    /// Marks the trace as shown before its quiet window passed (a stop).
    pub fn with_cut_short(mut self, cut_short: bool) -> Self {
        self.layout.cut_short = cut_short;
        self
    }

    /// The trace.
    pub fn trace_id(&self) -> TraceId {
        self.layout.trace_id
    }

    /// Its spans in tree order.
    pub fn layout(&self) -> &Layout<'a> {
        &self.layout
    }

    /// How hops are named.
    pub fn names(&self) -> HopNames<'a> {
        self.names
    }

    /// The earliest start, in Unix nanoseconds.
    pub fn start(&self) -> u64 {
        self.layout.start
    }

    /// The latest end (not before the start), in Unix nanoseconds.
    pub fn end(&self) -> u64 {
        self.layout.end
    }

    /// The first root: the earliest span without a parent in the trace.
    pub fn root(&self) -> Option<&'a Span> {
        self.layout.rows.first().map(|r| r.span)
    }

    /// Services in order of first appearance in the tree.
    pub fn services(&self) -> Vec<&'a str> {
        let mut out: Vec<&'a str> = Vec::new();
        for row in &self.layout.rows {
            if !out.contains(&row.span.service()) {
                out.push(row.span.service());
            }
        }
        out
    }

    /// Spans whose status is an error.
    pub fn errors(&self) -> usize {
        self.layout
            .rows
            .iter()
            .filter(|r| matches!(r.span.status, Status::Error(_)))
            .count()
    }

    /// The span a link points at, in this trace or another one given.
    pub fn link_target(&self, trace: TraceId, span: SpanId) -> Option<&'a Span> {
        self.targets.get(&(trace, span)).copied()
    }

    /// The summary line's facts.
    pub fn summary(&self) -> Summary {
        self.layout.summary(self.names)
    }
}
