//! The lost hop over a queue: a consumer that started a new trace for a message a traced
//! producer sent (docs/doctor.md#over-a-queue).
//!
//! Every PRODUCER span waits, whether or not a consumer continued its trace: a message reaches
//! every subscriber of its destination (fan-out), so each consumer that started a new trace for
//! it is a lost hop of its own. What a producer's message already reached (its consumer
//! children's services, the consumer roots paired with it or linked to it) is noted on it: no
//! other consumer root of those services pairs with it (in a queue group, only one consumer
//! gets each message).
//!
//! A consumer root is a CONSUMER span with a destination at the start of its trace: the root,
//! or under spans of its own service only (a subscriber polled under an ambient span, the
//! `recv` span confluent-kafka opens around its `process` span). It pairs with a producer of
//! the same destination whose message id (or JetStream stream sequence, or Kafka partition and
//! offset) is its own, at any time (a backlog); without a common id, with those that sent
//! before it started and within [`DoctorConfig::queue_window_nanos`](super::DoctorConfig) of
//! its start, and not of another id. One such producer: `lost-context` (or `untrusted-ignored`
//! where the consumer's trust policy ignored the context on purpose). Several:
//! `ambiguous-producer` listing them, unless the consumer says it received no context
//! (`lens.trace.new_root` = `none` or `rejected:*`: then `lost-context` listing them).
//!
//! A consumer root that links to the producer's span it pairs with continued the trace by
//! link: no finding. Its links to other spans (the ambient span, a batch `receive` span) do not
//! count; a root whose `lens.trace.new_root` says `linked` or `untrusted:linked` continued by
//! link whatever its links point to.

use std::sync::Arc;

use super::conventions::{Address, Candidate, HopKey};
use super::doctor::Doctor;
use super::finding::Finding;
use super::hop_findings::lost_message;
use super::message::{self, Identity, Message, NONE};
use super::new_root::NewRootCause;
use super::queue_index::At;
use crate::model::{Span, SpanId};
/// The most candidate producers a finding lists (and counts past).
const MAX_LISTED: usize = 8;

/// The most producers of a destination a consumer root's pairing examines, nearest first (a
/// busy destination's window holds every message sent in it, consumed or not).
const MAX_SCANNED: usize = 4096;
/// A messaging span as one side of a queue hop, keyed by its destination; `None` without one.
fn message(span: &Span, cause: Option<NewRootCause>) -> Option<(HopKey, Candidate)> {
    let destination = message::destination(span)?;
    Some((
        HopKey::Queue(destination),
        Candidate {
            trace_id: span.trace_id,
            span_id: span.span_id,
            service: Arc::clone(&span.resource.service),
            start: span.start_unix_nano,
            end: span.end_unix_nano.max(span.start_unix_nano),
            address: Address::default(),
            cause,
            message: Some(Box::new(Message::of(span))),
        },
    ))
}

fn facts(c: &Candidate) -> &Message {
    c.message.as_deref().unwrap_or(&NONE)
}

fn facts_mut(c: &mut Candidate) -> &mut Message {
    c.message.get_or_insert_with(Box::default)
}

/// How `consumer` (a root) stands to the message `producer` sent: `Some(true)` the same
/// message by its id, `Some(false)` a candidate by time, `None` not its message.
fn fits(producer: &Candidate, consumer: &Candidate, tolerance: u64, window: u64) -> Option<bool> {
    let (p, c) = (facts(producer), facts(consumer));
    if producer.trace_id == consumer.trace_id || p.served(&consumer.service) {
        return None;
    }
    match p.identity(c) {
        Identity::Same => Some(true),
        Identity::Different => None,
        Identity::Unknown => (consumer.start.saturating_add(tolerance) >= producer.start
            && consumer.start <= producer.end.saturating_add(window))
        .then_some(false),
    }
}
impl Doctor {
    /// A PRODUCER span; `consumed_by`, the services of its consumer children. Judged once, as
    /// its trace completes: paired with the consumer roots waiting for it, then held for the
    /// later ones. Judged again (its trace reopened), it is withdrawn for the services of
    /// children that arrived since.
    pub(super) fn producer(
        &mut self,
        span: &Span,
        consumed_by: &[Arc<str>],
        findings: &mut Vec<Finding>,
    ) {
        if !self.first_time(span) {
            if let Some((key, at)) = self.held_producer(span.span_id)
                && let Some(held) = self
                    .producers
                    .by_key
                    .get_mut(&key)
                    .and_then(|p| p.get_mut(&at))
            {
                for service in consumed_by {
                    facts_mut(held).serve(service);
                }
            }
            return;
        }
        let Some((key, mut producer)) = message(span, None) else {
            return;
        };
        for service in consumed_by {
            facts_mut(&mut producer).serve(service);
        }
        // Consumer roots that linked to it before it arrived: continued by link.
        for (service, held) in self.queue.linked.remove(&span.span_id).unwrap_or_default() {
            facts_mut(&mut producer).serve(&service);
            if let Some((key, at)) = held {
                self.consumer_roots.remove(&key, at);
            }
        }
        for (at, identified) in self.waiting_roots(&key, &producer) {
            let Some(root) = self.consumer_roots.remove(&key, at) else {
                continue;
            };
            let others = if identified {
                Vec::new()
            } else {
                self.candidate_producers(&key, &root)
            };
            if others.is_empty() {
                facts_mut(&mut producer).serve(&root.service);
            }
            let mut all = vec![&producer];
            all.extend(others.iter().filter_map(|at| self.producer_at(&key, *at)));
            all.truncate(MAX_LISTED);
            findings.push(lost_message(&all, others.len() + 1, &root));
        }
        self.seq += 1;
        let at = (producer.start, self.seq);
        self.queue
            .producer_spans
            .insert(producer.span_id, (key.clone(), at));
        for id in &facts(&producer).ids {
            self.queue
                .producer_ids
                .insert((key.clone(), id.clone()), at);
        }
        self.producers.insert(key, self.seq, producer);
    }

