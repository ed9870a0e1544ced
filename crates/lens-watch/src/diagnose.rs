//! The propagation doctor: findings on completed traces, saying where context was lost, why,
//! and what to fix (docs/doctor.md, a section per rule).
//!
//! A [`Doctor`] looks at each trace as the [`Assembler`] completes it. Rules about one trace
//! (a missing parent, clock skew between a client and its server, a dropped random flag, a span
//! that is its own parent, a duplicate span id, a link to a span never received) read that trace
//! alone. The lost hop reads two: a CLIENT span that got no child, and a SERVER span that began
//! a trace of its own, in another service, within the client span, for the same request. Both
//! wait in an index keyed by the request (method and path, or the gRPC method) and ordered by
//! start time, so each completion looks at the few candidates for its own requests, never at
//! every open trace; the index is bounded by count and by age.
//!
//! Where a rule cannot decide (an exporter that does not report trace flags, a hop without the
//! attributes to match it), it says nothing.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

use crate::assemble::Assembler;
use crate::model::{Span, SpanId, SpanKind, TraceId, Value};

/// Where each rule is explained; a finding's [`Finding::doc`] is this plus the rule id.
pub const DOC_BASE: &str = "docs/doctor.md#";

/// The attribute a lens server (lens-axum, lens-tonic) sets on a SERVER span that starts a new
/// trace, saying why: see [`NewRootCause`].
pub const NEW_ROOT_ATTRIBUTE: &str = "lens.trace.new_root";

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Context was lost: `lens check` exits 1.
    Error,
    /// Something is likely wrong.
    Warning,
    /// Worth knowing, expected by design (silenced by `--quiet`).
    Info,
}

impl Severity {
    /// `error`, `warning` or `info`.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// The doctor's rules; [`Rule::id`] is the fixed id users see and silence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rule {
    /// A CLIENT span without a child, and a new root SERVER span for the same request within it.
    LostContext,
    /// A server that started a new trace linked to the client's context (its trust policy).
    UntrustedLinked,
    /// A span whose parent never arrived.
    MissingParent,
    /// A child that starts before (or a server that ends after) its parent in another service.
    ClockSkew,
    /// The W3C random flag set on a parent and not on its child in another service.
    FlagDropped,
    /// A span that names itself as its parent.
    SelfParent,
    /// Two spans of one trace with the same span id.
    DuplicateSpanId,
    /// A link to a span in a trace that was received without it.
    DanglingLink,
}

impl Rule {
    /// Every rule, in the order docs/doctor.md explains them.
    pub const ALL: [Rule; 8] = [
        Rule::LostContext,
        Rule::UntrustedLinked,
        Rule::MissingParent,
        Rule::ClockSkew,
        Rule::FlagDropped,
        Rule::SelfParent,
        Rule::DuplicateSpanId,
        Rule::DanglingLink,
    ];

    /// The rule's id: `lost-context`, `untrusted-linked`, ...
    pub fn id(self) -> &'static str {
        match self {
            Rule::LostContext => "lost-context",
            Rule::UntrustedLinked => "untrusted-linked",
            Rule::MissingParent => "missing-parent",
            Rule::ClockSkew => "clock-skew",
            Rule::FlagDropped => "flag-dropped",
            Rule::SelfParent => "self-parent",
            Rule::DuplicateSpanId => "duplicate-span-id",
            Rule::DanglingLink => "dangling-link",
        }
    }

    /// The rule's severity.
    pub fn severity(self) -> Severity {
        match self {
            Rule::LostContext => Severity::Error,
            Rule::UntrustedLinked => Severity::Info,
            _ => Severity::Warning,
        }
    }
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The rule that found it.
    pub rule: Rule,
    /// The traces concerned (two for a lost hop: the client's, then the server's).
    pub trace_ids: Vec<TraceId>,
    /// The spans concerned.
    pub span_ids: Vec<SpanId>,
    /// The services concerned.
    pub services: Vec<String>,
    /// One line a person can act on.
    pub message: String,
}

impl Finding {
    /// The rule's severity.
    pub fn severity(&self) -> Severity {
        self.rule.severity()
    }

    /// The rule's section of docs/doctor.md.
    pub fn doc(&self) -> String {
        format!("{DOC_BASE}{}", self.rule.id())
    }

    /// The finding as one JSON object (no newline): `{"finding": "<rule id>", "severity": ...,
    /// "trace_ids": [...], "span_ids": [...], "services": [...], "message": ..., "doc": ...}`.
    pub fn to_json(&self) -> String {
        serde_json::json!({
            "finding": self.rule.id(),
            "severity": self.severity().name(),
            "trace_ids": self.trace_ids.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "span_ids": self.span_ids.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "services": self.services,
            "message": self.message,
            "doc": self.doc(),
        })
        .to_string()
    }
}

impl fmt::Display for Finding {
    /// `error[lost-context] message (docs/doctor.md#lost-context)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}[{}] {} ({})",
            self.severity().name(),
            self.rule.id(),
            self.message,
            self.doc()
        )
    }
}

/// Why a lens server started a new trace, from [`NEW_ROOT_ATTRIBUTE`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NewRootCause {
    /// No traceparent received (`none`).
    NoTraceparent,
    /// A traceparent rejected by the rule at this anchor of docs/propagation-rules.md
    /// (`rejected:<anchor>`).
    Rejected(String),
    /// A valid traceparent the policy did not trust and ignored (`untrusted:ignored`).
    UntrustedIgnored,
    /// A valid traceparent the policy did not trust, linked to (`untrusted:linked`).
    UntrustedLinked,
}

impl NewRootCause {
    /// The attribute's value.
    pub fn value(&self) -> String {
        match self {
            NewRootCause::NoTraceparent => "none".to_owned(),
            NewRootCause::Rejected(anchor) => format!("rejected:{anchor}"),
            NewRootCause::UntrustedIgnored => "untrusted:ignored".to_owned(),
            NewRootCause::UntrustedLinked => "untrusted:linked".to_owned(),
        }
    }

    /// From the attribute's value; `None` for a value this version does not know.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "none" => Some(NewRootCause::NoTraceparent),
            "untrusted:ignored" => Some(NewRootCause::UntrustedIgnored),
            "untrusted:linked" => Some(NewRootCause::UntrustedLinked),
            _ => value
                .strip_prefix("rejected:")
                .map(|a| NewRootCause::Rejected(a.to_owned())),
        }
    }

    fn of(span: &Span) -> Option<Self> {
        span.attribute(NEW_ROOT_ATTRIBUTE)
            .and_then(Value::as_str)
            .and_then(Self::parse)
    }
}

/// The doctor's tolerances and bounds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DoctorConfig {
    /// Clock skew allowed between services before `clock-skew` reports a child that starts
    /// before its parent (for a SERVER child, that also ends before its CLIENT parent), and
    /// around a client span when matching a lost hop (default 1 ms).
    pub start_tolerance_nanos: u64,
    /// How far a SERVER span must start and end after its CLIENT's before `clock-skew` reports
    /// the server's clock ahead, and how long it may end after its client's when matching a
    /// lost hop (default 10 ms: an ASGI server span ends after the response is sent, measured
    /// 0.43 ms after its client on one host). A server span that started after its client and
    /// ends after it, by any amount, is no skew: no clock offset explains both.
    pub end_margin_nanos: u64,
    /// The most candidates (childless clients, new roots) held for the lost-hop rule
    /// (default 100,000); the oldest go first.
    pub max_candidates: usize,
    /// How long (in span time) a candidate waits for its other side (default 60 s).
    pub candidate_horizon_nanos: u64,
}

impl Default for DoctorConfig {
    fn default() -> Self {
        DoctorConfig {
            start_tolerance_nanos: 1_000_000,
            end_margin_nanos: 10_000_000,
            max_candidates: 100_000,
            candidate_horizon_nanos: 60_000_000_000,
        }
    }
}

/// What identifies a request on both sides of the wire.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum HopKey {
    /// HTTP method (upper case) and path.
    Http(String, String),
    /// The fully-qualified gRPC method, `pkg.Service/Method`.
    Rpc(String),
}

/// One side of a hop waiting in the index.
#[derive(Clone, Debug)]
struct Candidate {
    trace_id: TraceId,
    span_id: SpanId,
    service: Arc<str>,
    start: u64,
    end: u64,
    address: Address,
    cause: Option<NewRootCause>,
}

/// A host as one side of a hop names it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Host {
    /// An IP address (IPv4-mapped IPv6 as IPv4).
    Ip(IpAddr),
    /// A name, in lower case, without a trailing dot.
    Name(Box<str>),
}

impl Host {
    /// From an attribute's host (brackets around IPv6 allowed); `None` for an empty one or an
    /// unspecified address (`0.0.0.0`, `::`: a server bound to every interface says nothing).
    fn parse(host: &str) -> Option<Self> {
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        match host.parse::<IpAddr>() {
            Ok(ip) if ip.is_unspecified() => None,
            Ok(ip) => Some(Host::Ip(ip.to_canonical())),
            Err(_) => {
                let name = host.trim_end_matches('.');
                (!name.is_empty()).then(|| Host::Name(name.to_ascii_lowercase().into()))
            }
        }
    }

