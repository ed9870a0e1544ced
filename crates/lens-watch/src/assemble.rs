//! Spans to traces: grouped by trace id as they arrive, a trace complete once it has seen no new
//! span for a quiet window (a late span reopens it), memory bounded by whole-trace eviction.
//!
//! The clock is driven: every call takes `now`, nothing reads the time or sleeps, so tests (and
//! replays of a file, where the quiet window is moot) decide when time passes.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::model::{Span, TraceId};

/// The bounds and the quiet window of an [`Assembler`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// A trace is complete once it has received no span for this long (default 2 s, the
    /// Collector's `groupbytrace` wait).
    pub quiet_for: Duration,
    /// The most traces kept, open or complete (default 10,000); the oldest whole traces go first.
    pub max_traces: usize,
    /// The most spans kept for one trace (default 10,000); later spans of that trace are
    /// dropped and counted.
    pub max_spans_per_trace: usize,
    /// The most spans kept in all (default 1,000,000); the oldest whole traces go first.
    pub max_spans: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            quiet_for: Duration::from_secs(2),
            max_traces: 10_000,
            max_spans_per_trace: 10_000,
            max_spans: 1_000_000,
        }
    }
}

/// What an [`Assembler`] has seen; nothing it drops goes uncounted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Spans accepted.
    pub spans_received: u64,
    /// Spans rejected by the decoder (see [`Assembler::count_rejected`]).
    pub spans_rejected: u64,
    /// Traces held now.
    pub traces: usize,
    /// Spans held now.
    pub spans: usize,
    /// Distinct services seen (counted up to 100,000).
    pub services: usize,
    /// Traces that have completed (a reopened trace counts again).
    pub traces_completed: u64,
    /// Whole traces evicted to stay within the bounds.
    pub evicted_traces: u64,
    /// The spans of those traces.
    pub evicted_spans: u64,
    /// Spans dropped because their trace had [`Config::max_spans_per_trace`] spans.
    pub dropped_spans: u64,
}

const MAX_SERVICES_COUNTED: usize = 100_000;

/// One trace held by the assembler.
#[derive(Clone, Debug)]
pub struct TraceEntry {
    /// Its spans, in the order they arrived.
    pub spans: Vec<Span>,
    /// Whether it is complete (quiet for the window since its last span).
    pub complete: bool,
    /// How many times it has completed (more than 1: late spans reopened it).
    pub completions: u32,
    /// When its first span arrived.
    pub first_seen: Instant,
    /// When its latest span arrived.
    pub last_seen: Instant,
    /// Arrival order of the trace (for eviction, oldest first).
    seq: u64,
    /// Bumped by every arrival; a quiet-window entry with an older one is stale.
    generation: u64,
}

/// Groups spans by trace, bounded; see the module docs.
#[derive(Debug)]
pub struct Assembler {
    config: Config,
    traces: HashMap<TraceId, TraceEntry>,
    /// (arrival seq, trace) oldest first; entries of evicted traces are skipped lazily.
    age: VecDeque<(u64, TraceId)>,
    /// (last arrival, trace, generation) in arrival order: the quiet-window deadlines.
    quiet: VecDeque<(Instant, TraceId, u64)>,
    services: HashSet<Arc<str>>,
    stats: Stats,
    next_seq: u64,
    now: Option<Instant>,
}

