//! One session: the flow every command drives. Spans in (decoded [`Batch`]es from a receiver, a
//! file, or an SDK), grouped into traces by the [`Assembler`]; each trace out as it completes,
//! with the doctor's findings on it ([`Completed`]); a [`TraceView`] of any trace held, with
//! everything a renderer needs resolved; the list a page shows ([`Session::list`]); and the
//! statistics, whose `Display` is the status line.
//!
//! Log records ([`Batch::logs`]) are held beside the traces, the newest
//! [`SessionConfig::max_logs`] (the oldest dropped first, and counted): a view made with
//! [`Session::with_logs`] shows each span's records under it (matched by trace and span id),
//! and [`Session::unmatched_logs`] lists those of no span held.
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

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::time::Instant;

use crate::assemble::{Assembler, Config, Stats, TraceEntry};
use crate::decode::Batch;
use crate::diagnose::{Doctor, DoctorConfig, Finding, FindingCounts, Rule, Severity};
use crate::model::{LogRecord, Span, SpanId, Status, TraceId};
use crate::render::map::{MapBounds, ServiceMap};
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
    /// The log records received, held and dropped.
    pub logs: LogStats,
}

impl fmt::Display for SessionStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}; {}", self.spans, self.findings)?;
        if self.allowed > 0 {
            write!(f, " ({} allowed by --allow, left out)", self.allowed)?;
        }
        if self.logs.received > 0 || self.logs.rejected > 0 {
            write!(f, "; {}", self.logs)?;
        }
        Ok(())
    }
}

/// What became of the log records a session received. `Display`: `3 logs received (1 held, 2
/// dropped, the oldest first)`, with the rejected ones when there are any.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogStats {
    /// Records received and kept by the decoder.
    pub received: u64,
    /// Records the decoder rejected (invalid ids).
    pub rejected: u64,
    /// Records held now.
    pub held: u64,
    /// Records dropped to stay within [`SessionConfig::max_logs`] (the oldest first).
    pub dropped: u64,
}

impl fmt::Display for LogStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} logs received ({} held", self.received, self.held)?;
        if self.dropped > 0 {
            write!(f, ", {} dropped, the oldest first", self.dropped)?;
        }
        f.write_str(")")?;
        if self.rejected > 0 {
            write!(f, ", {} rejected", self.rejected)?;
        }
        Ok(())
    }
}

/// The log records held: the newest `max`, in arrival order, with the positions of each
/// trace's records (by sequence number: the oldest of a trace is the first to go).
#[derive(Debug, Default)]
struct Logs {
    max: usize,
    records: VecDeque<LogRecord>,
    /// The sequence number of `records[0]`.
    first: u64,
    by_trace: HashMap<TraceId, VecDeque<u64>>,
    stats: LogStats,
}

impl Logs {
    fn insert(&mut self, logs: Vec<LogRecord>, rejected: u64) {
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
    fn of_trace(&self, id: TraceId) -> impl Iterator<Item = &LogRecord> {
        self.by_trace.get(&id).into_iter().flat_map(move |seqs| {
            seqs.iter().filter_map(move |seq| {
                let at = usize::try_from(seq.checked_sub(self.first)?).ok()?;
                self.records.get(at)
            })
        })
    }
}

/// The log records of no span held ([`Session::unmatched_logs`]).
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
/// condition set must hold. [`ListFilter::matches_span`] says which spans of a trace meet the
/// conditions on spans (a page highlights them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListFilter {
    /// Only this trace (`None`: any).
    pub trace_id: Option<TraceId>,
    /// Only traces with a span of this service (empty: any).
    pub service: String,
    /// Only traces with a span whose name contains this, in any case (empty: any).
    pub name: String,
    /// Only traces with a span that has this attribute (its own, or its resource's):
    /// `key=value` (the value as displayed, exactly) or `key` alone (present, any value);
    /// empty: any.
    pub attribute: String,
    /// Only traces with a span whose status is an error.
    pub errors: bool,
    /// Only traces lasting at least this, from the earliest start to the latest end (a span:
    /// its own duration); 0: any.
    pub min_duration_ns: u64,
    /// The order.
    pub order: ListOrder,
    /// The most traces given (0: no limit).
    pub limit: usize,
}