    fn loopback(&self) -> bool {
        match self {
            Host::Ip(ip) => ip.is_loopback(),
            Host::Name(name) => &**name == "localhost",
        }
    }

    /// The same host: equal, or both loopback (`localhost`, `127.0.0.1`, `::1`).
    fn same(&self, other: &Host) -> bool {
        self == other || (self.loopback() && other.loopback())
    }

    /// Whether a different `other` says this is another host: both IP addresses or both names
    /// (a name and an address cannot be compared without resolving the name).
    fn comparable(&self, other: &Host) -> bool {
        matches!(self, Host::Ip(_)) == matches!(other, Host::Ip(_))
    }
}

/// The addresses one side of a hop reports: a client the one it called; a server every one it
/// names (the Host header, the socket it listens on, its configured name), each host marked
/// whether it is the address the client used.
#[derive(Clone, Debug, Default)]
struct Address {
    /// (host, the address the client used).
    hosts: Vec<(Host, bool)>,
    ports: Vec<u16>,
}

impl Address {
    fn host(&mut self, host: &str, client_s: bool) {
        if let Some(host) = Host::parse(host)
            && !self.hosts.iter().any(|(h, t)| *h == host && *t == client_s)
        {
            self.hosts.push((host, client_s));
        }
    }

    fn port(&mut self, port: Option<u16>) {
        if let Some(port) = port.filter(|p| *p != 0)
            && !self.ports.contains(&port)
        {
            self.ports.push(port);
        }
    }

    /// A `host[:port]` value (`server.address`, `http.host`, `http.server_name`).
    fn authority(&mut self, value: &str, client_s: bool) {
        let (host, port) = split_host_port(value);
        self.host(host, client_s);
        self.port(port);
    }

    /// Whether a server reporting `server` can be the one a client reporting `self` called:
    /// the client's port is one the server reports (when both report one); the client's host
    /// is one the server names, or the server names no host it could be told apart from (only
    /// a configured name, or a name where the client used an IP address, or the reverse).
    fn reached(&self, server: &Address) -> bool {
        if let Some(port) = self.ports.first()
            && !server.ports.is_empty()
            && !server.ports.contains(port)
        {
            return false;
        }
        let Some((host, _)) = self.hosts.first() else {
            return true;
        };
        server.hosts.iter().any(|(h, _)| h.same(host))
            || !server
                .hosts
                .iter()
                .any(|(h, client_s)| *client_s && h.comparable(host))
    }
}

/// Candidates of one side, by request, ordered by start time.
#[derive(Debug, Default)]
struct Side {
    by_key: HashMap<HopKey, BTreeMap<(u64, u64), Candidate>>,
    /// (key, start, seq) in insertion order, for the bounds; entries of candidates already
    /// matched are skipped, and dropped when they outnumber the live ones.
    order: VecDeque<(HopKey, u64, u64)>,
    /// Candidates held.
    live: usize,
    /// The longest span held per key (bounds the range a server's start is searched in).
    longest: HashMap<HopKey, u64>,
}

