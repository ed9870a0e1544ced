//! The assembler ([`Assembler`]): spans grouped into traces, completed after a quiet window,
//! held within the bounds of its [`Config`].

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::stats::Stats;
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