/// A [`ListFilter`]'s span conditions, made ready once for many spans.
struct SpanTest<'a> {
    filter: &'a ListFilter,
    name: String,
    attribute: Option<(&'a str, Option<&'a str>)>,
}

impl<'a> SpanTest<'a> {
    fn new(filter: &'a ListFilter) -> Self {
        let attribute = filter.attribute.trim();
        SpanTest {
            filter,
            name: filter.name.to_lowercase(),
            attribute: (!attribute.is_empty()).then(|| match attribute.split_once('=') {
                Some((key, value)) => (key.trim(), Some(value)),
                None => (attribute, None),
            }),
        }
    }

    fn service(&self, span: &Span) -> bool {
        self.filter.service.is_empty() || span.service() == self.filter.service
    }

    fn name(&self, span: &Span) -> bool {
        self.name.is_empty() || span.name.to_lowercase().contains(&self.name)
    }

    fn attribute(&self, span: &Span) -> bool {
        let Some((key, value)) = self.attribute else {
            return true;
        };
        span.attributes
            .iter()
            .chain(&span.resource.attributes)
            .any(|kv| &*kv.key == key && value.is_none_or(|v| kv.value.to_string() == v))
    }

    fn error(&self, span: &Span) -> bool {
        !self.filter.errors || matches!(span.status, Status::Error(_))
    }
}

impl ListFilter {
    /// Whether `trace` is one of the traces this filter lets through (its order and limit
    /// aside); a trace with no span held is not. Each condition on spans may be met by a
    /// different span.
    pub fn matches(&self, trace: &TraceEntry) -> bool {
        let test = SpanTest::new(self);
        let any = |meets: &dyn Fn(&Span) -> bool| trace.spans.iter().any(meets);
        !trace.spans.is_empty()
            && self.trace_id.is_none_or(|id| id == trace.trace_id)
            && any(&|s| test.service(s))
            && any(&|s| test.name(s))
            && any(&|s| test.attribute(s))
            && any(&|s| test.error(s))
            && (self.min_duration_ns == 0 || {
                let (start, end) = bounds(&trace.spans);
                end.saturating_sub(start) >= self.min_duration_ns
            })
    }