impl Side {
    fn insert(&mut self, key: HopKey, seq: u64, c: Candidate) {
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

    fn holds(&self, key: &HopKey, at: (u64, u64)) -> bool {
        self.by_key
            .get(key)
            .is_some_and(|map| map.contains_key(&at))
    }

    fn remove(&mut self, key: &HopKey, at: (u64, u64)) -> Option<Candidate> {
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
    fn remove_span(&mut self, key: &HopKey, start: u64, id: SpanId) {
        let at = self.by_key.get(key).and_then(|map| {
            map.range((start, 0)..=(start, u64::MAX))
                .find(|(_, c)| c.span_id == id)
                .map(|(at, _)| *at)
        });
        if let Some(at) = at {
            self.remove(key, at);
        }
    }

    fn prune(&mut self, max: usize, oldest_start: u64) {
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

    fn len(&self) -> usize {
        self.live
    }
}

/// A link from a new root SERVER span waiting for the trace of the span it links to.
#[derive(Clone, Debug)]
struct PendingLink {
    server_trace: TraceId,
    server_span: SpanId,
    server_service: Arc<str>,
    linked_trace: TraceId,
}

/// The spans of one trace by span id: sorted ids and binary search (no hashing of peer input,
/// no allocation per span; a trace is diagnosed once as it completes).
struct SpanIndex<'a> {
    spans: &'a [Span],
    /// (span id, position in `spans`), sorted.
    ids: Vec<(SpanId, usize)>,
}

impl<'a> SpanIndex<'a> {
    fn new(spans: &'a [Span]) -> Self {
        let mut ids: Vec<(SpanId, usize)> = spans
            .iter()
            .enumerate()
            .map(|(i, s)| (s.span_id, i))
            .collect();
        ids.sort_unstable();
        SpanIndex { spans, ids }
    }

    /// The span with id `id` (the last received, when the id repeats).
    fn get(&self, id: SpanId) -> Option<&'a Span> {
        let end = self.ids.partition_point(|(i, _)| *i <= id);
        let (found, at) = *self.ids.get(end.checked_sub(1)?)?;
        (found == id).then(|| &self.spans[at])
    }

    /// Every span whose id an earlier span of the trace already has, in the order received.
    fn duplicates(&self) -> Vec<&'a Span> {
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

/// The doctor: feed it each trace as it completes ([`Doctor::diagnose`]).
#[derive(Debug, Default)]
pub struct Doctor {
    config: DoctorConfig,
    clients: Side,
    roots: Side,
    pending_links: HashMap<SpanId, PendingLink>,
    pending_order: VecDeque<SpanId>,
    /// Spans already taken as one side of a hop (a reopened trace is diagnosed again: its hop
    /// is not matched twice), oldest first for the bound.
    seen: HashSet<(TraceId, SpanId)>,
    seen_order: VecDeque<(TraceId, SpanId)>,
    skewed_pairs: HashSet<(Arc<str>, Arc<str>)>,
    seq: u64,
    newest_end: u64,
}

/// The most service pairs remembered as already reported for clock skew.
const MAX_SKEW_PAIRS: usize = 10_000;

impl Doctor {
    /// A doctor with these tolerances.
    pub fn new(config: DoctorConfig) -> Self {
        Doctor {
            config,
            ..Doctor::default()
        }
    }

    /// Candidates waiting for their other side (childless clients, new roots), for the status.
    pub fn candidates(&self) -> usize {
        self.clients.len() + self.roots.len() + self.pending_links.len()
    }

    /// The findings on trace `id`, which `assembler` has just completed (other traces it holds
    /// are read for the lost hop and for links). A trace that completes again (late spans) is
    /// diagnosed again, whole, but a hop is matched (and reported) once.
    pub fn diagnose(&mut self, assembler: &Assembler, id: TraceId) -> Vec<Finding> {
        let mut findings = Vec::new();
        let Some(entry) = assembler.trace(&id) else {
            return findings;
        };
        let spans = &entry.spans;
        let by_id = SpanIndex::new(spans);
        let mut parents: Vec<SpanId> = spans.iter().filter_map(|s| s.parent_span_id).collect();
        parents.sort_unstable();
        for span in spans {
            self.newest_end = self.newest_end.max(span.end_unix_nano);
        }
        let duplicates = by_id.duplicates();
        for span in duplicates {
            findings.push(Finding {
                rule: Rule::DuplicateSpanId,
                trace_ids: vec![id],
                span_ids: vec![span.span_id],
                services: vec![span.service().to_owned()],
                message: format!(
                    "span id {} appears more than once in trace {id} (\"{}\" in {}): a span \
exported twice, or a span id generator that repeats",
                    span.span_id,
                    span.name,
                    span.service()
                ),
            });
        }
        // A partial trace (spans dropped by a bound) is missing pieces for reasons of its own:
        // no finding rests on what is absent from it (a missing parent, a childless client, a
        // link to a span of it).
        let partial = entry.is_partial();
        for span in spans {
            self.single_span(assembler, id, span, &by_id, partial, &mut findings);
        }
        let reopened = entry.completions > 1;
        for span in spans.iter().filter(|s| s.kind == SpanKind::Client) {
            if partial {
                continue;
            }
            if parents.binary_search(&span.span_id).is_err() {
                self.childless_client(span, &mut findings);
            } else if reopened {
                self.answered_client(span);
            }
        }
        self.prune();
        findings
    }

    fn single_span(
        &mut self,
        assembler: &Assembler,
        id: TraceId,
        span: &Span,
        by_id: &SpanIndex<'_>,
        partial: bool,
        findings: &mut Vec<Finding>,
    ) {
        match span.parent_span_id {
            Some(parent) if parent == span.span_id => findings.push(Finding {
                rule: Rule::SelfParent,
                trace_ids: vec![id],
                span_ids: vec![span.span_id],
                services: vec![span.service().to_owned()],
                message: format!(
                    "span {} (\"{}\" in {}) names itself as its parent: the instrumentation \
set the parent to the span's own context",
                    span.span_id,
                    span.name,
                    span.service()
                ),
            }),
            Some(parent) => match by_id.get(parent) {
                Some(p) => self.parent_and_child(id, p, span, findings),
                None if partial => {}
                None => findings.push(missing_parent(id, span, parent)),
            },
            None => {
                if span.kind == SpanKind::Server {
                    self.new_root(assembler, span, findings);
                }
            }
        }
        for link in &span.links {
            let found = if link.trace_id == id {
                (!partial).then(|| by_id.get(link.span_id).is_some())
            } else {
                assembler
                    .trace(&link.trace_id)
                    .filter(|t| t.complete && !t.is_partial())
                    .map(|t| t.spans.iter().any(|s| s.span_id == link.span_id))
            };
            if found == Some(false) {
                findings.push(Finding {
                    rule: Rule::DanglingLink,
                    trace_ids: vec![id, link.trace_id],
                    span_ids: vec![span.span_id, link.span_id],
                    services: vec![span.service().to_owned()],
                    message: format!(
                        "span {} (\"{}\" in {}) links to span {} of trace {}, which was received \
without it: the linked span was not sampled or not exported",
                        span.span_id,
                        span.name,
                        span.service(),
                        link.span_id,
                        link.trace_id
                    ),
                });
            }
        }
    }

    fn parent_and_child(
        &mut self,
        id: TraceId,
        parent: &Span,
        child: &Span,
        findings: &mut Vec<Finding>,
    ) {
        if parent.service() == child.service() {
            return;
        }
        // flag-dropped: both exporters report trace flags (the sampled bit of an exported span
        // is set) and the random flag (0x02) did not cross.
        let reports = |s: &Span| s.flags & 0x01 != 0;
        if reports(parent) && reports(child) && parent.flags & 0x02 != 0 && child.flags & 0x02 == 0
        {
            findings.push(Finding {
                rule: Rule::FlagDropped,
                trace_ids: vec![id],
                span_ids: vec![parent.span_id, child.span_id],
                services: vec![parent.service().to_owned(), child.service().to_owned()],
                message: format!(
                    "the W3C random flag (trace flags 0x02) of {} did not reach {}: the hop \
rewrote the trace flags (a proxy, or a propagator that keeps only the sampled bit)",
                    parent.service(),
                    child.service()
                ),
            });
        }
        // clock-skew: the child's clock offset lies in [child end - parent end, child start -
        // parent start]; the end bound holds for a CLIENT/SERVER pair only. Reported where both
        // bounds lie beyond the tolerances on the same side of zero: a server span that ends
        // after its client's on a busy host (it started after it) is no clock offset.
        let start = i128::from(child.start_unix_nano) - i128::from(parent.start_unix_nano);
        let pair = parent.kind == SpanKind::Client && child.kind == SpanKind::Server;
        let end = pair.then(|| i128::from(child.end_unix_nano) - i128::from(parent.end_unix_nano));
        // At least how far behind, or ahead: the bound nearer zero.
        let behind_by = -end.map_or(start, |e| e.max(start));
        let ahead_by = end.map_or(0, |e| e.min(start));
        let behind = behind_by > i128::from(self.config.start_tolerance_nanos);
        if !behind && ahead_by <= i128::from(self.config.end_margin_nanos) {
            return;
        }
        let key = (
            Arc::clone(&parent.resource.service),
            Arc::clone(&child.resource.service),
        );
        if self.skewed_pairs.contains(&key) || self.skewed_pairs.len() >= MAX_SKEW_PAIRS {
            return;
        }
        self.skewed_pairs.insert(key);
        let bound = if behind {
            format!(
                "{}'s clock is at least {} behind {}'s: \"{}\" starts before its parent \"{}\"",
                child.service(),
                millis(behind_by.unsigned_abs()),
                parent.service(),
                child.name,
                parent.name
            )
        } else {
            format!(
                "{}'s clock is at least {} ahead of {}'s: \"{}\" starts and ends after its client \
\"{}\"",
                child.service(),
                millis(ahead_by.unsigned_abs()),
                parent.service(),
                child.name,
                parent.name
            )
        };
        findings.push(Finding {
            rule: Rule::ClockSkew,
            trace_ids: vec![id],
            span_ids: vec![parent.span_id, child.span_id],
            services: vec![parent.service().to_owned(), child.service().to_owned()],
            message: format!(
                "{bound}; synchronise the hosts' clocks (NTP, chrony); span times are shown as \
exported (reported once per pair of services)"
            ),
        });
    }

    /// A SERVER span that is the root of its trace.
    fn new_root(&mut self, assembler: &Assembler, span: &Span, findings: &mut Vec<Finding>) {
        if !self.first_time(span) {
            return;
        }
        let cause = NewRootCause::of(span);
        // A root that links to the inbound context: linked by policy, not lost. Reported when
        // the linked span is a CLIENT span without a child: now, if its trace has completed,
        // else when it does.
        if let Some(link) = span.links.iter().find(|l| l.trace_id != span.trace_id) {
            let pending = PendingLink {
                server_trace: span.trace_id,
                server_span: span.span_id,
                server_service: Arc::clone(&span.resource.service),
                linked_trace: link.trace_id,
            };
            if let Some(linked) = assembler
                .trace(&link.trace_id)
                .filter(|t| t.complete && !t.is_partial())
            {
                let childless = |client: &Span| {
                    !linked
                        .spans
                        .iter()
                        .any(|s| s.parent_span_id == Some(client.span_id))
                };
                if let Some(client) = linked.spans.iter().find(|s| {
                    s.span_id == link.span_id && s.kind == SpanKind::Client && childless(s)
                }) {
                    if let Some((key, c)) = candidate(client, None, Role::Client) {
                        self.clients.remove_span(&key, c.start, c.span_id);
                    }
                    findings.push(untrusted_linked(client, &pending));
                }
                return;
            }
            self.pending_links.insert(link.span_id, pending);
            self.pending_order.push_back(link.span_id);
            return;
        }
        let Some((key, server)) = candidate(span, cause, Role::Server) else {
            return;
        };
        // A client of the same request that this root began within.
        let tolerance = self.config.start_tolerance_nanos;
        let found = self.clients.by_key.get(&key).and_then(|clients| {
            let longest = self.clients.longest.get(&key).copied().unwrap_or(0);
            let from = server
                .start
                .saturating_sub(longest)
                .saturating_sub(tolerance);
            // Latest start first: the scan stops once the starts are further from the server's
            // than the best fit found.
            tightest(
                clients
                    .range((from, 0)..=(server.start.saturating_add(tolerance), u64::MAX))
                    .rev(),
                |c| server.start.checked_sub(c.start),
                |c| matches(c, &server, &self.config).then(|| gap(c, &server)),
            )
        });
        match found.and_then(|at| self.clients.remove(&key, at)) {
            Some(client) => findings.push(lost_context(&client, &server)),
            None => {
                self.seq += 1;
                self.roots.insert(key, self.seq, server);
            }
        }
    }

    /// A CLIENT span without a child in its trace.
    fn childless_client(&mut self, span: &Span, findings: &mut Vec<Finding>) {
        if !self.first_time(span) {
            return;
        }
        if let Some(pending) = self.pending_links.remove(&span.span_id)
            && pending.linked_trace == span.trace_id
        {
            findings.push(untrusted_linked(span, &pending));
            return;
        }
        let Some((key, client)) = candidate(span, None, Role::Client) else {
            return;
        };
        let tolerance = self.config.start_tolerance_nanos;
        let found = self.roots.by_key.get(&key).and_then(|roots| {
            tightest(
                roots.range(
                    (client.start.saturating_sub(tolerance), 0)
                        ..=(client.end.saturating_add(tolerance), u64::MAX),
                ),
                |r| r.start.checked_sub(client.start),
                |r| matches(&client, r, &self.config).then(|| gap(&client, r)),
            )
        });
        match found.and_then(|at| self.roots.remove(&key, at)) {
            Some(server) => findings.push(lost_context(&client, &server)),
            None => {
                self.seq += 1;
                self.clients.insert(key, self.seq, client);
            }
        }
    }

    /// A CLIENT span whose child arrived after its trace had completed without it: no longer
    /// waiting for a new root (a later one for the same request is not its lost hop).
    fn answered_client(&mut self, span: &Span) {
        if self.seen.contains(&(span.trace_id, span.span_id))
            && let Some((key, c)) = candidate(span, None, Role::Client)
        {
            self.clients.remove_span(&key, c.start, c.span_id);
        }
    }

    /// Whether `span` is taken as one side of a hop for the first time (remembered up to twice
    /// [`DoctorConfig::max_candidates`] spans).
    fn first_time(&mut self, span: &Span) -> bool {
        let id = (span.trace_id, span.span_id);
        if !self.seen.insert(id) {
            return false;
        }
        self.seen_order.push_back(id);
        while self.seen_order.len() > self.config.max_candidates.saturating_mul(2) {
            if let Some(old) = self.seen_order.pop_front() {
                self.seen.remove(&old);
            }
        }
        true
    }

    fn prune(&mut self) {
        let oldest = self
            .newest_end
            .saturating_sub(self.config.candidate_horizon_nanos);
        let max = self.config.max_candidates;
        self.clients.prune(max, oldest);
        self.roots.prune(max, oldest);
        while self.pending_order.len() > max {
            if let Some(id) = self.pending_order.pop_front() {
                self.pending_links.remove(&id);
            }
        }
    }
}

/// Whether a server span began and ended within a client span (with the tolerances) and at
/// the address the client called (when both say).
fn matches(client: &Candidate, server: &Candidate, config: &DoctorConfig) -> bool {
    if client.service == server.service || client.trace_id == server.trace_id {
        return false;
    }
    let within = server.start.saturating_add(config.start_tolerance_nanos) >= client.start
        && server.start <= client.end.saturating_add(config.start_tolerance_nanos)
        && server.end <= client.end.saturating_add(config.end_margin_nanos);
    within && client.address.reached(&server.address)
}

/// Of `candidates` (in order of start, moving away from the other side's start), the key of the
/// one that fits with the least gap (`fit`: the gap, or `None` when it does not match). The gap
/// is at least the distance between the two starts, so the scan stops at the first candidate
/// whose `distance` (once moving away) is no less than the best gap found.
fn tightest<'a>(
    candidates: impl Iterator<Item = (&'a (u64, u64), &'a Candidate)>,
    distance: impl Fn(&Candidate) -> Option<u64>,
    fit: impl Fn(&Candidate) -> Option<u64>,
) -> Option<(u64, u64)> {
    let mut best: Option<((u64, u64), u64)> = None;
    for (at, c) in candidates {
        if let (Some((_, least)), Some(d)) = (best, distance(c))
            && d >= least
        {
            break;
        }
        if let Some(g) = fit(c)
            && best.is_none_or(|(_, least)| g < least)
        {
            best = Some((*at, g));
        }
    }
    best.map(|(at, _)| at)
}

/// How far a server span is from filling its client span: the time from the client's start to
/// the server's, plus from the server's end to the client's. Of the requests alike in every
/// attribute and in flight together, the true pair is the tightest (one network latency each
/// way); the doctor pairs the candidates with the least gap.
fn gap(client: &Candidate, server: &Candidate) -> u64 {
    server
        .start
        .abs_diff(client.start)
        .saturating_add(client.end.abs_diff(server.end))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Client,
    Server,
}

fn text<'a>(span: &'a Span, keys: &[&str]) -> Option<&'a str> {
    keys.iter()
        .find_map(|k| span.attribute(k).and_then(Value::as_str))
        .filter(|s| !s.is_empty())
}

