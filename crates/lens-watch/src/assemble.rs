//! Spans to traces: grouped by trace id as they arrive, a trace complete once it has seen no new
//! span for a quiet window (a late span reopens it), memory bounded by whole-trace eviction.
//!
//! The bounds are honest: a trace evicted is remembered by its id (a bounded set), so that its
//! later spans are dropped and counted instead of starting a fragment that would later look
//! whole; eviction takes traces already complete (and shown) before open ones, oldest first; a
//! trace that lost a span to a bound says so ([`TraceEntry::is_partial`]); and every span
//! received is accounted for exactly once in [`Stats`] (see [`Stats::unaccounted`]).
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
    /// The most traces kept, open or complete (default 10,000); whole traces beyond it are
    /// evicted, complete ones first, oldest first.
    pub max_traces: usize,
    /// The most spans kept for one trace (default 10,000); later spans of that trace are
    /// dropped and counted, and the trace is marked partial.
    pub max_spans_per_trace: usize,
    /// The most spans kept in all (default 1,000,000); whole traces beyond it are evicted,
    /// complete ones first, oldest first.
    pub max_spans: usize,
    /// The most ids of evicted traces remembered (default 100,000, about 5 MB when full), so
    /// that their later spans are dropped instead of starting a fragment; the oldest ids beyond
    /// it are forgotten (and counted: [`Stats::evicted_ids_forgotten`]).
    pub max_evicted_ids: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            quiet_for: Duration::from_secs(2),
            max_traces: 10_000,
            max_spans_per_trace: 10_000,
            max_spans: 1_000_000,
            max_evicted_ids: 100_000,
        }
    }
}

/// What an [`Assembler`] has seen; nothing it drops goes uncounted. Every span received is, at
/// any time, exactly one of: shown (part of a trace when it completed), held and not yet shown,
/// or dropped for one reason ([`Stats::unaccounted`] checks it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Spans given to the assembler (kept or dropped).
    pub spans_received: u64,
    /// Spans rejected by the decoder (see [`Assembler::count_rejected`]); not in
    /// `spans_received`.
    pub spans_rejected: u64,
    /// Traces held now.
    pub traces: usize,
    /// Spans held now.
    pub spans: usize,
    /// Distinct services seen (counted up to 100,000).
    pub services: usize,
    /// Traces that have completed, each counted once (a trace reopened by late spans and
    /// completed again is not counted again).
    pub traces_completed: u64,
    /// Spans that were part of a trace when it completed (each counted once).
    pub spans_shown: u64,
    /// Spans held that have not been part of a completed trace yet.
    pub spans_open: u64,
    /// Whole traces evicted to stay within the bounds (each counted once).
    pub evicted_traces: u64,
    /// The spans those traces held when evicted.
    pub evicted_spans: u64,
    /// Of the evicted traces, those evicted while open (not complete).
    pub evicted_open_traces: u64,
    /// Spans dropped with an evicted trace before they were ever shown.
    pub dropped_evicted: u64,
    /// Spans that arrived after their trace had been evicted, dropped.
    pub dropped_late: u64,
    /// Spans dropped because their trace had [`Config::max_spans_per_trace`] spans.
    pub dropped_spans: u64,
    /// Ids of evicted traces remembered now.
    pub evicted_ids: usize,
    /// Ids of evicted traces forgotten to stay within [`Config::max_evicted_ids`] (a later
    /// span of one of those traces starts a new, partial-looking trace).
    pub evicted_ids_forgotten: u64,
}

impl Stats {
    /// Spans dropped, all reasons together (not counting rejected ones).
    pub fn dropped(&self) -> u64 {
        self.dropped_evicted + self.dropped_late + self.dropped_spans
    }

    /// Spans received that are neither shown, held open nor dropped: always 0 (a check for
    /// tests and for the status).
    pub fn unaccounted(&self) -> i128 {
        i128::from(self.spans_received)
            - i128::from(self.spans_shown)
            - i128::from(self.spans_open)
            - i128::from(self.dropped())
    }
}

