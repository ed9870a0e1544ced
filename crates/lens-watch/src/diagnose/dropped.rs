//! The rules about what a hop carried besides the span: `tracestate-dropped` (the parent had
//! tracestate entries, its remote child none) and `baggage-dropped` (baggage keys the parent
//! recorded sending that the child did not record receiving, `lens.baggage.keys`).

use std::sync::Arc;

use super::doctor::Doctor;
use super::finding::{Finding, Rule};
use crate::model::{Span, SpanKind, TraceId, Value};

/// The attribute a lens adapter with `with_baggage_keys(true)` sets: the keys (never the values)
/// of the baggage a span's call carried, a string array, empty for none. lens-span writes it
/// (`lens_span::baggage_keys`); a test of the workspace checks the two names agree.
pub const BAGGAGE_KEYS_ATTRIBUTE: &str = "lens.baggage.keys";

/// The most services remembered as reporting tracestate.
const MAX_TRACE_STATE_SERVICES: usize = 10_000;

/// The most keys a finding names (the rest are counted).
const MAX_NAMED_KEYS: usize = 8;

/// Whether `parent` -> `child` is a hop between services: a CLIENT or PRODUCER span and its
/// SERVER or CONSUMER child.
fn remote_hop(parent: &Span, child: &Span) -> bool {
    matches!(parent.kind, SpanKind::Client | SpanKind::Producer)
        && matches!(child.kind, SpanKind::Server | SpanKind::Consumer)
}

/// The keys a span recorded in [`BAGGAGE_KEYS_ATTRIBUTE`]; `None` when it did not record them
/// (no attribute, or not an array of strings).
pub(crate) fn baggage_keys(span: &Span) -> Option<Vec<&str>> {
    match span.attribute(BAGGAGE_KEYS_ATTRIBUTE)? {
        Value::Array(items) => items.iter().map(Value::as_str).collect(),
        _ => None,
    }
}

/// A `tracestate` value's members, `(key, value)` in order (empty members and members without
/// `=` left out).
pub(crate) fn trace_state_entries(value: &str) -> impl Iterator<Item = (&str, &str)> {
    value
        .split(',')
        .map(str::trim)
        .filter_map(|member| member.split_once('='))
        .map(|(key, value)| (key.trim(), value.trim()))
        .filter(|(key, _)| !key.is_empty())
}

/// `keys` for a message: the first [`MAX_NAMED_KEYS`], then how many more.
fn named<'a>(keys: impl ExactSizeIterator<Item = &'a str>) -> String {
    let total = keys.len();
    let mut text: Vec<&str> = keys.take(MAX_NAMED_KEYS).collect();
    let more;
    if total > MAX_NAMED_KEYS {
        more = format!("and {} more", total - MAX_NAMED_KEYS);
        text.push(&more);
    }
    text.join(", ")
}

impl Doctor {
    /// Remembers that `span`'s service reports tracestate, when the span has some (bounded).
    pub(super) fn learn_trace_state(&mut self, span: &Span) {
        if span.trace_state.is_empty()
            || self.trace_state_services.len() >= MAX_TRACE_STATE_SERVICES
            || self.trace_state_services.contains(span.service())
        {
            return;
        }
        self.trace_state_services
            .insert(Arc::clone(&span.resource.service));
    }

    /// `tracestate-dropped` and `baggage-dropped` on a hop from `parent` to `child` in another
    /// service.
    pub(super) fn dropped_on_hop(
        &self,
        id: TraceId,
        parent: &Span,
        child: &Span,
        findings: &mut Vec<Finding>,
    ) {
        if !remote_hop(parent, child) {
            return;
        }
        let finding = |rule, message| Finding {
            rule,
            trace_ids: vec![id],
            span_ids: vec![parent.span_id, child.span_id],
            services: vec![parent.service().to_owned(), child.service().to_owned()],
            message,
        };
        // tracestate-dropped: judged only where the child's service is known to report
        // tracestate (some span of it had entries): an exporter that leaves the field out
        // reports it empty on every span.
        if !parent.trace_state.is_empty()
            && child.trace_state.is_empty()
            && self.trace_state_services.contains(child.service())
        {
            let keys = trace_state_entries(&parent.trace_state)
                .map(|(key, _)| key)
                .collect::<Vec<_>>();
            findings.push(finding(
                Rule::TracestateDropped,
                format!(
                    "the tracestate of {} ({}) did not reach {}: \"{}\" has none, though {} \
reports tracestate on other spans; the hop forwarded traceparent without tracestate (a proxy or \
gateway that passes only traceparent, or a propagator that does not inject tracestate): make it \
forward the tracestate header",
                    parent.service(),
                    named(keys.iter().copied()),
                    child.service(),
                    child.name,
                    child.service()
                ),
            ));
        }
        // baggage-dropped: both sides recorded the keys.
        let (Some(sent), Some(received)) = (baggage_keys(parent), baggage_keys(child)) else {
            return;
        };
        let missing: Vec<&str> = sent
            .iter()
            .copied()
            .filter(|key| !received.contains(key))
            .collect();
        if missing.is_empty() {
            return;
        }
        let why = if received.is_empty() {
            format!(
                "{} received no baggage: the hop dropped the baggage header (a proxy that strips \
it, a propagator without baggage, or {}'s inbound policy that does not trust {}): make the hop \
forward baggage, or trust the caller",
                child.service(),
                child.service(),
                parent.service()
            )
        } else {
            format!(
                "{} received its other keys: a limit on the way dropped entries (a baggage \
entry, member count or header size limit; lens keeps 180 members and 8192 bytes) or a proxy \
rewrote the header: keep the baggage within the limits",
                child.service()
            )
        };
        findings.push(finding(
            Rule::BaggageDropped,
            format!(
                "baggage keys {} sent by {} did not reach {} (\"{}\"); {why}",
                named(missing.iter().copied()),
                parent.service(),
                child.service(),
                child.name
            ),
        ));
    }
}
