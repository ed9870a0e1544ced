//! The spans of one trace by span id, for the rules that look a span's parent up.

use crate::model::{Span, SpanId};

/// The spans of one trace by span id: sorted ids and binary search (no hashing of peer input,
/// no allocation per span; a trace is diagnosed once as it completes).
pub(super) struct SpanIndex<'a> {
    pub(super) spans: &'a [Span],
    /// (span id, position in `spans`), sorted.
    pub(super) ids: Vec<(SpanId, usize)>,
}

impl<'a> SpanIndex<'a> {
    pub(super) fn new(spans: &'a [Span]) -> Self {
        let mut ids: Vec<(SpanId, usize)> = spans
            .iter()
            .enumerate()
            .map(|(i, s)| (s.span_id, i))
            .collect();
        ids.sort_unstable();
        SpanIndex { spans, ids }
    }

    /// The span with id `id` (the last received, when the id repeats).
    pub(super) fn get(&self, id: SpanId) -> Option<&'a Span> {
        let end = self.ids.partition_point(|(i, _)| *i <= id);
        let (found, at) = *self.ids.get(end.checked_sub(1)?)?;
        (found == id).then(|| &self.spans[at])
    }

    /// Every span whose id an earlier span of the trace already has, in the order received.
    pub(super) fn duplicates(&self) -> Vec<&'a Span> {
        let mut later: Vec<usize> = self
            .ids
            .windows(2)
            .filter(|w| w[0].0 == w[1].0)
            .map(|w| w[1].1)
            .collect();
        later.sort_unstable();
        later.into_iter().map(|at| &self.spans[at]).collect()
    }
}