impl std::fmt::Display for Stats {
    /// The status line: spans received, traces, services, rejected, evicted, and every span
    /// dropped by its reason (never silent).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} spans received, {} traces ({} complete), {} services, {} rejected, {} traces evicted ({} spans)",
            self.spans_received,
            self.traces,
            self.traces_completed,
            self.services,
            self.spans_rejected,
            self.evicted_traces,
            self.evicted_spans,
        )?;
        if self.evicted_open_traces > 0 {
            write!(
                f,
                ", {} of them open ({} spans never shown)",
                self.evicted_open_traces, self.dropped_evicted
            )?;
        }
        if self.dropped_late > 0 {
            write!(
                f,
                ", {} later spans of evicted traces dropped",
                self.dropped_late
            )?;
        }
        if self.dropped_spans > 0 {
            write!(
                f,
                ", {} spans dropped over the per-trace limit",
                self.dropped_spans
            )?;
        }
        Ok(())
    }
}

impl Stats {
    /// The account of every span received, for the end of a run: `received = shown + held +
    /// dropped by reason`, with `saved` (spans written to a file) beside `received` when given.
    pub fn account(&self, saved: Option<u64>) -> Account<'_> {
        Account { stats: self, saved }
    }
}

/// [`Stats::account`]'s line.
#[derive(Clone, Copy, Debug)]
pub struct Account<'a> {
    stats: &'a Stats,
    saved: Option<u64>,
}

impl std::fmt::Display for Account<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let stats = self.stats;
        write!(f, "{} spans received", stats.spans_received)?;
        if let Some(saved) = self.saved {
            write!(f, ", {saved} saved")?;
        }
        write!(f, ": {} shown", stats.spans_shown)?;
        if stats.spans_open > 0 {
            write!(f, ", {} held open", stats.spans_open)?;
        }
        write!(
            f,
            ", {} dropped ({} in traces evicted while open, {} arriving after their trace was \
evicted, {} over the per-trace limit)",
            stats.dropped(),
            stats.dropped_evicted,
            stats.dropped_late,
            stats.dropped_spans
        )?;
        if stats.spans_rejected > 0 {
            write!(f, "; {} more rejected by the decoder", stats.spans_rejected)?;
        }
        Ok(())
    }
}

const MAX_SERVICES_COUNTED: usize = 100_000;

/// One trace held by the assembler.
#[derive(Clone, Debug)]
pub struct TraceEntry {
    /// The trace.
    pub trace_id: TraceId,
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
    /// Spans of this trace dropped by a bound ([`Config::max_spans_per_trace`]): when
    /// non-zero the trace is partial.
    pub lost_spans: u64,
    /// Spans already counted as shown (those it held at its latest completion).
    shown: usize,
    /// Arrival order of the trace (for eviction, oldest first).
    seq: u64,
    /// Bumped by every arrival; a quiet-window entry with an older one is stale.
    generation: u64,
}

impl TraceEntry {
    /// Whether the trace lost any span to a bound: what is held is not the whole trace, and
    /// what is missing says nothing about how the trace was propagated.
    pub fn is_partial(&self) -> bool {
        self.lost_spans > 0
    }
}

