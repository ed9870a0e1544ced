//! The candidates of one side of a hop waiting for the other (by request, ordered by start
//! time, bounded), and the links from new roots waiting for the trace they link to.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use super::conventions::{Candidate, HopKey};
use crate::model::{SpanId, TraceId};

/// Candidates of one side, by request, ordered by start time.
#[derive(Debug, Default)]
pub(super) struct Side {
    pub(super) by_key: HashMap<HopKey, BTreeMap<(u64, u64), Candidate>>,
    /// (key, start, seq) in insertion order, for the bounds; entries of candidates already
    /// matched are skipped, and dropped when they outnumber the live ones.
    pub(super) order: VecDeque<(HopKey, u64, u64)>,
    /// Candidates held.
    pub(super) live: usize,
    /// The longest span held per key (bounds the range a server's start is searched in).
    pub(super) longest: HashMap<HopKey, u64>,
}

impl Side {
    pub(super) fn insert(&mut self, key: HopKey, seq: u64, c: Candidate) {
        let longest = self.longest.entry(key.clone()).or_insert(0);
        *longest = (*longest).max(c.end.saturating_sub(c.start));
        self.order.push_back((key.clone(), c.start, seq));
        if self
            .by_key
            .entry(key)
            .or_default()
            .insert((c.start, seq), c)
            .is_none()
        {
            self.live += 1;
        }
    }

    pub(super) fn holds(&self, key: &HopKey, at: (u64, u64)) -> bool {
        self.by_key
            .get(key)
            .is_some_and(|map| map.contains_key(&at))
    }

    pub(super) fn remove(&mut self, key: &HopKey, at: (u64, u64)) -> Option<Candidate> {
        let map = self.by_key.get_mut(key)?;
        let c = map.remove(&at);
        if c.is_some() {
            self.live -= 1;
        }
        if map.is_empty() {
            self.by_key.remove(key);
            self.longest.remove(key);
        }
        c
    }

    /// Removes the candidate of span `id` that started at `start`.
    pub(super) fn remove_span(&mut self, key: &HopKey, start: u64, id: SpanId) {
        let at = self.by_key.get(key).and_then(|map| {
            map.range((start, 0)..=(start, u64::MAX))
                .find(|(_, c)| c.span_id == id)
                .map(|(at, _)| *at)
        });
        if let Some(at) = at {
            self.remove(key, at);
        }
    }

    pub(super) fn prune(&mut self, max: usize, oldest_start: u64) {
        while let Some((key, start, seq)) = self.order.front().cloned() {
            let live = self.holds(&key, (start, seq));
            if live && self.live <= max && start >= oldest_start {
                break;
            }
            self.order.pop_front();
            if live {
                self.remove(&key, (start, seq));
            }
        }
        // Entries of matched candidates behind a live one: dropped once they outnumber the
        // live ones (amortised: the queue stays within twice the candidates held, plus slack).
        if self.order.len() > 2 * self.live + 1024 {
            let order = std::mem::take(&mut self.order);
            self.order = order
                .into_iter()
                .filter(|(key, start, seq)| self.holds(key, (*start, *seq)))
                .collect();
        }
    }

    pub(super) fn len(&self) -> usize {
        self.live
    }
}

/// A link from a new root SERVER span waiting for the trace of the span it links to.
#[derive(Clone, Debug)]
pub(super) struct PendingLink {
    pub(super) server_trace: TraceId,
    pub(super) server_span: SpanId,
    pub(super) server_service: Arc<str>,
    pub(super) linked_trace: TraceId,
}
