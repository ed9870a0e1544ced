//! The doctor itself: its tolerances, the traces around the one it reads, and what it does
//! with each completed trace (the rules live beside it, a file each).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use super::bleed;
use super::candidates::{PendingLink, Side};
use super::finding::{Finding, Rule};
use super::forced;
use super::message::starts_trace;
use super::queue_index::QueueIndex;
use super::span_index::SpanIndex;
use super::streams;
use crate::assemble::{Assembler, TraceEntry};
use crate::model::{Span, SpanId, SpanKind, TraceId};

/// The doctor's tolerances and bounds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DoctorConfig {
    /// Clock skew allowed between services before `clock-skew` reports a child that starts
    /// before its parent (for a SERVER child, that also ends before its CLIENT parent), and
    /// around a client span when matching a lost hop (default 1 ms).
    pub start_tolerance_nanos: u64,
    /// How far a SERVER span must start and end after its CLIENT's before `clock-skew` reports
    /// the server's clock ahead, and how long it may end after its client's when matching a
    /// lost hop (default 10 ms: an ASGI server span ends after the response is sent, measured
    /// 0.43 ms after its client on one host). A server span that started after its client and
    /// ends after it, by any amount, is no skew: no clock offset explains both.
    pub end_margin_nanos: u64,
    /// The most candidates (childless clients, new roots) held for the lost-hop rule
    /// (default 100,000); the oldest go first.
    pub max_candidates: usize,
    /// How long (in span time) a candidate waits for its other side (default 60 s).
    pub candidate_horizon_nanos: u64,
    /// The pairing window over a queue: how long after a message is sent a consumer's new
    /// trace may start and still be taken for the message's lost hop, where the two sides
    /// record no message id in common (default 2 s, `lens watch`'s quiet window). A consumer
    /// whose message id (JetStream stream sequence, Kafka partition and offset) is the
    /// producer's pairs at any time within [`DoctorConfig::candidate_horizon_nanos`]
    /// (docs/doctor.md#over-a-queue).
    pub queue_window_nanos: u64,
}

impl Default for DoctorConfig {
    fn default() -> Self {
        DoctorConfig {
            start_tolerance_nanos: 1_000_000,
            end_margin_nanos: 10_000_000,
            max_candidates: 100_000,
            candidate_horizon_nanos: 60_000_000_000,
            queue_window_nanos: 2_000_000_000,
        }
    }
}

/// The traces around the one being diagnosed, as the doctor reads them: for a link into
/// another trace, and for a new root's linked client.
pub trait Traces {
    /// The spans of trace `id` when it is held, complete and whole (not partial); `None`
    /// otherwise (not received, still open, evicted, or missing spans to a bound).
    fn complete(&self, id: &TraceId) -> Option<&[Span]>;
}

impl Traces for Assembler {
    fn complete(&self, id: &TraceId) -> Option<&[Span]> {
        self.trace(id)
            .filter(|t| t.complete && !t.is_partial())
            .map(|t| t.spans.as_slice())
    }
}

/// The doctor: feed it each trace as it completes ([`Doctor::diagnose`]).
#[derive(Debug, Default)]
pub struct Doctor {
    pub(super) config: DoctorConfig,
    pub(super) clients: Side,
    pub(super) roots: Side,
    /// PRODUCER spans without a consumer child, and CONSUMER roots: a queue's lost hop.
    pub(super) producers: Side,
    pub(super) consumer_roots: Side,
    /// The queue hop's indexes: producers by span id, both sides by message id, links.
    pub(super) queue: QueueIndex,
    pub(super) pending_links: HashMap<SpanId, PendingLink>,
    pub(super) pending_order: VecDeque<SpanId>,
    /// Spans already taken as one side of a hop (a reopened trace is diagnosed again: its hop
    /// is not matched twice), oldest first for the bound.
    pub(super) seen: HashSet<(TraceId, SpanId)>,
    pub(super) seen_order: VecDeque<(TraceId, SpanId)>,
    pub(super) skewed_pairs: HashSet<(Arc<str>, Arc<str>)>,
    /// Services seen reporting tracestate on a span (`tracestate-dropped` judges only these).
    pub(super) trace_state_services: HashSet<Arc<str>>,
    /// Services seen reporting the sampled flag on a span (`sampling-forced` judges only
    /// parents of these: an exporter that reports no flags, Python's, says nothing).
    pub(super) flag_services: HashSet<Arc<str>>,
    pub(super) seq: u64,
    pub(super) newest_end: u64,
}

/// The most service pairs remembered as already reported for clock skew.
pub(super) const MAX_SKEW_PAIRS: usize = 10_000;

impl Doctor {
    /// A doctor with these tolerances.
    pub fn new(config: DoctorConfig) -> Self {
        Doctor {
            config,
            ..Doctor::default()
        }
    }

    /// Candidates waiting for their other side (childless clients, new roots), for the status.
    pub fn candidates(&self) -> usize {
        self.clients.len()
            + self.roots.len()
            + self.pending_links.len()
            + self.producers.len()
            + self.consumer_roots.len()
    }

