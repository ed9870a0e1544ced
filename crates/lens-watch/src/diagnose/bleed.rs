//! `context-bleed` on live traffic: one CLIENT span with two SERVER children in another service
//! that ran at the same time. A retry is sequential, so overlapping receivers of one call are
//! two requests: a service attached one request's context to another's call. What spans cannot
//! tell (a bled call with a CLIENT span of its own in the wrong trace) is left to
//! `lens probe --repeat` (docs/doctor.md#context-bleed).

use super::finding::{Finding, Rule};
use super::span_index::SpanIndex;
use crate::model::{Span, SpanKind, TraceId};

/// The CLIENT spans of the trace `id` with overlapping SERVER children in another service: (the
/// client, its first child, the overlapping one).
pub(super) fn overlapping_receivers<'a>(
    spans: &'a [Span],
    by_id: &SpanIndex<'a>,
) -> Vec<(&'a Span, &'a Span, &'a Span)> {
    let mut out = Vec::new();
    let mut receivers: Vec<(&Span, &Span)> = spans
        .iter()
        .filter(|s| s.kind == SpanKind::Server)
        .filter_map(|s| {
            let parent = by_id.get(s.parent_span_id?)?;
            (parent.kind == SpanKind::Client && parent.service() != s.service())
                .then_some((parent, s))
        })
        .collect();
    receivers.sort_by_key(|(client, server)| (client.span_id, server.start_unix_nano));
    for pair in receivers.windows(2) {
        let ((client, first), (other_client, second)) = (pair[0], pair[1]);
        if client.span_id == other_client.span_id
            && second.start_unix_nano < first.end_unix_nano
            && out
                .iter()
                .all(|(c, _, _): &(&Span, &Span, &Span)| c.span_id != client.span_id)
        {
            out.push((client, first, second));
        }
    }
    out
}

/// The finding for `client` in trace `id`, whose receivers `first` and `second` overlap.
pub(super) fn finding(id: TraceId, client: &Span, first: &Span, second: &Span) -> Finding {
    Finding {
        rule: Rule::ContextBleed,
        trace_ids: vec![id],
        span_ids: vec![client.span_id, first.span_id, second.span_id],
        services: vec![client.service().to_owned(), second.service().to_owned()],
        message: format!(
            "one call of {} (span {}) has two receivers in {} that ran at the same time (spans {} \
and {}): two requests under one client span, the context of one attached to the other's call \
(a variable holding the last request's context, a thread-local a worker reuses); give each \
request's call its own context",
            client.service(),
            client.span_id,
            second.service(),
            first.span_id,
            second.span_id
        ),
    }
}