impl Assembler {
    /// An empty assembler. Bounds of 0 are taken as 1.
    pub fn new(mut config: Config) -> Self {
        config.max_traces = config.max_traces.max(1);
        config.max_spans_per_trace = config.max_spans_per_trace.max(1);
        config.max_spans = config.max_spans.max(1);
        Assembler {
            config,
            traces: HashMap::new(),
            age: VecDeque::new(),
            quiet: VecDeque::new(),
            services: HashSet::new(),
            stats: Stats::default(),
            next_seq: 0,
            now: None,
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The counts so far.
    pub fn stats(&self) -> Stats {
        Stats {
            traces: self.traces.len(),
            services: self.services.len(),
            ..self.stats.clone()
        }
    }

    /// Counts spans a decoder rejected, so that the status shows them.
    pub fn count_rejected(&mut self, spans: u64) {
        self.stats.spans_rejected += spans;
    }

    /// The trace `id`, if held.
    pub fn trace(&self, id: &TraceId) -> Option<&TraceEntry> {
        self.traces.get(id)
    }

    /// Every trace held, in no particular order.
    pub fn traces(&self) -> impl Iterator<Item = (&TraceId, &TraceEntry)> {
        self.traces.iter()
    }

    /// `now`, never earlier than a time already seen (the queue stays in order).
    fn clock(&mut self, now: Instant) -> Instant {
        let now = self.now.map_or(now, |last| last.max(now));
        self.now = Some(now);
        now
    }

    /// Adds spans that arrived at `now`. A span of a complete trace reopens it.
    pub fn insert(&mut self, spans: impl IntoIterator<Item = Span>, now: Instant) {
        let now = self.clock(now);
        for span in spans {
            self.insert_one(span, now);
        }
    }

    fn insert_one(&mut self, span: Span, now: Instant) {
        let id = span.trace_id;
        if !self.traces.contains_key(&id) {
            while self.traces.len() >= self.config.max_traces {
                if !self.evict_oldest() {
                    break;
                }
            }
            let seq = self.next_seq;
            self.next_seq += 1;
            self.age.push_back((seq, id));
            self.traces.insert(
                id,
                TraceEntry {
                    spans: Vec::new(),
                    complete: false,
                    completions: 0,
                    first_seen: now,
                    last_seen: now,
                    seq,
                    generation: 0,
                },
            );
        }
        let full = self
            .traces
            .get(&id)
            .is_some_and(|t| t.spans.len() >= self.config.max_spans_per_trace);
        if full {
            self.stats.dropped_spans += 1;
            return;
        }
        // Room for one more span in all: evict other (older) traces, never this one.
        while self.stats.spans >= self.config.max_spans {
            if !self.evict_oldest_except(Some(id)) {
                break;
            }
        }
        if self.services.len() < MAX_SERVICES_COUNTED && !self.services.contains(span.service()) {
            self.services.insert(Arc::clone(&span.resource.service));
        }
        let Some(entry) = self.traces.get_mut(&id) else {
            return;
        };
        // One deadline per trace per arrival time (not per span); a later arrival supersedes it.
        let needs_deadline = entry.complete || entry.spans.is_empty() || entry.last_seen != now;
        entry.spans.push(span);
        entry.complete = false;
        entry.last_seen = now;
        if needs_deadline {
            entry.generation += 1;
            self.quiet.push_back((now, id, entry.generation));
        }
        self.stats.spans += 1;
        self.stats.spans_received += 1;
    }

    fn evict_oldest(&mut self) -> bool {
        self.evict_oldest_except(None)
    }

    /// Evicts the oldest whole trace (not `keep`); `false` when there is none to evict.
    fn evict_oldest_except(&mut self, keep: Option<TraceId>) -> bool {
        let mut kept = None;
        let mut evicted = false;
        while let Some((seq, id)) = self.age.pop_front() {
            let live = self.traces.get(&id).is_some_and(|t| t.seq == seq);
            if !live {
                continue;
            }
            if Some(id) == keep {
                kept = Some((seq, id));
                continue;
            }
            if let Some(entry) = self.traces.remove(&id) {
                self.stats.evicted_traces += 1;
                self.stats.evicted_spans += entry.spans.len() as u64;
                self.stats.spans -= entry.spans.len();
            }
            evicted = true;
            break;
        }
        if let Some(k) = kept {
            self.age.push_front(k);
        }
        evicted
    }

    /// The traces that have become complete by `now` (quiet for the window since their last
    /// span), oldest deadline first. Each is returned once per completion.
    pub fn poll(&mut self, now: Instant) -> Vec<TraceId> {
        let now = self.clock(now);
        let mut done = Vec::new();
        while let Some(&(last, id, generation)) = self.quiet.front() {
            if now.saturating_duration_since(last) < self.config.quiet_for {
                break;
            }
            self.quiet.pop_front();
            if let Some(entry) = self.traces.get_mut(&id)
                && entry.generation == generation
                && !entry.complete
            {
                entry.complete = true;
                entry.completions += 1;
                self.stats.traces_completed += 1;
                done.push(id);
            }
        }
        done
    }

    /// Completes every open trace now, whatever the window (the end of a file, or shutdown).
    pub fn flush(&mut self) -> Vec<TraceId> {
        let mut open: Vec<(u64, TraceId)> = self
            .traces
            .iter()
            .filter(|(_, t)| !t.complete)
            .map(|(id, t)| (t.seq, *id))
            .collect();
        open.sort_unstable();
        self.quiet.clear();
        for (_, id) in &open {
            if let Some(entry) = self.traces.get_mut(id) {
                entry.complete = true;
                entry.completions += 1;
                self.stats.traces_completed += 1;
            }
        }
        open.into_iter().map(|(_, id)| id).collect()
    }

    /// When the next trace can complete, if any is open (for a caller's timer).
    pub fn next_deadline(&self) -> Option<Instant> {
        self.quiet
            .front()
            .map(|(last, _, _)| *last + self.config.quiet_for)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::testing::span;

    fn config(max_traces: usize) -> Config {
        Config {
            quiet_for: Duration::from_secs(2),
            max_traces,
            max_spans_per_trace: 3,
            max_spans: 100,
        }
    }

    #[test]
    fn a_trace_completes_after_the_quiet_window_and_a_late_span_reopens_it() {
        let t0 = Instant::now();
        let mut a = Assembler::new(config(10));
        a.insert([span(1, 1, None)], t0);
        a.insert([span(1, 2, Some(1))], t0 + Duration::from_secs(1));
        // 2 s after the first span but 1 s after the second: still open.
        assert!(a.poll(t0 + Duration::from_secs(2)).is_empty());
        assert_eq!(a.next_deadline(), Some(t0 + Duration::from_secs(3)));
        let done = a.poll(t0 + Duration::from_secs(3));
        assert_eq!(done, [span(1, 1, None).trace_id]);
        assert!(a.trace(&done[0]).unwrap().complete);
        // Returned once.
        assert!(a.poll(t0 + Duration::from_secs(10)).is_empty());
        // A late span reopens it; it completes again, whole.
        a.insert([span(1, 3, Some(1))], t0 + Duration::from_secs(11));
        assert!(!a.trace(&done[0]).unwrap().complete);
        assert!(a.poll(t0 + Duration::from_secs(12)).is_empty());
        assert_eq!(a.poll(t0 + Duration::from_secs(13)), done);
        let entry = a.trace(&done[0]).unwrap();
        assert_eq!((entry.spans.len(), entry.completions), (3, 2));
        assert_eq!(a.stats().traces_completed, 2);
    }

    #[test]
    fn the_oldest_whole_trace_is_evicted_and_counted() {
        let t0 = Instant::now();
        let mut a = Assembler::new(config(2));
        a.insert([span(1, 1, None), span(1, 2, Some(1))], t0);
        a.insert([span(2, 1, None)], t0);
        // Trace 1 is the oldest even though it is still open.
        a.insert([span(3, 1, None)], t0);
        let stats = a.stats();
        assert_eq!(
            (stats.traces, stats.evicted_traces, stats.evicted_spans),
            (2, 1, 2)
        );
        assert!(a.trace(&span(1, 1, None).trace_id).is_none());
        assert!(a.trace(&span(2, 1, None).trace_id).is_some());
        assert_eq!(stats.spans, 2);
        // The evicted trace's deadline is stale: only the two held complete.
        assert_eq!(a.poll(t0 + Duration::from_secs(5)).len(), 2);
    }

    #[test]
    fn spans_over_the_per_trace_cap_are_dropped_and_counted_not_evicted() {
        let t0 = Instant::now();
        let mut a = Assembler::new(config(10));
        a.insert((1..=5).map(|s| span(1, s, None)), t0);
        let stats = a.stats();
        assert_eq!(
            (stats.spans, stats.dropped_spans, stats.evicted_traces),
            (3, 2, 0)
        );
    }

    #[test]
    fn the_total_span_bound_evicts_older_traces_never_the_one_growing() {
        let t0 = Instant::now();
        let mut a = Assembler::new(Config {
            max_spans: 4,
            max_spans_per_trace: 10,
            ..config(10)
        });
        a.insert([span(1, 1, None), span(1, 2, None)], t0);
        a.insert((1..=4).map(|s| span(2, s, None)), t0);
        let stats = a.stats();
        assert_eq!((stats.spans, stats.traces, stats.evicted_spans), (4, 1, 2));
        // Alone and at the bound, a trace keeps its spans: there is nothing older to evict.
        a.insert([span(2, 5, None)], t0);
        assert_eq!(a.stats().spans, 5);
    }

    #[test]
    fn flush_completes_every_open_trace_in_arrival_order() {
        let t0 = Instant::now();
        let mut a = Assembler::new(config(10));
        a.insert([span(2, 1, None)], t0);
        a.insert([span(1, 1, None)], t0);
        let ids = a.flush();
        assert_eq!(ids, [span(2, 1, None).trace_id, span(1, 1, None).trace_id]);
        assert!(a.poll(t0 + Duration::from_secs(9)).is_empty());
        assert_eq!(a.stats().services, 1);
    }

    #[test]
    fn a_clock_that_goes_back_does_not_complete_early_or_stall() {
        let t0 = Instant::now() + Duration::from_secs(100);
        let mut a = Assembler::new(config(10));
        a.insert([span(1, 1, None)], t0);
        a.insert([span(2, 1, None)], t0 - Duration::from_secs(50));
        assert!(a.poll(t0 + Duration::from_secs(1)).is_empty());
        assert_eq!(a.poll(t0 + Duration::from_secs(2)).len(), 2);
    }
}
