//! What the summary line of a trace says ([`Summary`]), and the line.

use std::fmt::Write as _;
use std::time::Duration;

use crate::model::{SpanId, TraceId};

use super::format::{counted, format_duration};

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
    /// Spans dropped by a bound ([`Layout::lost_spans`](crate::render::Layout::lost_spans)).
    pub lost_spans: u64,
    /// Shown before its quiet window had passed ([`Layout::cut_short`](crate::render::Layout::cut_short)).
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
