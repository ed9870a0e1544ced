//! The rules that read one trace: a missing parent, clock skew between a parent and its child
//! in another service, a dropped random flag, tracestate or baggage (dropped.rs), a span that is
//! its own parent, a duplicate span id, a link to a span never received.

use std::sync::Arc;

use super::doctor::{Doctor, MAX_SKEW_PAIRS, Traces};
use super::finding::{Finding, Rule, millis};
use super::hop_findings::missing_parent;
use super::span_index::SpanIndex;
use crate::model::{Span, SpanKind, TraceId};
impl Doctor {
    pub(super) fn single_span(
        &mut self,
        others: &dyn Traces,
        id: TraceId,
        span: &Span,
        by_id: &SpanIndex<'_>,
        partial: bool,
        findings: &mut Vec<Finding>,
    ) {
        match span.parent_span_id {
            Some(parent) if parent == span.span_id => findings.push(Finding {
                rule: Rule::SelfParent,
                trace_ids: vec![id],
                span_ids: vec![span.span_id],
                services: vec![span.service().to_owned()],
                message: format!(
                    "span {} (\"{}\" in {}) names itself as its parent: the instrumentation \
set the parent to the span's own context",
                    span.span_id,
                    span.name,
                    span.service()
                ),
            }),
            Some(parent) => match by_id.get(parent) {
                Some(p) => self.parent_and_child(id, p, span, findings),
                None if partial => {}
                None => findings.push(missing_parent(id, span, parent)),
            },
            None => {
                if span.kind == SpanKind::Server {
                    self.new_root(others, span, findings);
                }
            }
        }
        for link in &span.links {
            let found = if link.trace_id == id {
                (!partial).then(|| by_id.get(link.span_id).is_some())
            } else {
                others
                    .complete(&link.trace_id)
                    .map(|spans| spans.iter().any(|s| s.span_id == link.span_id))
            };
            if found == Some(false) {
                findings.push(Finding {
                    rule: Rule::DanglingLink,
                    trace_ids: vec![id, link.trace_id],
                    span_ids: vec![span.span_id, link.span_id],
                    services: vec![span.service().to_owned()],
                    message: format!(
                        "span {} (\"{}\" in {}) links to span {} of trace {}, which was received \
without it: the linked span was not sampled or not exported",
                        span.span_id,
                        span.name,
                        span.service(),
                        link.span_id,
                        link.trace_id
                    ),
                });
            }
        }
    }

    pub(super) fn parent_and_child(
        &mut self,
        id: TraceId,
        parent: &Span,
        child: &Span,
        findings: &mut Vec<Finding>,
    ) {
        if parent.service() == child.service() {
            return;
        }
        self.dropped_on_hop(id, parent, child, findings);
        // flag-dropped: both exporters report trace flags (the sampled bit of an exported span
        // is set) and the random flag (0x02) did not cross.
        let reports = |s: &Span| s.flags & 0x01 != 0;
        if reports(parent) && reports(child) && parent.flags & 0x02 != 0 && child.flags & 0x02 == 0
        {
            findings.push(Finding {
                rule: Rule::FlagDropped,
                trace_ids: vec![id],
                span_ids: vec![parent.span_id, child.span_id],
                services: vec![parent.service().to_owned(), child.service().to_owned()],
                message: format!(
                    "the W3C random flag (trace flags 0x02) of {} did not reach {}: the hop \
rewrote the trace flags (a proxy, or a propagator that keeps only the sampled bit)",
                    parent.service(),
                    child.service()
                ),
            });
        }
        // clock-skew: the child's clock offset lies in [child end - parent end, child start -
        // parent start]; the end bound holds for a CLIENT/SERVER pair only. Reported where both
        // bounds lie beyond the tolerances on the same side of zero: a server span that ends
        // after its client's on a busy host (it started after it) is no clock offset.
        let start = i128::from(child.start_unix_nano) - i128::from(parent.start_unix_nano);
        let pair = parent.kind == SpanKind::Client && child.kind == SpanKind::Server;
        let end = pair.then(|| i128::from(child.end_unix_nano) - i128::from(parent.end_unix_nano));
        // At least how far behind, or ahead: the bound nearer zero.
        let behind_by = -end.map_or(start, |e| e.max(start));
        let ahead_by = end.map_or(0, |e| e.min(start));
        let behind = behind_by > i128::from(self.config.start_tolerance_nanos);
        if !behind && ahead_by <= i128::from(self.config.end_margin_nanos) {
            return;
        }
        let key = (
            Arc::clone(&parent.resource.service),
            Arc::clone(&child.resource.service),
        );
        if self.skewed_pairs.contains(&key) || self.skewed_pairs.len() >= MAX_SKEW_PAIRS {
            return;
        }
        self.skewed_pairs.insert(key);
        let bound = if behind {
            format!(
                "{}'s clock is at least {} behind {}'s: \"{}\" starts before its parent \"{}\"",
                child.service(),
                millis(behind_by.unsigned_abs()),
                parent.service(),
                child.name,
                parent.name
            )
        } else {
            format!(
                "{}'s clock is at least {} ahead of {}'s: \"{}\" starts and ends after its client \
\"{}\"",
                child.service(),
                millis(ahead_by.unsigned_abs()),
                parent.service(),
                child.name,
                parent.name
            )
        };
        findings.push(Finding {
            rule: Rule::ClockSkew,
            trace_ids: vec![id],
            span_ids: vec![parent.span_id, child.span_id],
            services: vec![parent.service().to_owned(), child.service().to_owned()],
            message: format!(
                "{bound}; synchronise the hosts' clocks (NTP, chrony); span times are shown as \
exported (reported once per pair of services)"
            ),
        });
    }
}