    /// The findings on `trace`, just completed; `others` are the traces around it, read for
    /// links and for the lost hop's other side. A trace that completes again (late spans) is
    /// diagnosed again, whole, but a hop is matched (and reported) once.
    pub fn diagnose(&mut self, trace: &TraceEntry, others: &dyn Traces) -> Vec<Finding> {
        let mut findings = Vec::new();
        let id = trace.trace_id;
        let spans = &trace.spans;
        let by_id = SpanIndex::new(spans);
        let mut parents: Vec<SpanId> = spans.iter().filter_map(|s| s.parent_span_id).collect();
        parents.sort_unstable();
        for span in spans {
            self.newest_end = self.newest_end.max(span.end_unix_nano);
            self.learn_trace_state(span);
            forced::learn(&mut self.flag_services, span);
        }
        let duplicates = by_id.duplicates();
        for span in duplicates {
            findings.push(Finding {
                rule: Rule::DuplicateSpanId,
                trace_ids: vec![id],
                span_ids: vec![span.span_id],
                services: vec![span.service().to_owned()],
                message: format!(
                    "span id {} appears more than once in trace {id} (\"{}\" in {}): a span \
exported twice, or a span id generator that repeats",
                    span.span_id,
                    span.name,
                    span.service()
                ),
            });
        }
        // A partial trace (spans dropped by a bound) is missing pieces for reasons of its own:
        // no finding rests on what is absent from it (a missing parent, a childless client, a
        // link to a span of it).
        let partial = trace.is_partial();
        for span in spans {
            self.single_span(others, id, span, &by_id, partial, &mut findings);
        }
        let reopened = trace.completions > 1;
        // Issue 53: what spans tell of sampling forced on and of context bleeding.
        for child in spans {
            if let Some(parent) = child.parent_span_id.and_then(|p| by_id.get(p))
                && self.flag_services.contains(parent.service())
                && forced::forced(parent, child)
                && self.first_time(child)
            {
                findings.push(forced::finding(parent, child));
            }
        }
        if !partial {
            for (client, first, second) in bleed::overlapping_receivers(spans, &by_id) {
                if self.first_time(second) {
                    findings.push(bleed::finding(id, client, first, second));
                }
            }
        }
        // A queue's lost hop (queues.rs): every producer, with the services its message
        // reached in this trace; every consumer that starts its trace.
        if !partial {
            let mut consumed: Vec<(SpanId, Arc<str>)> = spans
                .iter()
                .filter_map(|child| {
                    let producer = by_id.get(child.parent_span_id?)?;
                    (producer.kind == SpanKind::Producer
                        && (child.kind == SpanKind::Consumer
                            || child.resource.service != producer.resource.service))
                        .then(|| (producer.span_id, Arc::clone(&child.resource.service)))
                })
                .collect();
            consumed.sort_unstable();
            // A PRODUCER span with a PRODUCER child of its service wraps the send (pika's
            // BlockingChannel.basic_publish around Channel.basic_publish): the child stands
            // for the message.
            let mut wrappers: Vec<SpanId> = spans
                .iter()
                .filter(|child| child.kind == SpanKind::Producer)
                .filter_map(|child| {
                    let parent = by_id.get(child.parent_span_id?)?;
                    (parent.kind == SpanKind::Producer
                        && parent.resource.service == child.resource.service)
                        .then_some(parent.span_id)
                })
                .collect();
            wrappers.sort_unstable();
            for span in spans.iter().filter(|s| {
                s.kind == SpanKind::Producer && wrappers.binary_search(&s.span_id).is_err()
            }) {
                let from = consumed.partition_point(|(id, _)| *id < span.span_id);
                let services: Vec<Arc<str>> = consumed[from..]
                    .iter()
                    .take_while(|(id, _)| *id == span.span_id)
                    .map(|(_, service)| Arc::clone(service))
                    .collect();
                self.producer(span, &services, &mut findings);
            }
            for span in spans.iter().filter(|s| s.kind == SpanKind::Consumer) {
                if starts_trace(span, |id| by_id.get(id)) {
                    self.consumer_root(span, &mut findings);
                }
            }
        }
        for span in spans.iter().filter(|s| s.kind == SpanKind::Client) {
            if partial {
                continue;
            }
            if parents.binary_search(&span.span_id).is_err() {
                self.childless_client(span, &mut findings);
            } else if reopened {
                self.answered_client(span);
            }
        }
        // A hop that defeats streaming (docs/doctor.md#buffered-stream).
        if !partial {
            streams::buffered_streams(id, spans, &mut findings);
        }
        self.prune();
        findings
    }

    /// Whether `span` is taken as one side of a hop for the first time (remembered up to twice
    /// [`DoctorConfig::max_candidates`] spans).
    pub(super) fn first_time(&mut self, span: &Span) -> bool {
        let id = (span.trace_id, span.span_id);
        if !self.seen.insert(id) {
            return false;
        }
        self.seen_order.push_back(id);
        while self.seen_order.len() > self.config.max_candidates.saturating_mul(2) {
            if let Some(old) = self.seen_order.pop_front() {
                self.seen.remove(&old);
            }
        }
        true
    }

    fn prune(&mut self) {
        let oldest = self
            .newest_end
            .saturating_sub(self.config.candidate_horizon_nanos);
        let max = self.config.max_candidates;
        self.clients.prune(max, oldest);
        self.roots.prune(max, oldest);
        self.producers.prune(max, oldest);
        self.consumer_roots.prune(max, oldest);
        self.queue.prune(&self.producers, &self.consumer_roots, max);
        while self.pending_order.len() > max {
            if let Some(id) = self.pending_order.pop_front() {
                self.pending_links.remove(&id);
            }
        }
    }
}