fn int(span: &Span, keys: &[&str]) -> Option<u16> {
    keys.iter().find_map(|k| match span.attribute(k)? {
        Value::Int(i) => u16::try_from(*i).ok(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    })
}

/// `scheme://host[:port]/path?query` to (host, port, path); the default port for the scheme.
fn split_url(url: &str) -> Option<(String, Option<u16>, String)> {
    let (scheme, rest) = url.split_once("://")?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port) = split_host_port(authority);
    let port = port.or(match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    });
    let path = tail.split(['?', '#']).next().unwrap_or("");
    let path = if path.is_empty() { "/" } else { path };
    Some((host.to_ascii_lowercase(), port, path.to_owned()))
}

/// `host[:port]` (with `[v6]`) to its parts.
fn split_host_port(authority: &str) -> (&str, Option<u16>) {
    if let Some(rest) = authority.strip_prefix('[')
        && let Some((host, after)) = rest.split_once(']')
    {
        return (host, after.strip_prefix(':').and_then(|p| p.parse().ok()));
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => (host, port.parse().ok()),
        _ => (authority, None),
    }
}

/// The request a span stands for, with the addresses it names; `None` when its attributes
/// cannot identify one (then the lost-hop rule says nothing about it).
///
/// A client's address is the one it called: `server.address`/`server.port` (stable), else the
/// host and port of `url.full`/`http.url`, else `net.peer.name`/`net.peer.port` (older gRPC).
/// A server's are every one it names. The address the client used: `server.address` and
/// `server.port` (stable: from the Host header or `:authority`), `http.host` (the Host header
/// in the older conventions; the socket's address in Python's ASGI), the host of
/// `url.full`/`http.url`, and `http.server_name` when it holds a port (ASGI's Host header).
/// Ports only: `net.host.port`. Neither: `http.server_name` without a port (WSGI's configured
/// server name) and `net.host.name` (a server's own name for itself), whose hosts can match a
/// client's but never tell it apart. A server's `net.peer.*` is its caller, never read.
fn candidate(span: &Span, cause: Option<NewRootCause>, role: Role) -> Option<(HopKey, Candidate)> {
    let mut address = Address::default();
    let key = if let Some(method) = text(span, &["rpc.method"])
        && (span.attribute("rpc.system").is_some() || span.attribute("rpc.system.name").is_some())
    {
        let full = match text(span, &["rpc.service"]) {
            Some(service) if !method.contains('/') => format!("{service}/{method}"),
            _ => method.trim_start_matches('/').to_owned(),
        };
        match role {
            Role::Client => {
                let (host, port) = match text(span, &["server.address", "net.peer.name"]) {
                    Some(value) => split_host_port(value),
                    None => ("", None),
                };
                address.host(host, true);
                address.port(int(span, &["server.port", "net.peer.port"]).or(port));
            }
            Role::Server => {
                server_authorities(span, &mut address);
                if let Some(name) = text(span, &["net.host.name"]) {
                    address.host(name, false);
                }
            }
        }
        HopKey::Rpc(full)
    } else {
        let method = text(span, &["http.request.method", "http.method"])?.to_ascii_uppercase();
        let url = text(span, &["url.full", "http.url"]).and_then(split_url);
        match role {
            Role::Client => {
                let (url_host, url_port, path) = url?;
                // The stable client attributes, where the URL did not say.
                let (host, port) = match text(span, &["server.address"]) {
                    Some(value) => split_host_port(value),
                    None => (url_host.as_str(), None),
                };
                address.host(host, true);
                address.port(int(span, &["server.port"]).or(port).or(url_port));
                HopKey::Http(method, path)
            }
            Role::Server => {
                let path = match url {
                    Some((host, port, path)) => {
                        address.host(&host, true);
                        address.port(port);
                        path
                    }
                    None => {
                        let path = text(span, &["url.path", "http.target"])?;
                        path.split(['?', '#']).next().unwrap_or(path).to_owned()
                    }
                };
                server_authorities(span, &mut address);
                if let Some(value) = text(span, &["http.host"]) {
                    address.authority(value, true);
                }
                if let Some(value) = text(span, &["http.server_name"]) {
                    let (host, port) = split_host_port(value);
                    address.host(host, port.is_some());
                    address.port(port);
                }
                HopKey::Http(method, path)
            }
        }
    };
    Some((
        key,
        Candidate {
            trace_id: span.trace_id,
            span_id: span.span_id,
            service: Arc::clone(&span.resource.service),
            start: span.start_unix_nano,
            end: span.end_unix_nano,
            address,
            cause,
        },
    ))
}

/// A server's `server.address`/`server.port` (a port inside the address too) and
/// `net.host.port`.
fn server_authorities(span: &Span, address: &mut Address) {
    if let Some(value) = text(span, &["server.address"]) {
        address.authority(value, true);
    }
    address.port(int(span, &["server.port"]));
    address.port(int(span, &["net.host.port"]));
}

fn missing_parent(id: TraceId, span: &Span, parent: SpanId) -> Finding {
    let why = match span.parent_is_remote() {
        Some(true) => "its parent came over the wire, but the upstream service never exported \
it: the upstream did not sample or export its span, or a proxy forwarded the headers of a \
service that is not traced"
            .to_owned(),
        Some(false) => format!(
            "its parent is local to {}: a span inside the service was dropped (not ended, or \
lost by its exporter)",
            span.service()
        ),
        None => "the exporter does not say whether the parent was remote".to_owned(),
    };
    Finding {
        rule: Rule::MissingParent,
        trace_ids: vec![id],
        span_ids: vec![span.span_id, parent],
        services: vec![span.service().to_owned()],
        message: format!(
            "parent {parent} of span {} (\"{}\" in {}) never arrived; {why}",
            span.span_id,
            span.name,
            span.service()
        ),
    }
}

