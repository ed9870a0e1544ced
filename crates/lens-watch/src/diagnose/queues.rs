//! The lost hop over a queue: a PRODUCER span whose message no instrumented consumer continued
//! (no CONSUMER child in its trace, no link to it), and a CONSUMER span that is the root of a
//! trace of its own in another service, for the same destination (and the same message id where
//! both record one), starting after the send and within [`DoctorConfig::queue_window_nanos`]
//! of it. A consumer root that links to the producer's span continued the trace by link (by
//! design: a batch receive, a consumer that asked for links): no finding, and that producer is
//! no candidate. A producer whose message nobody consumed is no finding either.

use super::conventions::{Address, Candidate, HopKey, text};
use super::finding::{Finding, lost_message_context};
use super::{Doctor, NewRootCause};
use crate::model::{Span, SpanId};

/// The destination keys: the current convention, then the older one (celery and the Python
/// instrumentations before semantic conventions 1.24).
const DESTINATION: &[&str] = &["messaging.destination.name", "messaging.destination"];

/// The message id keys: the current convention, then the older one.
const MESSAGE_ID: &[&str] = &["messaging.message.id", "messaging.message_id"];

/// A messaging span as a candidate of one side of a queue hop: keyed by destination; `None`
/// without one.
fn message(span: &Span, cause: Option<NewRootCause>) -> Option<(HopKey, Candidate)> {
    let destination = text(span, DESTINATION)?;
    Some((
        HopKey::Queue(destination.to_owned()),
        Candidate {
            trace_id: span.trace_id,
            span_id: span.span_id,
            service: span.resource.service.clone(),
            start: span.start_unix_nano,
            end: span.end_unix_nano.max(span.start_unix_nano),
            address: Address::default(),
            cause,
            message_id: text(span, MESSAGE_ID).map(str::to_owned),
        },
    ))
}

/// Whether `consumer` can be the root started for the message `producer` sent.
fn delivered(producer: &Candidate, consumer: &Candidate, tolerance: u64, window: u64) -> bool {
    producer.service != consumer.service
        && producer.trace_id != consumer.trace_id
        && consumer.start.saturating_add(tolerance) >= producer.start
        && consumer.start <= producer.end.saturating_add(window)
        && match (&producer.message_id, &consumer.message_id) {
            (Some(p), Some(c)) => p == c,
            _ => true,
        }
}

impl Doctor {
    /// A PRODUCER span without a CONSUMER child in its trace.
    pub(super) fn unconsumed_producer(&mut self, span: &Span, findings: &mut Vec<Finding>) {
        if self.continued.contains(&span.span_id) || !self.first_time(span) {
            return;
        }
        let Some((key, producer)) = message(span, None) else {
            return;
        };
        let (tolerance, window) = (
            self.config.start_tolerance_nanos,
            self.config.queue_window_nanos,
        );
        // The first consumer root after the send.
        let found = self.consumer_roots.by_key.get(&key).and_then(|roots| {
            roots
                .range((producer.start.saturating_sub(tolerance), 0)..)
                .take_while(|(_, c)| c.start <= producer.end.saturating_add(window))
                .find(|(_, c)| delivered(&producer, c, tolerance, window))
                .map(|(at, _)| *at)
        });
        match found.and_then(|at| self.consumer_roots.remove(&key, at)) {
            Some(consumer) => findings.push(lost_message_context(&producer, &consumer)),
            None => {
                self.seq += 1;
                self.producers.insert(key, self.seq, producer);
            }
        }
    }

    /// A CONSUMER span that is the root of its trace: continued by link when it links to a span
    /// of another trace (no finding), else a candidate for a producer's lost hop.
    pub(super) fn consumer_root(&mut self, span: &Span, findings: &mut Vec<Finding>) {
        if !self.first_time(span) {
            return;
        }
        if let Some(link) = span.links.iter().find(|l| l.trace_id != span.trace_id) {
            self.continued_by_link(link.span_id);
            if let Some((key, _)) = message(span, None) {
                // The producer may be held already: it was continued, not lost.
                let held = self.producers.by_key.get(&key).and_then(|p| {
                    p.iter()
                        .find(|(_, c)| c.span_id == link.span_id)
                        .map(|(at, _)| *at)
                });
                if let Some(at) = held {
                    self.producers.remove(&key, at);
                }
            }
            return;
        }
        let Some((key, consumer)) = message(span, NewRootCause::of(span)) else {
            return;
        };
        let (tolerance, window) = (
            self.config.start_tolerance_nanos,
            self.config.queue_window_nanos,
        );
        // The latest send before this root.
        let found = self.producers.by_key.get(&key).and_then(|producers| {
            producers
                .range(..=(consumer.start.saturating_add(tolerance), u64::MAX))
                .rev()
                .take_while(|(_, p)| p.end.saturating_add(window) >= consumer.start)
                .find(|(_, p)| delivered(p, &consumer, tolerance, window))
                .map(|(at, _)| *at)
        });
        match found.and_then(|at| self.producers.remove(&key, at)) {
            Some(producer) => findings.push(lost_message_context(&producer, &consumer)),
            None => {
                self.seq += 1;
                self.consumer_roots.insert(key, self.seq, consumer);
            }
        }
    }

    /// Remembers that a consumer linked to span `producer` (bounded like the candidates).
    fn continued_by_link(&mut self, producer: SpanId) {
        if self.continued.insert(producer) {
            self.continued_order.push_back(producer);
        }
        while self.continued_order.len() > self.config.max_candidates {
            if let Some(old) = self.continued_order.pop_front() {
                self.continued.remove(&old);
            }
        }
    }
}