    /// A consumer root ([`starts_trace`](super::message::starts_trace)): continued by link, paired with the producers it can
    /// belong to, or held for them.
    pub(super) fn consumer_root(&mut self, span: &Span, findings: &mut Vec<Finding>) {
        if !self.first_time(span) {
            return;
        }
        let cause = NewRootCause::of(span);
        let Some((key, mut root)) = message(span, cause) else {
            return;
        };
        let links: Vec<SpanId> = span
            .links
            .iter()
            .filter(|l| l.trace_id != span.trace_id)
            .map(|l| l.span_id)
            .collect();
        // A link to a producer held: its message, continued by link.
        for link in &links {
            if let Some((key, at)) = self.held_producer(*link)
                && let Some(p) = self
                    .producers
                    .by_key
                    .get_mut(&key)
                    .and_then(|p| p.get_mut(&at))
            {
                facts_mut(p).serve(&root.service);
                return;
            }
        }
        if matches!(
            root.cause,
            Some(NewRootCause::Linked | NewRootCause::UntrustedLinked)
        ) {
            // Linked by choice: whatever its links point to, continued by link.
            for link in links {
                self.queue.link(link, &root.service, None);
            }
            return;
        }
        let candidates = self.candidate_producers(&key, &root);
        if candidates.is_empty() {
            self.seq += 1;
            let at = (root.start, self.seq);
            for link in &links {
                self.queue
                    .link(*link, &root.service, Some((key.clone(), at)));
            }
            for id in &facts(&root).ids {
                self.queue.root_ids.insert((key.clone(), id.clone()), at);
            }
            facts_mut(&mut root).links = links;
            self.consumer_roots.insert(key, self.seq, root);
            return;
        }
        if let [only] = candidates[..]
            && let Some(p) = self
                .producers
                .by_key
                .get_mut(&key)
                .and_then(|p| p.get_mut(&only))
        {
            facts_mut(p).serve(&root.service);
        }
        let all: Vec<&Candidate> = candidates
            .iter()
            .filter_map(|at| self.producer_at(&key, *at))
            .take(MAX_LISTED)
            .collect();
        findings.push(lost_message(&all, candidates.len(), &root));
    }

    fn producer_at(&self, key: &HopKey, at: At) -> Option<&Candidate> {
        self.producers.by_key.get(key)?.get(&at)
    }

    /// Where the producer of span `id` is held, if it is.
    fn held_producer(&self, id: SpanId) -> Option<(HopKey, At)> {
        let (key, at) = self.queue.producer_spans.get(&id)?;
        let held = self.producer_at(key, *at)?;
        (held.span_id == id).then(|| (key.clone(), *at))
    }

    /// The held producers whose message `root` can be: the one of its id, else those that fit
    /// by time (up to [`MAX_LISTED`] and one more, to say there are more).
    fn candidate_producers(&self, key: &HopKey, root: &Candidate) -> Vec<At> {
        let (tolerance, window) = (
            self.config.start_tolerance_nanos,
            self.config.queue_window_nanos,
        );
        for id in &facts(root).ids {
            if let Some(at) = self.queue.producer_ids.get(&(key.clone(), id.clone()))
                && let Some(p) = self.producer_at(key, *at)
                && fits(p, root, tolerance, window) == Some(true)
            {
                return vec![*at];
            }
        }
        let Some(producers) = self.producers.by_key.get(key) else {
            return Vec::new();
        };
        let longest = self.producers.longest.get(key).copied().unwrap_or(0);
        let from = root
            .start
            .saturating_sub(window)
            .saturating_sub(longest)
            .saturating_sub(tolerance);
        let mut found = Vec::new();
        for (at, p) in producers
            .range((from, 0)..=(root.start.saturating_add(tolerance), u64::MAX))
            .rev()
            .take(MAX_SCANNED)
        {
            match fits(p, root, tolerance, window) {
                Some(true) => return vec![*at],
                Some(false) => found.push(*at),
                None => {}
            }
            if found.len() > MAX_LISTED {
                break;
            }
        }
        // In the order they were sent.
        found.reverse();
        found
    }

    /// The held consumer roots `producer`'s message can be the one of: the roots of its ids,
    /// then, by time, the first of each service after the send; with whether by id.
    fn waiting_roots(&self, key: &HopKey, producer: &Candidate) -> Vec<(At, bool)> {
        let (tolerance, window) = (
            self.config.start_tolerance_nanos,
            self.config.queue_window_nanos,
        );
        let mut found: Vec<(At, bool)> = Vec::new();
        let Some(roots) = self.consumer_roots.by_key.get(key) else {
            return found;
        };
        for id in &facts(producer).ids {
            if let Some(at) = self.queue.root_ids.get(&(key.clone(), id.clone()))
                && let Some(root) = roots.get(at)
                && fits(producer, root, tolerance, window) == Some(true)
                && !found.iter().any(|(a, _)| a == at)
            {
                found.push((*at, true));
            }
        }
        let mut services: Vec<&str> = found
            .iter()
            .filter_map(|(at, _)| roots.get(at).map(|r| &*r.service))
            .collect();
        for (at, root) in roots.range(
            (producer.start.saturating_sub(tolerance), 0)
                ..=(producer.end.saturating_add(window), u64::MAX),
        ) {
            if services.contains(&&*root.service) {
                continue;
            }
            if let Some(identified) = fits(producer, root, tolerance, window) {
                services.push(&root.service);
                found.push((*at, identified));
            }
        }
        found
    }
}