fn lost_context(client: &Candidate, server: &Candidate) -> Finding {
    let why = match &server.cause {
        Some(NewRootCause::NoTraceparent) => format!(
            "{} received no traceparent: make {} inject the context (or instrument its HTTP/gRPC \
client)",
            server.service, client.service
        ),
        Some(NewRootCause::Rejected(anchor)) => format!(
            "{} rejected the traceparent it received (rule {anchor} of \
docs/propagation-rules.md): fix what {} or a proxy between them sends",
            server.service, client.service
        ),
        Some(NewRootCause::UntrustedIgnored) => format!(
            "{}'s trust policy ignored the context from {}: trust that caller, or link \
(docs/propagation-rules.md#trust)",
            server.service, client.service
        ),
        Some(NewRootCause::UntrustedLinked) | None => format!(
            "check that {} injects traceparent and that {} extracts it",
            client.service, server.service
        ),
    };
    Finding {
        rule: Rule::LostContext,
        trace_ids: vec![client.trace_id, server.trace_id],
        span_ids: vec![client.span_id, server.span_id],
        services: vec![client.service.to_string(), server.service.to_string()],
        message: format!(
            "context lost on {} -> {}: client span {} (trace {}) has no child, and {} started \
trace {} for the same request; {why}",
            client.service,
            server.service,
            client.span_id,
            client.trace_id,
            server.service,
            server.trace_id
        ),
    }
}

fn untrusted_linked(client: &Span, server: &PendingLink) -> Finding {
    Finding {
        rule: Rule::UntrustedLinked,
        trace_ids: vec![client.trace_id, server.server_trace],
        span_ids: vec![client.span_id, server.server_span],
        services: vec![
            client.service().to_owned(),
            server.server_service.to_string(),
        ],
        message: format!(
            "{} did not trust the context from {} and started trace {} linked to client span {} \
(trace {}): expected where its policy links public callers (docs/propagation-rules.md#trust)",
            server.server_service,
            client.service(),
            server.server_trace,
            client.span_id,
            client.trace_id
        ),
    }
}

