//! The session's flow: spans in, grouped into traces, each trace out with the doctor's
//! findings as it completes, and a view of any trace held for the renderers.

use std::collections::{HashSet, VecDeque};
use std::time::Instant;

use crate::assemble::{Assembler, Config};
use crate::decode::Batch;
use crate::diagnose::{Doctor, DoctorConfig, Finding, FindingCounts, Rule, Severity};
use crate::model::TraceId;
use crate::render::map::{MapBounds, ServiceMap};
use crate::render::{HopNames, TraceView, bounds};

use super::logs::{LogList, Logs};
use super::stats::SessionStats;

/// What a [`Session`] is built with.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SessionConfig {
    /// The assembler's bounds and quiet window.
    pub assemble: Config,
    /// The doctor's tolerances and bounds.
    pub doctor: DoctorConfig,
    /// Leave out info findings (returned, held and counted).
    pub quiet: bool,
    /// Leave out the findings of these rules (counted apart, as allowed).
    pub allow: Vec<Rule>,
    /// How hops are named in summaries.
    pub hop_names: HopNames<'static>,
    /// The most findings held for [`Session::findings`] (the newest; default 1,000).
    pub max_findings: usize,
    /// The most log records held (the newest; the oldest are dropped first and counted;
    /// default 100,000; 0 keeps none).
    pub max_logs: usize,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            assemble: Config::default(),
            doctor: DoctorConfig::default(),
            quiet: false,
            allow: Vec::new(),
            hop_names: HopNames::default(),
            max_findings: 1_000,
            max_logs: 100_000,
        }
    }
}

/// A trace that has just completed, with the doctor's findings on it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Completed {
    /// The trace.
    pub trace_id: TraceId,
    /// The findings on it (less those `quiet` and `allow` leave out).
    pub findings: Vec<Finding>,
    /// Completed by [`Session::stop`] before its quiet window passed.
    pub cut_short: bool,
}

/// The flow of spans to traces to findings: see the module docs.
#[derive(Debug)]
pub struct Session {
    pub(super) assembler: Assembler,
    doctor: Doctor,
    quiet: bool,
    allow: Vec<Rule>,
    hop_names: HopNames<'static>,
    max_findings: usize,
    pub(super) findings: VecDeque<Finding>,
    counts: FindingCounts,
    allowed: u64,
    logs: Logs,
}

impl Session {
    /// An empty session.
    pub fn new(config: SessionConfig) -> Self {
        Session {
            assembler: Assembler::new(config.assemble),
            doctor: Doctor::new(config.doctor),
            quiet: config.quiet,
            allow: config.allow,
            hop_names: config.hop_names,
            max_findings: config.max_findings,
            findings: VecDeque::new(),
            counts: FindingCounts::default(),
            allowed: 0,
            logs: Logs::new(config.max_logs),
        }
    }

    /// Takes the spans (and the log records) of `batch`, arrived at `now`, and counts what the
    /// decoder rejected.
    pub fn ingest(&mut self, batch: Batch, now: Instant) {
        if !batch.logs.is_empty() || batch.rejected_logs > 0 {
            self.logs.insert(batch.logs, batch.rejected_logs);
        }
        self.assembler.count_rejected(batch.rejected);
        self.assembler.insert(batch.spans, now);
    }

