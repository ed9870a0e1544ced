//! One session: the flow every command drives. Spans in (decoded [`Batch`]es from a receiver, a
//! file, or an SDK), grouped into traces by the [`Assembler`]; each trace out as it completes,
//! with the doctor's findings on it ([`Completed`]); a [`TraceView`] of any trace held, with
//! everything a renderer needs resolved; the list a page shows ([`Session::list`]); and the
//! statistics, whose `Display` is the status line.
//!
//! ```
//! use std::time::Instant;
//! use lens_watch::{decode, render::Output, session::{Session, SessionConfig}};
//!
//! let line = br#"{"resourceSpans":[{"resource":{"attributes":[
//!     {"key":"service.name","value":{"stringValue":"gateway"}}]},
//!   "scopeSpans":[{"scope":{"name":"demo"},"spans":[
//!     {"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7",
//!      "name":"GET /","kind":2,"startTimeUnixNano":"1700000000000000000",
//!      "endTimeUnixNano":"1700000000001000000"}]}]}]}"#;
//! let mut session = Session::new(SessionConfig::default());
//! session.ingest(decode::decode_json(line)?, Instant::now());
//! let mut out = String::new();
//! for done in session.flush() {
//!     let view = session.view_of(&done).expect("held");
//!     Output::Text { colour: false }.trace(&view, &mut out);
//!     Output::Text { colour: false }.findings(&done.findings, &mut out);
//! }
//! assert!(out.contains("GET /") && out.contains("1 spans, complete"));
//! assert!(session.stats().to_string().starts_with("1 spans received, 1 traces (1 complete)"));
//! # Ok::<(), lens_watch::decode::DecodeError>(())
//! ```

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::time::Instant;

use crate::assemble::{Assembler, Config, Stats, TraceEntry};
use crate::decode::Batch;
use crate::diagnose::{Doctor, DoctorConfig, Finding, FindingCounts, Rule, Severity};
use crate::model::{Span, Status, TraceId};
use crate::render::{HopNames, TraceView, bounds};

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

/// The statistics of a session: the assembler's counts and the findings'. `Display` is the
/// status line: `13 spans received, 1 traces (1 complete), ...; 0 findings (...)`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionStats {
    /// What the assembler received, holds and dropped.
    pub spans: Stats,
    /// The findings returned, by severity.
    pub findings: FindingCounts,
    /// The findings left out by [`SessionConfig::allow`].
    pub allowed: u64,
}

impl fmt::Display for SessionStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}; {}", self.spans, self.findings)?;
        if self.allowed > 0 {
            write!(f, " ({} allowed by --allow, left out)", self.allowed)?;
        }
        Ok(())
    }
}

/// How [`Session::list`] orders the traces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ListOrder {
    /// The latest start first.
    #[default]
    Newest,
    /// The longest first.
    Duration,
}

/// Which traces [`Session::list`] gives (and [`ListFilter::matches`] says of one trace): every
/// condition set must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListFilter {
    /// Only this trace (`None`: any).
    pub trace_id: Option<TraceId>,
    /// Only traces with a span of this service (empty: any).
    pub service: String,
    /// Only traces with a span whose name contains this, in any case (empty: any).
    pub name: String,
    /// Only traces with a span whose status is an error.
    pub errors: bool,
    /// The order.
    pub order: ListOrder,
    /// The most traces given (0: no limit).
    pub limit: usize,
}

impl ListFilter {
    /// Whether `trace` is one of the traces this filter lets through (its order and limit
    /// aside); a trace with no span held is not.
    pub fn matches(&self, trace: &TraceEntry) -> bool {
        let name = self.name.to_lowercase();
        !trace.spans.is_empty()
            && self.trace_id.is_none_or(|id| id == trace.trace_id)
            && (self.service.is_empty() || trace.spans.iter().any(|s| s.service() == self.service))
            && (name.is_empty()
                || trace
                    .spans
                    .iter()
                    .any(|s| s.name.to_lowercase().contains(&name)))
            && (!self.errors
                || trace
                    .spans
                    .iter()
                    .any(|s| matches!(s.status, Status::Error(_))))
    }
}