fn millis(nanos: u128) -> String {
    format!("{:.3} ms", nanos as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::time::{Duration, Instant};

    use serde_json::{Value as Json, json};

    use super::*;
    use crate::assemble::Config;
    use crate::decode::decode_json;

    const A: &str = "0af7651916cd43dd8448eb211c80319c";
    const B: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
    const C: &str = "5c0c2a8b1d3e4f5061728394a5b6c7d8";

    /// A span of `trace` as OTLP/JSON; times in microseconds after 1,700,000,000 s; `parent`
    /// empty for a root; attribute values as OTLP/JSON `AnyValue`s.
    #[allow(clippy::too_many_arguments)]
    fn span(
        trace: &str,
        id: u64,
        parent: u64,
        name: &str,
        kind: u8,
        (start, end): (u64, u64),
        flags: u32,
        attributes: &[(&str, Json)],
    ) -> Json {
        let t0 = 1_700_000_000_000_000_000u64;
        let mut span = json!({
            "traceId": trace,
            "spanId": format!("{id:016x}"),
            "name": name,
            "kind": kind,
            "startTimeUnixNano": (t0 + start * 1000).to_string(),
            "endTimeUnixNano": (t0 + end * 1000).to_string(),
            "flags": flags,
            "attributes": attributes.iter().map(|(k, v)| json!({"key": k, "value": v})).collect::<Vec<_>>(),
        });
        if parent != 0 {
            span["parentSpanId"] = json!(format!("{parent:016x}"));
        }
        span
    }

    fn s(v: &str) -> Json {
        json!({ "stringValue": v })
    }

    fn i(v: i64) -> Json {
        json!({ "intValue": v.to_string() })
    }

    fn link(mut span: Json, trace: &str, id: u64) -> Json {
        span["links"] = json!([{ "traceId": trace, "spanId": format!("{id:016x}") }]);
        span
    }

    /// One OTLP/JSON export request of `service`.
    fn export(service: &str, spans: Vec<Json>) -> String {
        json!({"resourceSpans": [{
            "resource": {"attributes": [{"key": "service.name", "value": s(service)}]},
            "scopeSpans": [{"scope": {"name": "test"}, "spans": spans}],
        }]})
        .to_string()
    }

    /// Every finding on the traces of these export requests, as `lens check` reads a file.
    fn check(lines: &[String]) -> Vec<Finding> {
        let mut assembler = Assembler::new(Config::default());
        let now = Instant::now();
        for line in lines {
            let batch = decode_json(line.as_bytes()).unwrap();
            assert_eq!(batch.rejected, 0, "{line}");
            assembler.insert(batch.spans, now);
        }
        let mut doctor = Doctor::new(DoctorConfig::default());
        assembler
            .flush()
            .into_iter()
            .flat_map(|id| doctor.diagnose(&assembler, id))
            .collect()
    }

    fn rules(findings: &[Finding]) -> Vec<&'static str> {
        findings.iter().map(|f| f.rule.id()).collect()
    }

    const CLIENT: u8 = 3;
    const SERVER: u8 = 2;
    const INTERNAL: u8 = 1;

    /// gateway: a root and a CLIENT `GET http://127.0.0.1:8080/plan` (100..900 µs).
    fn gateway_calls_plan() -> String {
        export(
            "gateway",
            vec![
                span(A, 1, 0, "request", SERVER, (0, 1000), 0x301, &[]),
                span(
                    A,
                    2,
                    1,
                    "GET",
                    CLIENT,
                    (100, 900),
                    0x101,
                    &[
                        ("http.request.method", s("GET")),
                        ("url.full", s("http://127.0.0.1:8080/plan?x=1")),
                        ("server.address", s("127.0.0.1")),
                        ("server.port", i(8080)),
                    ],
                ),
            ],
        )
    }

    /// planner: a new root SERVER `GET /plan` (from, to) with lens' cause `cause`.
    fn planner_root(trace: &str, (from, to): (u64, u64), path: &str, cause: &str) -> Json {
        let mut attrs = vec![
            ("http.request.method", s("GET")),
            ("url.path", s(path)),
            ("http.route", s(path)),
            ("server.address", s("127.0.0.1")),
            ("server.port", i(8080)),
        ];
        if !cause.is_empty() {
            attrs.push((NEW_ROOT_ATTRIBUTE, s(cause)));
        }
        span(trace, 7, 0, "GET /plan", SERVER, (from, to), 0x101, &attrs)
    }

    #[test]
    fn lost_context_names_both_traces_and_the_cause_in_either_order() {
        let server = export(
            "planner",
            vec![planner_root(B, (200, 800), "/plan", "none")],
        );
        for lines in [
            [gateway_calls_plan(), server.clone()],
            [server.clone(), gateway_calls_plan()],
        ] {
            let findings = check(&lines);
            assert_eq!(rules(&findings), ["lost-context"]);
            let f = &findings[0];
            assert_eq!(f.severity(), Severity::Error);
            assert_eq!(
                f.trace_ids,
                [TraceId::from_hex(A).unwrap(), TraceId::from_hex(B).unwrap()]
            );
            assert_eq!(
                f.span_ids,
                [SpanId(2u64.to_be_bytes()), SpanId(7u64.to_be_bytes())]
            );
            assert_eq!(f.services, ["gateway", "planner"]);
            assert!(f.message.contains("gateway -> planner"), "{}", f.message);
            assert!(
                f.message.contains("received no traceparent"),
                "{}",
                f.message
            );
            assert_eq!(f.doc(), "docs/doctor.md#lost-context");
        }
    }

    #[test]
    fn overlapping_identical_requests_pair_by_the_tightest_fit() {
        const C: &str = "11111111111111111111111111111111";
        const D: &str = "22222222222222222222222222222222";
        let client = |trace: &str, times: (u64, u64)| {
            export(
                "gateway",
                vec![span(
                    trace,
                    2,
                    0,
                    "GET",
                    CLIENT,
                    times,
                    0x101,
                    &[
                        ("http.request.method", s("GET")),
                        ("url.full", s("http://127.0.0.1:8080/plan")),
                    ],
                )],
            )
        };
        // Two GET /plan in flight together, each server 50 µs inside its own client: the first
        // server also fits in the second client (started later, within the 1 ms tolerance).
        let lines = [
            client(A, (100, 900)),
            client(C, (300, 1000)),
            export(
                "planner",
                vec![planner_root(B, (150, 850), "/plan", "none")],
            ),
            export(
                "planner",
                vec![planner_root(D, (350, 950), "/plan", "none")],
            ),
        ];
        let pairs: Vec<Vec<TraceId>> = check(&lines).into_iter().map(|f| f.trace_ids).collect();
        let id = |t: &str| TraceId::from_hex(t).unwrap();
        assert_eq!(pairs, [vec![id(A), id(B)], vec![id(C), id(D)]]);
    }

    #[test]
    fn lost_context_names_a_rejected_traceparent_by_its_rule() {
        let server = export(
            "planner",
            vec![planner_root(
                B,
                (200, 800),
                "/plan",
                "rejected:traceparent-versions",
            )],
        );
        let findings = check(&[gateway_calls_plan(), server]);
        assert_eq!(rules(&findings), ["lost-context"]);
        assert!(
            findings[0]
                .message
                .contains("(rule traceparent-versions of docs/propagation-rules.md)")
        );
    }

    #[test]
    fn no_lost_context_without_a_matching_new_root() {
        // The client called an uninstrumented service: no new root anywhere.
        assert!(check(&[gateway_calls_plan()]).is_empty());
        // New roots for another path, outside the client's time, on another port.
        let other_path = export(
            "planner",
            vec![planner_root(B, (200, 800), "/other", "none")],
        );
        let later = export(
            "planner",
            vec![planner_root(B, (5000, 6000), "/plan", "none")],
        );
        let mut port = planner_root(B, (200, 800), "/plan", "none");
        port["attributes"][4]["value"] = i(9090);
        for server in [other_path, later, export("planner", vec![port])] {
            assert_eq!(
                check(&[gateway_calls_plan(), server.clone()]),
                [],
                "{server}"
            );
        }
    }

    #[test]
    fn lost_context_matches_python_s_older_http_conventions() {
        // aiohttp client: only http.method and http.url; FastAPI server: http.url from the Host
        // header, http.host the socket it listens on (a port mapping between them).
        let client = export(
            "py-client",
            vec![span(
                A,
                2,
                0,
                "GET",
                CLIENT,
                (100, 900),
                0x100,
                &[
                    ("http.method", s("GET")),
                    ("http.url", s("http://localhost:8000/plan")),
                ],
            )],
        );
        let server = export(
            "rust-planner",
            vec![span(
                B,
                7,
                0,
                "GET /plan",
                SERVER,
                (200, 800),
                0x100,
                &[
                    ("http.method", s("GET")),
                    ("http.url", s("http://localhost:8000/plan")),
                    ("http.host", s("0.0.0.0:80")),
                    ("http.target", s("/plan")),
                ],
            )],
        );
        let findings = check(&[client, server]);
        assert_eq!(rules(&findings), ["lost-context"]);
        assert!(
            findings[0]
                .message
                .contains("check that py-client injects traceparent")
        );
    }

    #[test]
    fn lost_context_matches_grpc_methods_across_conventions() {
        let client = export(
            "planner",
            vec![span(
                A,
                2,
                0,
                "p.S/M",
                CLIENT,
                (100, 900),
                0x101,
                &[
                    ("rpc.system", s("grpc")),
                    ("rpc.service", s("p.S")),
                    ("rpc.method", s("M")),
                ],
            )],
        );
        let server = |method: &str| {
            export(
                "trainer",
                vec![span(
                    B,
                    7,
                    0,
                    "p.S/M",
                    SERVER,
                    (200, 800),
                    0x101,
                    &[("rpc.system.name", s("grpc")), ("rpc.method", s(method))],
                )],
            )
        };
        assert_eq!(
            rules(&check(&[client.clone(), server("p.S/M")])),
            ["lost-context"]
        );
        assert_eq!(check(&[client, server("p.S/Other")]), []);
    }

    /// A Python (aiohttp, older conventions) CLIENT `GET url` (100..900 µs) in trace A.
    fn py_client_calls(url: &str) -> String {
        export(
            "py-client",
            vec![span(
                A,
                2,
                0,
                "GET",
                CLIENT,
                (100, 900),
                0x100,
                &[("http.method", s("GET")), ("http.url", s(url))],
            )],
        )
    }

    /// A new root SERVER `GET /plan` (200..800 µs) of `service` in `trace`, in the older
    /// conventions of Python's instrumentations, with these address attributes.
    fn py_root(service: &str, trace: &str, address: &[(&str, Json)]) -> String {
        let mut attrs = vec![("http.method", s("GET")), ("http.target", s("/plan"))];
        attrs.extend(address.iter().cloned());
        export(
            service,
            vec![span(
                trace,
                7,
                0,
                "GET /plan",
                SERVER,
                (200, 800),
                0x100,
                &attrs,
            )],
        )
    }

    #[test]
    fn lost_context_reads_the_port_in_a_server_name_and_never_crosses_ports() {
        // FastAPI/uvicorn: http.server_name is the Host header, port included. Two servers of
        // one host (planner on :8000, trainer on :8001) both start a new root for GET /plan
        // within the client span; the client called :8001.
        let client = py_client_calls("http://10.0.0.5:8001/plan");
        let planner = py_root("planner", B, &[("http.server_name", s("10.0.0.5:8000"))]);
        let trainer = py_root("trainer", C, &[("http.server_name", s("10.0.0.5:8001"))]);
        for lines in [
            [client.clone(), planner.clone(), trainer.clone()],
            [planner.clone(), trainer.clone(), client.clone()],
            [trainer.clone(), client.clone(), planner.clone()],
        ] {
            let findings = check(&lines);
            assert_eq!(rules(&findings), ["lost-context"], "{lines:?}");
            assert_eq!(findings[0].services, ["py-client", "trainer"]);
        }
        assert_eq!(check(&[client, planner]), []);
    }

    #[test]
    fn lost_context_falls_back_to_the_port_when_the_server_s_host_is_not_the_client_s() {
        // Flask (WSGI): http.server_name is the server's configured name, net.host.port its
        // port; the client called it by IP, or by another name.
        let flask = |port: i64| {
            py_root(
                "planner",
                B,
                &[
                    ("http.server_name", s("build-host")),
                    ("net.host.port", i(port)),
                ],
            )
        };
        for url in ["http://10.0.0.5:5000/plan", "http://planner:5000/plan"] {
            let client = py_client_calls(url);
            assert_eq!(
                rules(&check(&[client.clone(), flask(5000)])),
                ["lost-context"]
            );
            assert_eq!(check(&[client, flask(5001)]), [], "{url}");
        }
        // FastAPI's http.url is built from the socket's address: an IP where the client used a
        // name.
        let fastapi = |port: u16| {
            py_root(
                "planner",
                B,
                &[("http.url", s(&format!("http://10.0.0.5:{port}/plan")))],
            )
        };
        let client = py_client_calls("http://planner:8000/plan");
        assert_eq!(
            rules(&check(&[client.clone(), fastapi(8000)])),
            ["lost-context"]
        );
        assert_eq!(check(&[client, fastapi(8001)]), []);
        // Behind a port mapping (8080 -> 8000) the Host header keeps the port the client used.
        let mapped = py_root(
            "planner",
            B,
            &[
                ("http.url", s("http://172.17.0.2:8000/plan")),
                ("http.server_name", s("127.0.0.1:8080")),
                ("net.host.port", i(8000)),
            ],
        );
        let client = py_client_calls("http://127.0.0.1:8080/plan");
        assert_eq!(rules(&check(&[client, mapped])), ["lost-context"]);
    }

    #[test]
    fn no_lost_context_to_another_host_that_reports_the_address_the_client_used() {
        // The Host header (http.host, WSGI; server.address, stable) names another host of the
        // same kind (IP and IP, name and name): another server.
        let client = py_client_calls("http://10.0.0.5:8000/plan");
        let other = py_root("planner", B, &[("http.host", s("10.0.0.6:8000"))]);
        assert_eq!(check(&[client.clone(), other]), []);
        let same = py_root("planner", B, &[("http.host", s("10.0.0.5:8000"))]);
        assert_eq!(rules(&check(&[client, same])), ["lost-context"]);
        let client = py_client_calls("http://planner-1:8000/plan");
        let other = py_root(
            "planner",
            B,
            &[("server.address", s("planner-2")), ("server.port", i(8000))],
        );
        assert_eq!(check(&[client, other]), []);
    }

    #[test]
    fn lost_context_to_a_python_grpc_server_ignores_the_caller_s_port() {
        // Python's gRPC server span: net.peer.* is its caller (an ephemeral port), not itself.
        let client = export(
            "gateway",
            vec![span(
                A,
                2,
                0,
                "p.S/M",
                CLIENT,
                (100, 900),
                0x101,
                &[
                    ("rpc.system.name", s("grpc")),
                    ("rpc.method", s("p.S/M")),
                    ("server.address", s("10.0.0.5")),
                    ("server.port", i(50051)),
                ],
            )],
        );
        let server = export(
            "py-trainer",
            vec![span(
                B,
                7,
                0,
                "p.S/M",
                SERVER,
                (200, 800),
                0x100,
                &[
                    ("rpc.system", s("grpc")),
                    ("rpc.service", s("p.S")),
                    ("rpc.method", s("M")),
                    ("net.peer.ip", s("10.0.0.9")),
                    ("net.peer.port", s("57284")),
                ],
            )],
        );
        assert_eq!(rules(&check(&[client, server])), ["lost-context"]);
    }

    #[test]
    fn a_reopened_trace_does_not_report_its_lost_hop_twice() {
        let mut assembler = Assembler::new(Config::default());
        let mut doctor = Doctor::new(DoctorConfig::default());
        let now = Instant::now();
        let late_b = export(
            "planner",
            vec![span(B, 8, 7, "late", INTERNAL, (300, 400), 0x101, &[])],
        );
        let late_a = export(
            "gateway",
            vec![span(A, 9, 1, "late", INTERNAL, (300, 400), 0x101, &[])],
        );
        let server = export(
            "planner",
            vec![planner_root(B, (200, 800), "/plan", "none")],
        );
        let mut found = Vec::new();
        // The server's trace, the client's, then each reopened by a late span and completed again.
        for line in [server, gateway_calls_plan(), late_b, late_a] {
            assembler.insert(decode_json(line.as_bytes()).unwrap().spans, now);
            for id in assembler.flush() {
                found.extend(doctor.diagnose(&assembler, id));
            }
        }
        assert_eq!(rules(&found), ["lost-context"]);
    }

    #[test]
    fn a_client_whose_child_arrives_late_is_no_longer_a_lost_hop_candidate() {
        // Live: gateway's trace closes with its CLIENT span childless (a lost-hop candidate),
        // then planner's SERVER child arrives late and reopens it. A new root of planner for
        // the same request, within that client span (another caller, not traced), is then
        // no lost context of it.
        let t0 = Instant::now();
        let mut assembler = Assembler::new(Config::default());
        let mut doctor = Doctor::new(DoctorConfig::default());
        let mut found = Vec::new();
        // Spans that arrive `secs` after t0, and the traces that complete a quiet window later.
        let mut step = |line: String, secs: u64, doctor: &mut Doctor| {
            let at = t0 + Duration::from_secs(secs);
            assembler.insert(decode_json(line.as_bytes()).unwrap().spans, at);
            assert!(assembler.poll(at).is_empty());
            let quiet = assembler.config().quiet_for;
            for id in assembler.poll(at + quiet) {
                found.extend(doctor.diagnose(&assembler, id));
            }
            found.clone()
        };
        assert_eq!(step(gateway_calls_plan(), 0, &mut doctor), []);
        assert_eq!(doctor.candidates(), 1);
        let late_child = export(
            "planner",
            vec![span(
                A,
                3,
                2,
                "GET /plan",
                SERVER,
                (150, 850),
                0x301,
                &[("http.request.method", s("GET")), ("url.path", s("/plan"))],
            )],
        );
        assert_eq!(step(late_child, 10, &mut doctor), []);
        assert_eq!(doctor.candidates(), 0);
        let other_caller = export(
            "planner",
            vec![planner_root(B, (300, 700), "/plan", "none")],
        );
        assert_eq!(step(other_caller, 20, &mut doctor), []);
    }

    #[test]
    fn a_linked_new_root_is_untrusted_linked_not_lost() {
        let server = export(
            "planner",
            vec![link(
                planner_root(B, (200, 800), "/plan", "untrusted:linked"),
                A,
                2,
            )],
        );
        for lines in [
            [gateway_calls_plan(), server.clone()],
            [server.clone(), gateway_calls_plan()],
        ] {
            let findings = check(&lines);
            assert_eq!(rules(&findings), ["untrusted-linked"]);
            assert_eq!(findings[0].severity(), Severity::Info);
            assert_eq!(findings[0].services, ["gateway", "planner"]);
        }
    }

    #[test]
    fn missing_parent_tells_a_remote_parent_from_a_local_one() {
        let remote = export(
            "planner",
            vec![span(A, 2, 9, "GET /plan", SERVER, (0, 5), 0x301, &[])],
        );
        let findings = check(&[remote]);
        assert_eq!(rules(&findings), ["missing-parent"]);
        assert!(
            findings[0].message.contains("came over the wire"),
            "{}",
            findings[0].message
        );
        let local = export(
            "planner",
            vec![span(A, 2, 9, "step", INTERNAL, (0, 5), 0x101, &[])],
        );
        let findings = check(&[local]);
        assert_eq!(rules(&findings), ["missing-parent"]);
        assert!(
            findings[0].message.contains("local to planner"),
            "{}",
            findings[0].message
        );
        // Near miss: the parent arrived (in another export).
        let parent = export(
            "gateway",
            vec![span(A, 9, 0, "root", SERVER, (0, 10), 0x101, &[])],
        );
        let child = export(
            "planner",
            vec![span(A, 2, 9, "GET", SERVER, (1, 5), 0x301, &[])],
        );
        assert_eq!(check(&[child, parent]), []);
    }

    /// gateway CLIENT (5,000..9,000 µs) in `trace` and its planner SERVER child (`server`).
    fn hop(trace: &str, server: (u64, u64), server_flags: u32) -> [String; 2] {
        [
            export(
                "gateway",
                vec![span(trace, 2, 0, "GET", CLIENT, (5000, 9000), 0x101, &[])],
            ),
            export(
                "planner",
                vec![span(
                    trace,
                    3,
                    2,
                    "GET /plan",
                    SERVER,
                    server,
                    server_flags,
                    &[],
                )],
            ),
        ]
    }

    #[test]
    fn clock_skew_is_reported_once_per_pair_of_services() {
        let mut lines = hop(A, (1000, 4000), 0x301).to_vec();
        lines.extend(hop(B, (500, 3500), 0x301));
        let findings = check(&lines);
        assert_eq!(rules(&findings), ["clock-skew"]);
        assert!(
            findings[0]
                .message
                .contains("planner's clock is at least 4.000 ms behind gateway's"),
            "{}",
            findings[0].message
        );
        // A server clock 2 s ahead: the server starts and ends 2 s after its client, even
        // where its span also ends 25 ms after the client's (a busy host).
        for (server, bound) in [
            ((2_005_100, 2_008_900), "1999.900"),
            ((2_005_100, 2_034_000), "2000.100"),
        ] {
            let findings = check(&hop(A, server, 0x301));
            assert_eq!(rules(&findings), ["clock-skew"], "{server:?}");
            let expected = format!("planner's clock is at least {bound} ms ahead of gateway's");
            assert!(
                findings[0].message.contains(&expected),
                "{}",
                findings[0].message
            );
        }
    }

    #[test]
    fn no_clock_skew_for_a_server_span_that_ends_after_its_client_on_a_busy_host() {
        // The server's span ends once the response is written, the client's once it has read
        // it: on a loaded host they cross, by a few ms, or by tens with a busy event loop. The
        // server started after its client: no clock offset explains both ends, no skew.
        for end in [12_000, 34_000, 60_000] {
            assert_eq!(check(&hop(A, (5100, end), 0x301)), [], "{end}");
        }
    }

    #[test]
    fn no_clock_skew_for_a_busy_host_or_a_python_server_ending_after_its_client() {
        // Starts 1 ms late (a busy host); an ASGI span that ends 0.43 ms after its client.
        assert_eq!(check(&hop(A, (6000, 8800), 0x301)), []);
        assert_eq!(check(&hop(A, (5500, 9430), 0x300)), []);
        // Within the start tolerance: 0.5 ms early.
        assert_eq!(check(&hop(A, (4500, 9430), 0x300)), []);
    }

    #[test]
    fn flag_dropped_only_when_both_exporters_report_flags() {
        let parent = |flags| {
            export(
                "gateway",
                vec![span(A, 2, 0, "GET", CLIENT, (100, 900), flags, &[])],
            )
        };
        let child = |flags| {
            export(
                "planner",
                vec![span(A, 3, 2, "GET /plan", SERVER, (200, 800), flags, &[])],
            )
        };
        let findings = check(&[parent(0x103), child(0x301)]);
        assert_eq!(rules(&findings), ["flag-dropped"]);
        assert_eq!(findings[0].services, ["gateway", "planner"]);
        // Kept: nothing. A Python child (no flags reported): nothing. A parent without it: nothing.
        assert_eq!(check(&[parent(0x103), child(0x303)]), []);
        assert_eq!(check(&[parent(0x103), child(0x300)]), []);
        assert_eq!(check(&[parent(0x101), child(0x301)]), []);
    }

    #[test]
    fn a_span_that_is_its_own_parent() {
        let findings = check(&[export(
            "svc",
            vec![span(A, 4, 4, "x", INTERNAL, (0, 1), 0x101, &[])],
        )]);
        assert_eq!(rules(&findings), ["self-parent"]);
        assert_eq!(
            check(&[export(
                "svc",
                vec![span(A, 4, 0, "x", INTERNAL, (0, 1), 0x101, &[])]
            )]),
            []
        );
    }

    #[test]
    fn duplicate_span_ids_in_one_trace() {
        let one = span(A, 4, 0, "x", INTERNAL, (0, 1), 0x101, &[]);
        let findings = check(&[export("svc", vec![one.clone(), one.clone()])]);
        assert_eq!(rules(&findings), ["duplicate-span-id"]);
        // The same id in two traces is no duplicate.
        let other = span(B, 4, 0, "x", INTERNAL, (0, 1), 0x101, &[]);
        assert_eq!(check(&[export("svc", vec![one, other])]), []);
    }

    #[test]
    fn dangling_links_only_to_traces_received() {
        let target = span(A, 1, 0, "stage a", INTERNAL, (0, 1), 0x101, &[]);
        let linked = |id| {
            link(
                span(A, 2, 1, "stage b", INTERNAL, (1, 2), 0x101, &[]),
                A,
                id,
            )
        };
        let findings = check(&[export("svc", vec![target.clone(), linked(9)])]);
        assert_eq!(rules(&findings), ["dangling-link"]);
        assert_eq!(check(&[export("svc", vec![target.clone(), linked(1)])]), []);
        // A link to a trace never received: cannot decide, nothing.
        let elsewhere = link(span(A, 2, 1, "b", INTERNAL, (1, 2), 0x101, &[]), B, 3);
        assert_eq!(check(&[export("svc", vec![target, elsewhere])]), []);
    }

    #[test]
    fn a_healthy_mixed_python_and_rust_trace_gives_no_finding() {
        // Rust gateway (0x301/0x303 flags, stable conventions) -> Python planner (0x300, older
        // conventions, ending 0.43 ms after its client) -> Rust trainer over gRPC.
        let rust = export(
            "gateway",
            vec![
                span(
                    A,
                    1,
                    0,
                    "POST /v1",
                    SERVER,
                    (0, 2000),
                    0x303,
                    &[("http.request.method", s("POST")), ("url.path", s("/v1"))],
                ),
                span(
                    A,
                    2,
                    1,
                    "POST",
                    CLIENT,
                    (100, 900),
                    0x103,
                    &[
                        ("http.request.method", s("POST")),
                        ("url.full", s("http://127.0.0.1:8000/plan")),
                    ],
                ),
            ],
        );
        let python = export(
            "planner",
            vec![
                span(
                    A,
                    3,
                    2,
                    "POST /plan",
                    SERVER,
                    (150, 1330),
                    0x300,
                    &[
                        ("http.method", s("POST")),
                        ("http.url", s("http://127.0.0.1:8000/plan")),
                    ],
                ),
                span(
                    A,
                    4,
                    3,
                    "p.S/M",
                    CLIENT,
                    (200, 800),
                    0x100,
                    &[
                        ("rpc.system", s("grpc")),
                        ("rpc.service", s("p.S")),
                        ("rpc.method", s("M")),
                    ],
                ),
            ],
        );
        let trainer = export(
            "trainer",
            vec![span(
                A,
                5,
                4,
                "p.S/M",
                SERVER,
                (210, 790),
                0x301,
                &[("rpc.system.name", s("grpc")), ("rpc.method", s("p.S/M"))],
            )],
        );
        assert_eq!(check(&[rust, python, trainer]), []);
    }

    #[test]
    fn findings_as_json_lines() {
        let f = Finding {
            rule: Rule::SelfParent,
            trace_ids: vec![TraceId::from_hex(A).unwrap()],
            span_ids: vec![SpanId(4u64.to_be_bytes())],
            services: vec!["svc".into()],
            message: "m".into(),
        };
        let v: Json = serde_json::from_str(&f.to_json()).unwrap();
        assert_eq!(
            v,
            json!({"finding": "self-parent", "severity": "warning", "trace_ids": [A],
                "span_ids": ["0000000000000004"], "services": ["svc"], "message": "m",
                "doc": "docs/doctor.md#self-parent"})
        );
        assert_eq!(
            f.to_string(),
            "warning[self-parent] m (docs/doctor.md#self-parent)"
        );
    }

    #[test]
    fn new_root_causes_round_trip() {
        for cause in [
            NewRootCause::NoTraceparent,
            NewRootCause::Rejected("traceparent-versions".into()),
            NewRootCause::UntrustedIgnored,
            NewRootCause::UntrustedLinked,
        ] {
            assert_eq!(NewRootCause::parse(&cause.value()), Some(cause));
        }
        assert_eq!(NewRootCause::parse("other"), None);
    }

    #[test]
    fn no_finding_rests_on_what_a_partial_trace_is_missing() {
        // gateway's CLIENT span (2) and the SERVER child (3) it got, then a span (4) whose
        // parent (5) the per-trace cap dropped; and another trace linking to a dropped span.
        let trace = "0af7651916cd43dd8448eb211c80319c";
        let other = "1af7651916cd43dd8448eb211c80319c";
        let http = [
            ("http.request.method", s("GET")),
            ("url.full", s("http://h/p")),
        ];
        let spans = vec![
            span(trace, 1, 0, "root", INTERNAL, (0, 100), 0x101, &[]),
            span(trace, 2, 1, "GET", CLIENT, (10, 90), 0x101, &http),
            span(trace, 4, 5, "child", INTERNAL, (20, 30), 0x101, &[]),
            span(trace, 3, 2, "GET /p", SERVER, (20, 80), 0x301, &http),
            span(trace, 5, 1, "dropped", INTERNAL, (15, 40), 0x101, &[]),
        ];
        let linking = link(
            span(other, 9, 0, "later", INTERNAL, (200, 300), 0x101, &[]),
            trace,
            5,
        );
        let lines = [export("gateway", spans), export("worker", vec![linking])];
        let mut assembler = Assembler::new(Config {
            max_spans_per_trace: 3,
            ..Config::default()
        });
        let now = Instant::now();
        for line in &lines {
            assembler.insert(decode_json(line.as_bytes()).unwrap().spans, now);
        }
        let mut doctor = Doctor::new(DoctorConfig::default());
        let findings: Vec<Finding> = assembler
            .flush()
            .into_iter()
            .flat_map(|id| doctor.diagnose(&assembler, id))
            .collect();
        assert_eq!(rules(&findings), Vec::<&str>::new());
        // The near miss: the same three spans held, the other two never sent (no bound
        // involved): a missing parent and a dangling link.
        let held = assembler
            .trace(&TraceId::from_hex(trace).unwrap())
            .map(|t| t.spans.len());
        assert_eq!(held, Some(3));
        let sent: Vec<Json> = lines_spans(trace, &http);
        let mut findings = check(&[
            export("gateway", sent),
            export(
                "worker",
                vec![link(
                    span(other, 9, 0, "later", INTERNAL, (200, 300), 0x101, &[]),
                    trace,
                    5,
                )],
            ),
        ]);
        findings.sort_by_key(|f| f.rule.id());
        assert_eq!(rules(&findings), ["dangling-link", "missing-parent"]);
    }

    fn lines_spans(trace: &str, http: &[(&str, Json)]) -> Vec<Json> {
        vec![
            span(trace, 1, 0, "root", INTERNAL, (0, 100), 0x101, &[]),
            span(trace, 2, 1, "GET", CLIENT, (10, 90), 0x101, http),
            span(trace, 4, 5, "child", INTERNAL, (20, 30), 0x101, &[]),
        ]
    }

    #[test]
    fn the_candidate_index_is_bounded() {
        let mut assembler = Assembler::new(Config::default());
        let mut doctor = Doctor::new(DoctorConfig {
            max_candidates: 10,
            ..DoctorConfig::default()
        });
        let now = Instant::now();
        for n in 1..=50u64 {
            let trace = format!("{n:032x}");
            let line = export(
                "gateway",
                vec![span(
                    &trace,
                    2,
                    0,
                    "GET",
                    CLIENT,
                    (n, n + 10),
                    0x101,
                    &[
                        ("http.request.method", s("GET")),
                        ("url.full", s("http://h/p")),
                    ],
                )],
            );
            assembler.insert(decode_json(line.as_bytes()).unwrap().spans, now);
        }
        for id in assembler.flush() {
            assert_eq!(doctor.diagnose(&assembler, id), []);
        }
        assert_eq!(doctor.candidates(), 10);
    }

    #[test]
    fn matched_hops_do_not_count_against_the_bound() {
        let mut assembler = Assembler::new(Config::default());
        let mut doctor = Doctor::new(DoctorConfig {
            max_candidates: 3,
            ..DoctorConfig::default()
        });
        let now = Instant::now();
        let client = |n: u64, at: u64| {
            export(
                "gateway",
                vec![span(
                    &format!("{n:032x}"),
                    2,
                    0,
                    "GET",
                    CLIENT,
                    (at, at + 500),
                    0x101,
                    &[
                        ("http.request.method", s("GET")),
                        ("url.full", s("http://h/p")),
                    ],
                )],
            )
        };
        let root = |n: u64, at: u64| {
            export(
                "planner",
                vec![span(
                    &format!("{n:032x}"),
                    7,
                    0,
                    "GET /p",
                    SERVER,
                    (at + 10, at + 20),
                    0x101,
                    &[("http.request.method", s("GET")), ("url.path", s("/p"))],
                )],
            )
        };
        let mut found = Vec::new();
        let mut run = |line: String, found: &mut Vec<Finding>| {
            assembler.insert(decode_json(line.as_bytes()).unwrap().spans, now);
            for id in assembler.flush() {
                found.extend(doctor.diagnose(&assembler, id));
            }
        };
        // One client waits (at 0 ms) while ten other hops are matched (from 10 ms on)...
        run(client(1, 0), &mut found);
        for n in 1..=10u64 {
            run(client(100 + n, n * 10_000), &mut found);
            run(root(200 + n, n * 10_000), &mut found);
        }
        assert_eq!(found.len(), 10);
        // ... and is still there for its server.
        run(root(300, 0), &mut found);
        assert_eq!(found.len(), 11);
        assert_eq!(
            found[10].trace_ids[0],
            TraceId::from_hex(&format!("{:032x}", 1)).unwrap()
        );
    }
}