    /// `view` with the log records held of each of its spans, to show under them.
    pub fn with_logs<'a>(&'a self, view: TraceView<'a>) -> TraceView<'a> {
        let logs = self.logs.of_trace(view.trace_id());
        view.with_logs(logs)
    }
    /// The log records held of no span held (no trace or span id, or ids of no span of a trace
    /// held), of `service` (empty: any), by service and then time; the newest `limit` (0: no
    /// limit).
    pub fn unmatched_logs(&self, service: &str, limit: usize) -> LogList<'_> {
        self.logs.unmatched(&self.assembler, service, limit)
    }

    /// The traces that have completed by `now`, each with its findings.
    pub fn poll(&mut self, now: Instant) -> Vec<Completed> {
        let done = self.assembler.poll(now);
        self.diagnose(done, false)
    }

    /// Completes every open trace now (the end of a file), in arrival order.
    pub fn flush(&mut self) -> Vec<Completed> {
        let done = self.assembler.flush();
        self.diagnose(done, false)
    }

    /// [`Session::flush`] in order of the traces' earliest start (the order a report of finished
    /// traces reads best; stable for traces that start together), each diagnosed in that order.
    pub fn flush_by_start(&mut self) -> Vec<Completed> {
        let mut ids: Vec<(u64, TraceId)> = self
            .assembler
            .flush()
            .into_iter()
            .filter_map(|id| Some((bounds(&self.assembler.trace(&id)?.spans).0, id)))
            .collect();
        ids.sort_by_key(|(start, _)| *start);
        self.diagnose(ids.into_iter().map(|(_, id)| id).collect(), false)
    }

    /// At a stop: the traces whose quiet window has passed by `now`, then every other open
    /// one, marked [`Completed::cut_short`].
    pub fn stop(&mut self, now: Instant) -> Vec<Completed> {
        let mut done = self.poll(now);
        let open = self.assembler.flush();
        done.extend(self.diagnose(open, true));
        done
    }

    /// When the next trace can complete, if any is open (for a caller's timer).
    pub fn next_deadline(&self) -> Option<Instant> {
        self.assembler.next_deadline()
    }

    fn diagnose(&mut self, ids: Vec<TraceId>, cut_short: bool) -> Vec<Completed> {
        let mut out = Vec::with_capacity(ids.len());
        for trace_id in ids {
            let Some(trace) = self.assembler.trace(&trace_id) else {
                continue;
            };
            let mut findings = self.doctor.diagnose(trace, &self.assembler);
            let found = findings.len();
            findings.retain(|f| !self.allow.contains(&f.rule));
            self.allowed += (found - findings.len()) as u64;
            if self.quiet {
                findings.retain(|f| f.severity() != Severity::Info);
            }
            self.counts.add(&findings);
            for f in &findings {
                if self.findings.len() >= self.max_findings {
                    self.findings.pop_front();
                }
                self.findings.push_back(f.clone());
            }
            out.push(Completed {
                trace_id,
                findings,
                cut_short,
            });
        }
        out
    }

    /// Trace `id`, resolved for a renderer (links into the other traces held), marked partial
    /// when spans of it were dropped; `None` when it is not held.
    pub fn view(&self, id: &TraceId) -> Option<TraceView<'_>> {
        let trace = self.assembler.trace(id)?;
        let linked: HashSet<TraceId> = trace
            .spans
            .iter()
            .flat_map(|s| &s.links)
            .map(|l| l.trace_id)
            .filter(|t| t != id)
            .collect();
        let others = linked
            .into_iter()
            .filter_map(|t| self.assembler.trace(&t))
            .flat_map(|t| &t.spans);
        Some(
            TraceView::new(*id, &trace.spans, others, self.hop_names)
                .with_lost_spans(trace.lost_spans),
        )
    }

    /// The view of a trace just completed (cut short when it was).
    pub fn view_of(&self, completed: &Completed) -> Option<TraceView<'_>> {
        Some(
            self.view(&completed.trace_id)?
                .with_cut_short(completed.cut_short),
        )
    }
    /// The latest findings (up to [`SessionConfig::max_findings`]), oldest first.
    pub fn findings(&self) -> impl DoubleEndedIterator<Item = &Finding> {
        self.findings.iter()
    }

    /// The service map of the traces held, with the findings held (newest first) drawn on
    /// their hops, within `bounds`: one pass over the spans held.
    pub fn service_map(&self, bounds: MapBounds) -> ServiceMap {
        ServiceMap::build(
            self.assembler.traces().map(|(_, t)| t.spans.as_slice()),
            self.findings.iter().rev(),
            bounds,
        )
    }

    /// The statistics; `Display` is the status line.
    pub fn stats(&self) -> SessionStats {
        SessionStats {
            spans: self.assembler.stats(),
            findings: self.counts,
            allowed: self.allowed,
            logs: self.logs.stats,
        }
    }

    /// The assembler, to read traces directly.
    pub fn assembler(&self) -> &Assembler {
        &self.assembler
    }
}
