//! The log records a session holds: the newest `max`, the oldest dropped first and counted,
//! found by trace, and those of no span held.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet, VecDeque};

use crate::assemble::Assembler;
use crate::model::{LogRecord, SpanId, TraceId};

use super::stats::LogStats;

/// The log records held: the newest `max`, in arrival order, with the positions of each
/// trace's records (by sequence number: the oldest of a trace is the first to go).
#[derive(Debug, Default)]
pub(super) struct Logs {
    max: usize,
    records: VecDeque<LogRecord>,
    /// The sequence number of `records[0]`.
    first: u64,
    by_trace: HashMap<TraceId, VecDeque<u64>>,
    pub(super) stats: LogStats,
}

impl Logs {
    /// An empty store of at most `max` records.
    pub(super) fn new(max: usize) -> Self {
        Logs {
            max,
            ..Logs::default()
        }
    }

    pub(super) fn insert(&mut self, logs: Vec<LogRecord>, rejected: u64) {
        self.stats.received += logs.len() as u64;
        self.stats.rejected += rejected;
        if self.max == 0 {
            self.stats.dropped += logs.len() as u64;
            return;
        }
        for log in logs {
            if self.records.len() >= self.max {
                self.drop_oldest();
            }
            let seq = self.first + self.records.len() as u64;
            if let Some(trace) = log.trace_id {
                self.by_trace.entry(trace).or_default().push_back(seq);
            }
            self.records.push_back(log);
        }
        self.stats.held = self.records.len() as u64;
    }

    fn drop_oldest(&mut self) {
        let Some(old) = self.records.pop_front() else {
            return;
        };
        self.first += 1;
        self.stats.dropped += 1;
        if let Some(trace) = old.trace_id
            && let Entry::Occupied(mut seqs) = self.by_trace.entry(trace)
        {
            seqs.get_mut().pop_front();
            if seqs.get().is_empty() {
                seqs.remove();
            }
        }
    }

    /// The records of trace `id`, in arrival order.
    pub(super) fn of_trace(&self, id: TraceId) -> impl Iterator<Item = &LogRecord> {
        self.by_trace.get(&id).into_iter().flat_map(move |seqs| {
            seqs.iter().filter_map(move |seq| {
                let at = usize::try_from(seq.checked_sub(self.first)?).ok()?;
                self.records.get(at)
            })
        })
    }

    /// The log records held of no span held (no trace or span id, or ids of no span of a trace
    /// held), of `service` (empty: any), by service and then time; the newest `limit` (0: no
    /// limit).
    pub(super) fn unmatched<'a>(
        &'a self,
        assembler: &Assembler,
        service: &str,
        limit: usize,
    ) -> LogList<'a> {
        let mut spans: HashMap<TraceId, HashSet<SpanId>> = HashMap::new();
        let mut services: Vec<&str> = Vec::new();
        let mut logs: Vec<&LogRecord> = Vec::new();
        for log in &self.records {
            let held = log.span().is_some_and(|(trace, span)| {
                spans
                    .entry(trace)
                    .or_insert_with(|| {
                        assembler
                            .trace(&trace)
                            .map(|t| t.spans.iter().map(|s| s.span_id).collect())
                            .unwrap_or_default()
                    })
                    .contains(&span)
            });
            if held {
                continue;
            }
            if !services.contains(&log.service()) {
                services.push(log.service());
            }
            if service.is_empty() || log.service() == service {
                logs.push(log);
            }
        }
        let matching = logs.len();
        if limit > 0 && logs.len() > limit {
            logs.sort_by_key(|l| std::cmp::Reverse(l.time()));
            logs.truncate(limit);
        }
        logs.sort_by(|a, b| (a.service(), a.time()).cmp(&(b.service(), b.time())));
        let mut services: Vec<String> = services.into_iter().map(str::to_owned).collect();
        services.sort();
        LogList {
            logs,
            matching,
            services,
        }
    }
}

/// The log records of no span held ([`Session::unmatched_logs`]).
///
/// [`Session::unmatched_logs`]: crate::session::Session::unmatched_logs
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct LogList<'a> {
    /// The records, by service and then time, up to the limit (the newest).
    pub logs: Vec<&'a LogRecord>,
    /// How many match in all.
    pub matching: usize,
    /// The services of every record of no span held, sorted.
    pub services: Vec<String>,
}
