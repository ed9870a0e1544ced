//! What finds a held candidate of a queue hop without a scan: producers by span id, either
//! side by message id, and the consumer roots that linked to a producer not yet received.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use super::candidates::Side;
use super::conventions::HopKey;
use crate::model::SpanId;

/// Where a candidate is held in its [`Side`]: (start, sequence number).
pub(super) type At = (u64, u64);

/// A consumer root that linked to a span: its service, and where it waits (when it does).
pub(super) type Linker = (Arc<str>, Option<(HopKey, At)>);

/// What finds a held candidate of a queue hop without a scan: a producer by its span id (a
/// consumer's link to it), either side by a message id; and the consumers that linked to a
/// producer not yet received. Entries of candidates no longer held are skipped when read, and
/// dropped once they outnumber the held ones.
#[derive(Debug, Default)]
pub(super) struct QueueIndex {
    pub(super) producer_spans: HashMap<SpanId, (HopKey, At)>,
    pub(super) producer_ids: HashMap<(HopKey, String), At>,
    pub(super) root_ids: HashMap<(HopKey, String), At>,
    /// A linked span id -> the services of the consumer roots that linked to it, with where
    /// each root waits (when it does); oldest first for the bound.
    pub(super) linked: HashMap<SpanId, Vec<Linker>>,
    pub(super) linked_order: VecDeque<SpanId>,
}

impl QueueIndex {
    /// Drops what points at candidates no longer held (amortised) and the oldest links past
    /// `max`.
    pub(super) fn prune(&mut self, producers: &Side, roots: &Side, max: usize) {
        if self.producer_spans.len() > 2 * producers.len() + 1024 {
            self.producer_spans
                .retain(|_, (key, at)| producers.holds(key, *at));
        }
        if self.producer_ids.len() > 2 * producers.len() + 1024 {
            self.producer_ids
                .retain(|(key, _), at| producers.holds(key, *at));
        }
        if self.root_ids.len() > 2 * roots.len() + 1024 {
            self.root_ids.retain(|(key, _), at| roots.holds(key, *at));
        }
        while self.linked_order.len() > max {
            if let Some(old) = self.linked_order.pop_front() {
                self.linked.remove(&old);
            }
        }
    }

    pub(super) fn link(&mut self, to: SpanId, service: &Arc<str>, held: Option<(HopKey, At)>) {
        let entry = self.linked.entry(to).or_default();
        if entry.is_empty() {
            self.linked_order.push_back(to);
        }
        entry.push((Arc::clone(service), held));
    }
}