/// One trace in a [`TraceList`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Listed {
    /// The trace.
    pub trace_id: TraceId,
    /// Its root span's name and service.
    pub name: String,
    /// The root's service.
    pub service: String,
    /// Its services in order of first appearance in the tree.
    pub services: Vec<String>,
    /// Spans held.
    pub spans: usize,
    /// Spans with an error status.
    pub errors: usize,
    /// The earliest start, in Unix nanoseconds.
    pub start_unix_nano: u64,
    /// From the earliest start to the latest end.
    pub duration_ns: u64,
    /// Whether it is complete (quiet for the window).
    pub complete: bool,
    /// Spans dropped by a bound (partial when non-zero).
    pub lost_spans: u64,
    /// Changes whenever the trace does (spans or completions): a page redraws on a change.
    pub version: u64,
}

/// The traces a page lists.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TraceList {
    /// The traces that match, in order, up to the limit.
    pub traces: Vec<Listed>,
    /// How many match in all.
    pub matching: usize,
    /// Every service of every trace held, sorted.
    pub services: Vec<String>,
}

/// The flow of spans to traces to findings: see the module docs.
#[derive(Debug)]
pub struct Session {
    assembler: Assembler,
    doctor: Doctor,
    quiet: bool,
    allow: Vec<Rule>,
    hop_names: HopNames<'static>,
    max_findings: usize,
    findings: VecDeque<Finding>,
    counts: FindingCounts,
    allowed: u64,
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
        }
    }

    /// Takes the spans of `batch`, arrived at `now`, and counts what the decoder rejected.
    pub fn ingest(&mut self, batch: Batch, now: Instant) {
        self.assembler.count_rejected(batch.rejected);
        self.assembler.insert(batch.spans, now);
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

    /// The traces held that match `filter`, in its order.
    pub fn list(&self, filter: &ListFilter) -> TraceList {
        let mut services: Vec<&str> = Vec::new();
        let mut rows: Vec<(u64, u64, TraceId)> = Vec::new();
        for (id, entry) in self.assembler.traces() {
            for span in &entry.spans {
                if !services.contains(&span.service()) {
                    services.push(span.service());
                }
            }
            if filter.matches(entry) {
                let (start, end) = bounds(&entry.spans);
                rows.push((start, end - start, *id));
            }
        }
        match filter.order {
            ListOrder::Duration => rows.sort_by_key(|r| std::cmp::Reverse(r.1)),
            ListOrder::Newest => rows.sort_by_key(|r| std::cmp::Reverse(r.0)),
        }
        let matching = rows.len();
        if filter.limit > 0 {
            rows.truncate(filter.limit);
        }
        let mut services: Vec<String> = services.into_iter().map(str::to_owned).collect();
        services.sort();
        TraceList {
            traces: rows
                .into_iter()
                .filter_map(|(_, _, id)| self.listed(&id))
                .collect(),
            matching,
            services,
        }
    }

    fn listed(&self, id: &TraceId) -> Option<Listed> {
        let entry = self.assembler.trace(id)?;
        let view = self.view(id)?;
        let root: &Span = view.root()?;
        Some(Listed {
            trace_id: *id,
            name: root.name.clone(),
            service: root.service().to_owned(),
            services: view.services().into_iter().map(str::to_owned).collect(),
            spans: entry.spans.len(),
            errors: entry
                .spans
                .iter()
                .filter(|s| matches!(s.status, Status::Error(_)))
                .count(),
            start_unix_nano: view.start(),
            duration_ns: view.end() - view.start(),
            complete: entry.complete,
            lost_spans: entry.lost_spans,
            version: entry.spans.len() as u64 * 1000 + u64::from(entry.completions),
        })
    }

    /// The latest findings (up to [`SessionConfig::max_findings`]), oldest first.
    pub fn findings(&self) -> impl DoubleEndedIterator<Item = &Finding> {
        self.findings.iter()
    }

    /// The statistics; `Display` is the status line.
    pub fn stats(&self) -> SessionStats {
        SessionStats {
            spans: self.assembler.stats(),
            findings: self.counts,
            allowed: self.allowed,
        }
    }

    /// The assembler, to read traces directly.
    pub fn assembler(&self) -> &Assembler {
        &self.assembler
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use super::*;
    use crate::testing::sample;

    fn batch(spans: Vec<Span>) -> Batch {
        Batch::new(spans)
    }

    #[test]
    fn a_trace_completes_with_its_findings_counted_once_and_listed() {
        let mut session = Session::new(SessionConfig::default());
        let t0 = Instant::now();
        session.ingest(batch(sample()), t0);
        assert!(session.poll(t0).is_empty());
        let done = session.poll(t0 + Duration::from_secs(3));
        assert_eq!(done.len(), 1);
        assert!(!done[0].cut_short);
        let view = session.view_of(&done[0]).unwrap();
        assert_eq!(view.services(), ["client", "gateway"]);
        assert_eq!(view.root().unwrap().name, "request");
        let list = session.list(&ListFilter::default());
        assert_eq!((list.matching, list.traces[0].spans), (1, 5));
        assert_eq!(list.services, ["client", "gateway"]);
        let filtered = session.list(&ListFilter {
            service: "nobody".into(),
            ..ListFilter::default()
        });
        assert_eq!(filtered.matching, 0);
        assert!(
            session
                .stats()
                .to_string()
                .starts_with("5 spans received, 1 traces (1 complete)")
        );
    }

    #[test]
    fn a_filter_lets_through_the_traces_that_meet_every_condition_set() {
        use crate::testing::span;
        let mut session = Session::new(SessionConfig::default());
        let mut failed = span(7, 1, None);
        failed.status = Status::Error(String::new());
        session.ingest(batch(sample()), Instant::now());
        session.ingest(batch(vec![failed, span(7, 2, Some(1))]), Instant::now());
        let sample_id = sample()[0].trace_id;
        let ids = |filter: ListFilter| -> Vec<TraceId> {
            let mut ids: Vec<TraceId> = session
                .assembler()
                .traces()
                .filter(|(_, t)| filter.matches(t))
                .map(|(id, _)| *id)
                .collect();
            ids.sort();
            let listed = session.list(&filter);
            let mut from_list: Vec<TraceId> = listed.traces.iter().map(|t| t.trace_id).collect();
            from_list.sort();
            assert_eq!(ids, from_list, "list and matches agree");
            ids
        };
        let errors = ListFilter {
            errors: true,
            ..ListFilter::default()
        };
        assert_eq!(ids(errors.clone()), [TraceId([7; 16])]);
        assert_eq!(ids(ListFilter::default()).len(), 2);
        let gateway = ListFilter {
            service: "gateway".into(),
            ..ListFilter::default()
        };
        assert_eq!(ids(gateway.clone()), [sample_id]);
        // Conditions combine with AND.
        assert!(
            ids(ListFilter {
                errors: true,
                ..gateway
            })
            .is_empty()
        );
        let one = ListFilter {
            trace_id: Some(sample_id),
            ..ListFilter::default()
        };
        assert_eq!(ids(one.clone()), [sample_id]);
        assert!(
            ids(ListFilter {
                errors: true,
                ..one
            })
            .is_empty()
        );
        assert_eq!(
            ids(ListFilter {
                name: "STAGE".into(),
                ..ListFilter::default()
            }),
            [sample_id]
        );
    }

    #[test]
    fn a_stop_cuts_short_what_is_still_open() {
        let mut session = Session::new(SessionConfig::default());
        let t0 = Instant::now();
        session.ingest(batch(sample()), t0);
        let done = session.stop(t0);
        assert_eq!(done.len(), 1);
        assert!(done[0].cut_short);
        let mut out = String::new();
        crate::render::Output::Text { colour: false }
            .trace(&session.view_of(&done[0]).unwrap(), &mut out);
        assert!(out.contains("; cut short by the stop"), "{out}");
    }
}