/// Groups spans by trace, bounded; see the module docs.
#[derive(Debug)]
pub struct Assembler {
    config: Config,
    traces: HashMap<TraceId, TraceEntry>,
    /// (arrival seq, trace) oldest first; entries of evicted traces are skipped lazily.
    age: VecDeque<(u64, TraceId)>,
    /// (completions, trace) in order of completion: the first candidates for eviction; stale
    /// entries (reopened, or completed again since) are skipped lazily.
    done: VecDeque<(u32, TraceId)>,
    /// (last arrival, trace, generation) in arrival order: the quiet-window deadlines.
    quiet: VecDeque<(Instant, TraceId, u64)>,
    /// Ids of evicted traces, oldest first in `evicted_order`.
    evicted: HashSet<TraceId>,
    evicted_order: VecDeque<TraceId>,
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
        config.max_evicted_ids = config.max_evicted_ids.max(1);
        Assembler {
            config,
            traces: HashMap::new(),
            age: VecDeque::new(),
            done: VecDeque::new(),
            quiet: VecDeque::new(),
            evicted: HashSet::new(),
            evicted_order: VecDeque::new(),
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
            evicted_ids: self.evicted.len(),
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

    /// Adds spans that arrived at `now`. A span of a complete trace reopens it; a span of a
    /// trace evicted before is dropped (and counted).
    pub fn insert(&mut self, spans: impl IntoIterator<Item = Span>, now: Instant) {
        let now = self.clock(now);
        for span in spans {
            self.insert_one(span, now);
        }
    }

    fn insert_one(&mut self, span: Span, now: Instant) {
        let id = span.trace_id;
        self.stats.spans_received += 1;
        if !self.traces.contains_key(&id) {
            if self.evicted.contains(&id) {
                self.stats.dropped_late += 1;
                return;
            }
            while self.traces.len() >= self.config.max_traces {
                if !self.evict_except(None) {
                    break;
                }
            }
            let seq = self.next_seq;
            self.next_seq += 1;
            self.age.push_back((seq, id));
            self.traces.insert(
                id,
                TraceEntry {
                    trace_id: id,
                    spans: Vec::new(),
                    complete: false,
                    completions: 0,
                    first_seen: now,
                    last_seen: now,
                    lost_spans: 0,
                    shown: 0,
                    seq,
                    generation: 0,
                },
            );
        }
        if let Some(entry) = self.traces.get_mut(&id)
            && entry.spans.len() >= self.config.max_spans_per_trace
        {
            entry.lost_spans += 1;
            self.stats.dropped_spans += 1;
            return;
        }
        // Room for one more span in all: evict other traces, never this one.
        while self.stats.spans >= self.config.max_spans {
            if !self.evict_except(Some(id)) {
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
        self.stats.spans_open += 1;
    }

    /// Evicts one whole trace other than `keep`: the one that completed longest ago, else
    /// (none complete) the oldest open one; `false` when there is none to evict.
    fn evict_except(&mut self, keep: Option<TraceId>) -> bool {
        let traces = &self.traces;
        let victim = first_live(&mut self.done, keep, |completions, id| {
            traces
                .get(id)
                .is_some_and(|t| t.complete && t.completions == completions)
        })
        .or_else(|| {
            first_live(&mut self.age, keep, |seq, id| {
                traces.get(id).is_some_and(|t| t.seq == seq)
            })
        });
        let Some(id) = victim else {
            return false;
        };
        if let Some(entry) = self.traces.remove(&id) {
            let held = entry.spans.len();
            let unshown = (held - entry.shown.min(held)) as u64;
            self.stats.evicted_traces += 1;
            self.stats.evicted_spans += held as u64;
            self.stats.spans -= held;
            self.stats.spans_open -= unshown;
            self.stats.dropped_evicted += unshown;
            if !entry.complete {
                self.stats.evicted_open_traces += 1;
            }
            self.remember_evicted(id);
        }
        true
    }

    fn remember_evicted(&mut self, id: TraceId) {
        if self.evicted.insert(id) {
            self.evicted_order.push_back(id);
        }
        while self.evicted_order.len() > self.config.max_evicted_ids {
            if let Some(old) = self.evicted_order.pop_front() {
                self.evicted.remove(&old);
                self.stats.evicted_ids_forgotten += 1;
            }
        }
    }

    /// Marks trace `id` complete (once per completion) and counts what it shows.
    fn complete(&mut self, id: TraceId) -> bool {
        let Some(entry) = self.traces.get_mut(&id) else {
            return false;
        };
        if entry.complete {
            return false;
        }
        entry.complete = true;
        if entry.completions == 0 {
            self.stats.traces_completed += 1;
        }
        entry.completions += 1;
        let newly = entry.spans.len() - entry.shown.min(entry.spans.len());
        entry.shown = entry.spans.len();
        self.stats.spans_shown += newly as u64;
        self.stats.spans_open -= newly as u64;
        self.done.push_back((entry.completions, id));
        // Stale entries (reopened traces) are skipped at the front; compact when they pile up
        // behind a live front.
        if self.done.len() > 2 * self.traces.len() + 64 {
            let traces = &self.traces;
            self.done.retain(|(completions, id)| {
                traces
                    .get(id)
                    .is_some_and(|t| t.complete && t.completions == *completions)
            });
        }
        true
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
            let current = self
                .traces
                .get(&id)
                .is_some_and(|t| t.generation == generation);
            if current && self.complete(id) {
                done.push(id);
            }
        }
        done
    }

    /// Completes every open trace now, whatever the window (the end of a file, or shutdown),
    /// in arrival order.
    pub fn flush(&mut self) -> Vec<TraceId> {
        let mut open: Vec<(u64, TraceId)> = self
            .traces
            .iter()
            .filter(|(_, t)| !t.complete)
            .map(|(id, t)| (t.seq, *id))
            .collect();
        open.sort_unstable();
        self.quiet.clear();
        open.into_iter()
            .map(|(_, id)| id)
            .filter(|id| self.complete(*id))
            .collect()
    }

    /// When the next trace can complete, if any is open (for a caller's timer).
    pub fn next_deadline(&self) -> Option<Instant> {
        self.quiet
            .front()
            .map(|(last, _, _)| *last + self.config.quiet_for)
    }
}

/// Pops `queue`'s stale entries (`live` says which are not) from the front and returns the first
/// live trace other than `keep` (popped too); `keep`'s entry stays at the front.
fn first_live<K: Copy>(
    queue: &mut VecDeque<(K, TraceId)>,
    keep: Option<TraceId>,
    live: impl Fn(K, &TraceId) -> bool,
) -> Option<TraceId> {
    let mut kept = None;
    let mut found = None;
    while let Some((key, id)) = queue.pop_front() {
        if !live(key, &id) {
            continue;
        }
        if Some(id) == keep {
            kept = Some((key, id));
            continue;
        }
        found = Some(id);
        break;
    }
    if let Some(k) = kept {
        queue.push_front(k);
    }
    found
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
            max_evicted_ids: 1_000,
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
        // Counted once, however often it completes; each span shown once.
        let stats = a.stats();
        assert_eq!((stats.traces_completed, stats.spans_shown), (1, 3));
        assert_eq!(stats.unaccounted(), 0);
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

    #[test]
    fn a_trace_evicted_while_open_drops_its_later_spans_instead_of_starting_a_fragment() {
        let t0 = Instant::now();
        let mut a = Assembler::new(config(1));
        a.insert([span(1, 1, None)], t0);
        // Trace 2 evicts the open trace 1.
        a.insert([span(2, 1, None)], t0);
        // Trace 1's later spans: dropped and counted, no fragment of trace 1 appears.
        a.insert([span(1, 2, Some(1)), span(1, 3, Some(1))], t0);
        assert!(a.trace(&span(1, 1, None).trace_id).is_none());
        let stats = a.stats();
        assert_eq!(
            (
                stats.evicted_traces,
                stats.evicted_open_traces,
                stats.evicted_ids
            ),
            (1, 1, 1)
        );
        assert_eq!((stats.dropped_evicted, stats.dropped_late), (1, 2));
        assert_eq!(stats.spans_received, 4);
        assert_eq!(stats.unaccounted(), 0);
        // Only trace 2 ever completes.
        assert_eq!(
            a.poll(t0 + Duration::from_secs(5)),
            [span(2, 1, None).trace_id]
        );
    }

    #[test]
    fn eviction_takes_complete_traces_before_open_ones() {
        let t0 = Instant::now();
        let mut a = Assembler::new(config(2));
        a.insert([span(1, 1, None)], t0);
        a.insert([span(2, 1, None)], t0 + Duration::from_secs(5));
        // Trace 2 completes (its window passed), trace 1 ... also: reopen 1 so it is open.
        assert_eq!(a.poll(t0 + Duration::from_secs(8)).len(), 2);
        a.insert([span(1, 2, Some(1))], t0 + Duration::from_secs(9));
        // Trace 1 is older but open: the complete trace 2 goes.
        a.insert([span(3, 1, None)], t0 + Duration::from_secs(9));
        assert!(a.trace(&span(1, 1, None).trace_id).is_some());
        assert!(a.trace(&span(2, 1, None).trace_id).is_none());
        let stats = a.stats();
        assert_eq!((stats.evicted_traces, stats.evicted_open_traces), (1, 0));
        // Its span had been shown: nothing dropped.
        assert_eq!((stats.dropped(), stats.spans_shown), (0, 2));
        assert_eq!(stats.unaccounted(), 0);
        // With no complete trace left, the oldest open one goes.
        a.insert([span(4, 1, None)], t0 + Duration::from_secs(9));
        assert!(a.trace(&span(1, 1, None).trace_id).is_none());
        let stats = a.stats();
        assert_eq!((stats.evicted_traces, stats.evicted_open_traces), (2, 1));
        // Of trace 1's two spans, the first was shown, the second dropped with it.
        assert_eq!(stats.dropped_evicted, 1);
        assert_eq!(stats.unaccounted(), 0);
    }

    #[test]
    fn a_trace_over_the_per_trace_cap_is_partial() {
        let t0 = Instant::now();
        let mut a = Assembler::new(config(10));
        a.insert((1..=3).map(|s| span(1, s, None)), t0);
        let id = span(1, 1, None).trace_id;
        assert!(!a.trace(&id).unwrap().is_partial());
        a.insert([span(1, 4, None)], t0);
        let entry = a.trace(&id).unwrap();
        assert!(entry.is_partial());
        assert_eq!(entry.lost_spans, 1);
        assert_eq!(a.stats().unaccounted(), 0);
    }

    #[test]
    fn forgotten_ids_of_evicted_traces_are_counted() {
        let t0 = Instant::now();
        let mut a = Assembler::new(Config {
            max_evicted_ids: 2,
            ..config(1)
        });
        for t in 1..=5 {
            a.insert([span(t, 1, None)], t0);
        }
        let stats = a.stats();
        assert_eq!(
            (
                stats.evicted_traces,
                stats.evicted_ids,
                stats.evicted_ids_forgotten
            ),
            (4, 2, 2)
        );
        // Trace 3 is still remembered; trace 1 is not (its span starts a trace again).
        a.insert([span(3, 2, None)], t0);
        assert_eq!(a.stats().dropped_late, 1);
    }

    /// Like `lens demo --otlp` into a small `--max-traces`: every service exports the spans of
    /// every trace in one batch, so all traces are open at once, far over the bound; batches
    /// of different senders interleave, and time passes between them.
    #[test]
    fn interleaved_batches_over_the_bound_never_complete_a_fragment() {
        const TRACES: u64 = 300;
        const SERVICES: u8 = 6;
        for max_traces in [1, 7, 50, 120, 299, 300, 1000] {
            let t0 = Instant::now();
            let mut a = Assembler::new(Config {
                max_traces,
                max_spans_per_trace: 100,
                max_spans: 1_000_000,
                ..config(max_traces)
            });
            let mut completed: HashMap<TraceId, usize> = HashMap::new();
            let mut check = |a: &mut Assembler, ids: Vec<TraceId>| {
                for id in ids {
                    let entry = a.trace(&id).unwrap();
                    assert!(
                        entry.spans.len() == SERVICES as usize || entry.is_partial(),
                        "max_traces {max_traces}: trace completed with {} of {SERVICES} spans",
                        entry.spans.len()
                    );
                    *completed.entry(id).or_default() += 1;
                }
                assert_eq!(a.stats().unaccounted(), 0);
            };
            let mut at = t0;
            // Two senders, each with its traces (sender 0: even, 1: odd), service by service.
            for service in 1..=SERVICES {
                for sender in 0..2 {
                    let batch: Vec<Span> = (0..TRACES)
                        .filter(|t| t % 2 == sender)
                        .map(|t| {
                            let mut s = span(1, service, (service > 1).then_some(1));
                            s.trace_id.0[..8].copy_from_slice(&(t + 1).to_be_bytes());
                            s
                        })
                        .collect();
                    a.insert(batch, at);
                    at += Duration::from_millis(300);
                    let done = a.poll(at);
                    check(&mut a, done);
                }
            }
            let done = a.poll(at + Duration::from_secs(2));
            check(&mut a, done);
            let stats = a.stats();
            assert_eq!(stats.spans_received, TRACES * u64::from(SERVICES));
            assert_eq!(stats.unaccounted(), 0);
            assert_eq!(stats.spans_open, 0, "max_traces {max_traces}: {stats:?}");
            // Each trace counted once: completed, or evicted while open, never both twice.
            assert_eq!(stats.traces_completed, completed.len() as u64);
            assert!(completed.values().all(|n| *n == 1));
            assert_eq!(
                stats.traces_completed + stats.evicted_open_traces,
                TRACES,
                "max_traces {max_traces}: {stats:?}"
            );
            if max_traces >= TRACES as usize {
                assert_eq!(stats.dropped(), 0);
            }
        }
    }
}