    /// Whether `span` meets every condition on spans that is set: service, name, attribute,
    /// errors, and a duration of its own at least [`ListFilter::min_duration_ns`] (the trace
    /// id, order and limit aside). With none set, every span does.
    pub fn matches_span(&self, span: &Span) -> bool {
        let test = SpanTest::new(self);
        test.service(span)
            && test.name(span)
            && test.attribute(span)
            && test.error(span)
            && span.end_unix_nano.saturating_sub(span.start_unix_nano) >= self.min_duration_ns
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
    /// The highest severity among the findings held ([`Session::findings`]) that concern it
    /// (either trace of a lost hop); `None` when none does.
    pub findings: Option<Severity>,
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
            logs: Logs {
                max: config.max_logs,
                ..Logs::default()
            },
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
        let mut spans: HashMap<TraceId, HashSet<SpanId>> = HashMap::new();
        let mut services: Vec<&str> = Vec::new();
        let mut logs: Vec<&LogRecord> = Vec::new();
        for log in &self.logs.records {
            let held = log.span().is_some_and(|(trace, span)| {
                spans
                    .entry(trace)
                    .or_insert_with(|| {
                        self.assembler
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
        let mut worst: HashMap<TraceId, Severity> = HashMap::new();
        for finding in &self.findings {
            for id in &finding.trace_ids {
                let severity = worst.entry(*id).or_insert(finding.severity());
                // Error sorts first.
                *severity = (*severity).min(finding.severity());
            }
        }
        TraceList {
            traces: rows
                .into_iter()
                .filter_map(|(_, _, id)| {
                    let mut listed = self.listed(&id)?;
                    listed.findings = worst.get(&id).copied();
                    Some(listed)
                })
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
            findings: None,
        })
    }

    /// The spans of trace `id` that meet `filter`'s conditions on spans
    /// ([`ListFilter::matches_span`]), in the order held; `None` when the trace is not held.
    pub fn matching_spans(&self, id: &TraceId, filter: &ListFilter) -> Option<Vec<SpanId>> {
        let trace = self.assembler.trace(id)?;
        Some(
            trace
                .spans
                .iter()
                .filter(|s| filter.matches_span(s))
                .map(|s| s.span_id)
                .collect(),
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
    fn logs_show_under_their_spans_and_the_others_are_listed_by_service() {
        use crate::render::Output;
        use crate::testing::log;
        let mut session = Session::new(SessionConfig::default());
        let t0 = Instant::now();
        // Logs may arrive before their spans.
        let mut other = log(Some(4), "of no trace held");
        other.trace_id = Some(TraceId([9; 16]));
        let mut late = log(Some(3), "second");
        late.time_unix_nano = 9;
        session.ingest(
            Batch::of_logs(vec![
                late,
                log(Some(3), "first"),
                log(None, "no span"),
                other,
            ]),
            t0,
        );
        session.ingest(batch(sample()), t0);
        let done = session.flush();
        let view = session.with_logs(session.view_of(&done[0]).unwrap());
        let bodies: Vec<String> = view
            .logs(SpanId(3u64.to_be_bytes()))
            .iter()
            .map(|l| l.body.to_string())
            .collect();
        assert_eq!(bodies, ["first", "second"]);
        assert!(view.logs(SpanId(4u64.to_be_bytes())).is_empty());
        let mut text = String::new();
        Output::Text { colour: false }.trace(&view, &mut text);
        let lines: Vec<&str> = text.lines().collect();
        let server = lines.iter().position(|l| l.contains("POST /v1")).unwrap();
        assert!(lines[server + 1].ends_with("INFO first"), "{text}");
        assert!(lines[server + 2].ends_with("INFO second"), "{text}");
        // Without the logs, the waterfall is as before.
        let mut plain = String::new();
        Output::Text { colour: false }.trace(&session.view_of(&done[0]).unwrap(), &mut plain);
        assert!(!plain.contains("first"));
        let mut json = String::new();
        Output::Json.trace(&view, &mut json);
        let json: serde_json::Value = serde_json::from_str(&json).unwrap();
        let server = json["spans"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == "POST /v1")
            .unwrap();
        assert_eq!(server["logs"][1]["body"], "second");
        assert_eq!(server["logs"][0]["severity"], "INFO");
        let unmatched = session.unmatched_logs("", 0);
        let bodies: Vec<String> = unmatched.logs.iter().map(|l| l.body.to_string()).collect();
        assert_eq!(bodies, ["no span", "of no trace held"]);
        assert_eq!(
            (unmatched.matching, unmatched.services.as_slice()),
            (2, &["gateway".to_owned()][..])
        );
        assert_eq!(session.unmatched_logs("nobody", 0).matching, 0);
        assert_eq!(session.unmatched_logs("gateway", 1).logs.len(), 1);
        assert!(
            session
                .stats()
                .to_string()
                .ends_with("; 4 logs received (4 held)"),
            "{}",
            session.stats()
        );
    }

    #[test]
    fn logs_are_bounded_the_oldest_dropped_first_and_counted() {
        use crate::testing::log;
        let mut session = Session::new(SessionConfig {
            max_logs: 2,
            ..SessionConfig::default()
        });
        let now = Instant::now();
        for body in ["a", "b", "c"] {
            session.ingest(Batch::of_logs(vec![log(Some(3), body)]), now);
        }
        session.ingest(batch(sample()), now);
        let done = session.flush();
        let view = session.with_logs(session.view_of(&done[0]).unwrap());
        let bodies: Vec<String> = view
            .logs(SpanId(3u64.to_be_bytes()))
            .iter()
            .map(|l| l.body.to_string())
            .collect();
        assert_eq!(bodies, ["b", "c"]);
        let stats = session.stats().logs;
        assert_eq!((stats.received, stats.held, stats.dropped), (3, 2, 1));
        assert!(
            session
                .stats()
                .to_string()
                .ends_with("; 3 logs received (2 held, 1 dropped, the oldest first)")
        );
        let mut none = Session::new(SessionConfig {
            max_logs: 0,
            ..SessionConfig::default()
        });
        let mut rejected = Batch::of_logs(vec![log(None, "x")]);
        rejected.rejected_logs = 2;
        none.ingest(rejected, now);
        let stats = none.stats().logs;
        assert_eq!(
            (stats.received, stats.held, stats.dropped, stats.rejected),
            (1, 0, 1, 2)
        );
        assert_eq!(none.stats().spans.spans_rejected, 0);
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
    fn attribute_and_duration_conditions_each_with_a_near_miss() {
        let mut session = Session::new(SessionConfig::default());
        session.ingest(batch(sample()), Instant::now());
        let sample_id = sample()[0].trace_id;
        let count = |attribute: &str, min_duration_ns: u64| {
            session
                .list(&ListFilter {
                    attribute: attribute.into(),
                    min_duration_ns,
                    ..ListFilter::default()
                })
                .matching
        };
        assert_eq!(count("http.request.method=POST", 0), 1);
        assert_eq!(
            count(" http.request.method = POST", 0),
            0,
            "the value is exact"
        );
        assert_eq!(count("http.request.method=GET", 0), 0);
        assert_eq!(count("http.request.method", 0), 1, "present");
        assert_eq!(count("http.request.metho", 0), 0);
        assert_eq!(count("service.name=gateway", 0), 1, "a resource attribute");
        assert_eq!(count("service.name=gate", 0), 0);
        // The sample lasts 1 ms from its earliest start to its latest end.
        assert_eq!(count("", 1_000_000), 1);
        assert_eq!(count("", 1_000_001), 0);
        assert_eq!(count("http.request.method", 1_000_001), 0, "AND");

        let spans = |filter: ListFilter| session.matching_spans(&sample_id, &filter).unwrap();
        let server = [SpanId(3u64.to_be_bytes())];
        assert_eq!(
            spans(ListFilter {
                attribute: "http.request.method=POST".into(),
                ..ListFilter::default()
            }),
            server
        );
        // root (1000 µs), client (800 µs) and server (600 µs) last 600 µs or more.
        let long = |ns: u64| {
            spans(ListFilter {
                min_duration_ns: ns,
                ..ListFilter::default()
            })
            .len()
        };
        assert_eq!((long(600_000), long(600_001)), (3, 2));
        assert_eq!(spans(ListFilter::default()).len(), 5);
        assert_eq!(
            spans(ListFilter {
                service: "gateway".into(),
                name: "stage".into(),
                ..ListFilter::default()
            })
            .len(),
            2
        );
        assert!(
            session
                .matching_spans(&TraceId([9; 16]), &ListFilter::default())
                .is_none()
        );
    }

    #[test]
    fn a_listed_trace_carries_its_worst_finding() {
        use crate::testing::span;
        let mut session = Session::new(SessionConfig::default());
        // A span that names itself as its parent: a warning.
        session.ingest(batch(vec![span(9, 1, Some(1))]), Instant::now());
        session.ingest(batch(sample()), Instant::now());
        let done = session.flush();
        assert_eq!(done.len(), 2);
        let list = session.list(&ListFilter::default());
        let worst = |id: TraceId| {
            list.traces
                .iter()
                .find(|t| t.trace_id == id)
                .unwrap()
                .findings
        };
        assert_eq!(worst(TraceId([9; 16])), Some(Severity::Warning));
        assert_eq!(worst(sample()[0].trace_id), None);
    }

    #[test]
    fn the_service_map_is_of_the_traces_held() {
        let mut session = Session::new(SessionConfig::default());
        assert!(session.service_map(MapBounds::default()).nodes.is_empty());
        session.ingest(batch(sample()), Instant::now());
        let map = session.service_map(MapBounds::default());
        assert_eq!(map.traces, 1);
        let edges: Vec<(&str, &str, u64, u64)> = map
            .edges
            .iter()
            .map(|e| (e.from.as_str(), e.to.as_str(), e.requests, e.median_ns))
            .collect();
        assert_eq!(edges, [("client", "gateway", 1, 600_000)]);
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
