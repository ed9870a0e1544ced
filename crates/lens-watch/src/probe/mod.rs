//! The path a probe request took, hop by hop, and what of its context survived each hop: a
//! traceroute for trace context (`lens probe`).
//!
//! The probe sends one request with a context made to be recognised ([`Sent`]), and records
//! its own CLIENT span ([`Sent::client_span`]) beside the spans the services export, so that
//! the doctor can pair the first hop too. [`Route::build`] then reads the probe's trace from a
//! [`Session`]: every span that received a context from another process (a SERVER or CONSUMER
//! span whose parent is remote, in another service, or never exported) is a hop, compared with
//! what its sender had. A sender span (CLIENT or PRODUCER) with no receiver is a hop too: lost
//! when the doctor paired it with the new trace its receiver started (`lost-context`), unseen
//! otherwise, never guessed.
//!
//! ```
//! use lens_watch::model::{SpanId, TraceId};
//! use lens_watch::probe::{Route, Sent};
//! use lens_watch::session::{Session, SessionConfig};
//!
//! let sent = Sent::new(TraceId([7; 16]), SpanId([1; 8]), "lens=probe,vendor=x", ["lens.probe"]);
//! let mut session = Session::new(SessionConfig::default());
//! let now = std::time::Instant::now();
//! session.ingest(lens_watch::decode::Batch::new(vec![sent.client_span("http://127.0.0.1:1/", "GET", 0, 1)]), now);
//! let route = Route::build(&sent, &session);
//! // The probe's request reached nothing that exports: one hop, unseen.
//! assert_eq!(route.hops.len(), 1);
//! assert!(route.hops[0].to.is_none());
//! ```

use std::sync::Arc;

use crate::diagnose::{
    BAGGAGE_KEYS_ATTRIBUTE as BAGGAGE_KEYS, Finding, NEW_ROOT_ATTRIBUTE as NEW_ROOT, Rule,
    baggage_keys, split_url, trace_state_entries,
};
use crate::model::{
    FLAG_HAS_IS_REMOTE, KeyValue, Resource, Scope, Span, SpanId, SpanKind, Status, TraceId, Value,
};
use crate::session::Session;

/// The service name of the probe's own CLIENT span.
pub const PROBE_SERVICE: &str = "lens probe";

/// What the probe sent with its request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Sent {
    /// The probe's trace.
    pub trace_id: TraceId,
    /// The probe's span: the parent the first service should see.
    pub span_id: SpanId,
    /// The W3C trace flags sent (`03`: sampled and random).
    pub flags: u8,
    /// The `tracestate` header sent.
    pub trace_state: String,
    /// The keys of the `baggage` header sent.
    pub baggage_keys: Vec<String>,
}

impl Sent {
    /// A probe context: `trace_id` / `span_id`, flags `03`, `trace_state` as the header value,
    /// and the baggage keys.
    pub fn new<K: Into<String>>(
        trace_id: TraceId,
        span_id: SpanId,
        trace_state: &str,
        baggage_keys: impl IntoIterator<Item = K>,
    ) -> Self {
        Sent {
            trace_id,
            span_id,
            flags: 0x03,
            trace_state: trace_state.to_owned(),
            baggage_keys: baggage_keys.into_iter().map(Into::into).collect(),
        }
    }

    /// The same context unsampled: flags `02` (the random flag kept, the sampled flag off), for
    /// `lens probe --unsampled`: no hop should record a span of it.
    pub fn unsampled(mut self) -> Self {
        self.flags = 0x02;
        self
    }

    /// Whether the probe asked for its request to be sampled.
    pub fn sampled(&self) -> bool {
        self.flags & 0x01 != 0
    }

    /// The `traceparent` header value.
    pub fn traceparent(&self) -> String {
        format!("00-{}-{}-{:02x}", self.trace_id, self.span_id, self.flags)
    }

    /// The probe's own CLIENT span for a request to `url` with `method`, from `start` to `end`
    /// (nanoseconds since the Unix epoch): service [`PROBE_SERVICE`], the HTTP client
    /// conventions (`http.request.method`, `url.full`, `server.address`, `server.port`).
    pub fn client_span(&self, url: &str, method: &str, start: u64, end: u64) -> Span {
        self.span(
            SpanKind::Client,
            Sent::http_client_attributes(url, method),
            start,
            end,
        )
    }

    /// The HTTP client conventions' attributes of a request to `url` with `method`:
    /// `http.request.method`, `url.full`, `server.address`, `server.port`.
    pub fn http_client_attributes(url: &str, method: &str) -> Vec<KeyValue> {
        let mut attributes = vec![
            KeyValue::new("http.request.method", Value::String(method.to_owned())),
            KeyValue::new("url.full", Value::String(url.to_owned())),
        ];
        if let Some((host, port, _)) = split_url(url).filter(|(host, ..)| !host.is_empty()) {
            attributes.push(KeyValue::new("server.address", Value::String(host)));
            if let Some(port) = port {
                attributes.push(KeyValue::new("server.port", Value::Int(i64::from(port))));
            }
        }
        attributes
    }

    /// `lens.baggage.keys` of what the probe sent, as a lens client records it.
    fn baggage_keys_attribute(&self) -> KeyValue {
        KeyValue::new(
            BAGGAGE_KEYS,
            Value::Array(
                self.baggage_keys
                    .iter()
                    .map(|k| Value::String(k.clone()))
                    .collect(),
            ),
        )
    }

    /// The probe's own span of `kind` with `attributes` (a gRPC call, a published message).
    pub fn span(
        &self,
        kind: SpanKind,
        mut attributes: Vec<KeyValue>,
        start: u64,
        end: u64,
    ) -> Span {
        attributes.push(self.baggage_keys_attribute());
        Span {
            trace_id: self.trace_id,
            span_id: self.span_id,
            parent_span_id: None,
            trace_state: self.trace_state.clone(),
            flags: u32::from(self.flags) | FLAG_HAS_IS_REMOTE,
            name: "lens probe".to_owned(),
            kind,
            resource: Arc::new(Resource::for_service(PROBE_SERVICE)),
            scope: Arc::new(Scope {
                name: "lens-probe".into(),
                version: String::new(),
            }),
            start_unix_nano: start,
            end_unix_nano: end.max(start),
            attributes,
            events: Vec::new(),
            links: Vec::new(),
            status: Status::Unset,
        }
    }
}

/// Whether the trace continued over a hop.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TraceVerdict {
    /// The receiver's span is in the sender's trace.
    Kept,
    /// The receiver started trace `new_trace` (the doctor paired it with the sender's span),
    /// for `cause` when its server says (`lens.trace.new_root`).
    Lost {
        /// The trace the receiver started.
        new_trace: TraceId,
        /// `lens.trace.new_root` of the receiver's span, when it records one.
        cause: Option<String>,
    },
    /// No span of the receiver arrived: it is not instrumented, or does not export here.
    Unseen,
}

/// Whether the receiver's parent is the sender's span.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParentVerdict {
    /// The receiver's parent is the sender's span.
    Kept,
    /// The receiver's parent is a span nobody exported: an unreported hop in between (a proxy
    /// or an uninstrumented service that put its own span id in `traceparent`).
    Reparented {
        /// The parent the receiver saw.
        parent: SpanId,
    },
    /// Nothing to compare (the hop was lost or is unseen).
    NotApplicable,
}

/// Whether the sampled and random flags arrived.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FlagsVerdict {
    /// The receiver reports the flags its sender had.
    Kept(u8),
    /// The receiver reports flags without one its sender had.
    Dropped {
        /// The sender's flags.
        sent: u8,
        /// The receiver's.
        received: u8,
    },
    /// The receiver's exporter does not report trace flags (Python's does not).
    NotReported,
    /// Nothing to compare.
    NotApplicable,
}

/// What became of the sender's `tracestate`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TraceStateVerdict {
    /// The same entries.
    Kept,
    /// Every entry the sender had, after entries added or updated at the front (as a vendor
    /// does for its own entry): fine.
    Added {
        /// The keys added or updated at the front.
        keys: Vec<String>,
    },
    /// Entries the sender had are missing (all of them: the header was dropped).
    Dropped {
        /// The missing keys.
        keys: Vec<String>,
    },
    /// Nothing to compare (the sender had none, or the hop was lost or is unseen).
    NotApplicable,
}

/// What became of the probe's baggage.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BaggageVerdict {
    /// The receiver lists every key the probe sent.
    Kept,
    /// The receiver lists its baggage keys, without these the probe sent.
    Dropped {
        /// The missing keys.
        keys: Vec<String>,
    },
    /// The receiver does not say which baggage keys it received (`lens.baggage.keys`, what
    /// lens's adapters record `with_baggage_keys(true)`).
    NotObservable,
    /// Nothing to compare.
    NotApplicable,
}

/// One hop of the route.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Hop {
    /// The sending service ([`PROBE_SERVICE`] for the first hop).
    pub from: String,
    /// The receiving service; `None` when unseen.
    pub to: Option<String>,
    /// The receiving instance (`service.instance.id`, else the host attributes), when its
    /// span arrived and its resource names one.
    pub to_instance: Option<String>,
    /// The kind of crossing: `http`, `grpc` (the RPC system), `messaging`, else the
    /// receiver's span kind.
    pub kind: String,
    /// The trace the hop starts in.
    pub trace_id: TraceId,
    /// The sender's span, when it was exported.
    pub sender: Option<SpanId>,
    /// The receiver's span, when it was exported.
    pub receiver: Option<SpanId>,
    /// Whether the hop is in the probe's trace (else after a lost hop, in a trace a receiver
    /// started: only the trace and the parent are compared there).
    pub in_probe_trace: bool,
    /// The trace.
    pub trace: TraceVerdict,
    /// The parent.
    pub parent: ParentVerdict,
    /// The flags.
    pub flags: FlagsVerdict,
    /// The tracestate.
    pub trace_state: TraceStateVerdict,
    /// The baggage.
    pub baggage: BaggageVerdict,
}

impl Hop {
    /// The doctor's rule ids of what broke on this hop (`lost-context`, `missing-parent`,
    /// `flag-dropped`, `tracestate-dropped`, `baggage-dropped`), for `--allow`.
    pub fn broken(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if matches!(self.trace, TraceVerdict::Lost { .. }) {
            out.push(Rule::LostContext.id());
        }
        if matches!(self.parent, ParentVerdict::Reparented { .. }) {
            out.push(Rule::MissingParent.id());
        }
        if matches!(self.flags, FlagsVerdict::Dropped { .. }) {
            out.push(Rule::FlagDropped.id());
        }
        if matches!(self.trace_state, TraceStateVerdict::Dropped { .. }) {
            out.push(Rule::TracestateDropped.id());
        }
        if matches!(self.baggage, BaggageVerdict::Dropped { .. }) {
            out.push(Rule::BaggageDropped.id());
        }
        out
    }
}

/// The route of a probe request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Route {
    /// What was sent.
    pub sent: Sent,
    /// The hops in the order the request crossed them (by the receiver's start).
    pub hops: Vec<Hop>,
    /// Spans of the probe's trace, its own CLIENT span not counted.
    pub spans: usize,
    /// For an unsampled probe ([`Sent::unsampled`]): whether a hop recorded it anyway.
    pub sampling: Option<Sampling>,
}

/// What became of an unsampled probe request: every hop should keep the flag and record nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Sampling {
    /// The first hop whose receiving side recorded a span of the request, if any.
    pub forced: Option<ForcedHop>,
    /// How many hops of the route stayed silent, of how many: known from a sampled request
    /// along the same route ([`Route::compare_sampling`]).
    pub silent: Option<(usize, usize)>,
}

/// The first hop whose receiving side recorded a span of an unsampled request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ForcedHop {
    /// The sender, when its span was recorded or a sampled request named it; `?` otherwise.
    pub from: String,
    /// The service that recorded the span.
    pub to: String,
    /// Its instance (`service.instance.id`, else the host attributes).
    pub to_instance: Option<String>,
    /// The kind of crossing.
    pub kind: String,
    /// The first span it recorded.
    pub span_id: SpanId,
    /// The flags its exporter reported for it (`01`/`03`: it sampled what arrived unsampled).
    pub flags: Option<u8>,
}

/// The most traces a route follows (the probe's, and those lost hops started).
const MAX_TRACES: usize = 16;

impl Route {
    /// The route of the probe `sent` through the spans held by `session`, which holds the
    /// probe's own span ([`Sent::client_span`]) and has diagnosed the traces (lost hops are
    /// read from its `lost-context` findings).
    pub fn build(sent: &Sent, session: &Session) -> Route {
        let findings: Vec<&Finding> = session
            .findings()
            .filter(|f| f.rule == Rule::LostContext)
            .collect();
        let mut hops = Vec::new();
        let mut traces = vec![(sent.trace_id, true)];
        let mut spans = 0;
        let mut i = 0;
        while i < traces.len() && i < MAX_TRACES {
            let (trace_id, in_probe_trace) = traces[i];
            i += 1;
            let Some(entry) = session.assembler().trace(&trace_id) else {
                continue;
            };
            if in_probe_trace {
                spans = entry
                    .spans
                    .iter()
                    .filter(|s| s.service() != PROBE_SERVICE)
                    .count();
            }
            let mut found = trace_hops(sent, &entry.spans, in_probe_trace, &findings, session);
            for hop in &found {
                if let TraceVerdict::Lost { new_trace, .. } = hop.trace
                    && !traces.iter().any(|(t, _)| *t == new_trace)
                {
                    traces.push((new_trace, false));
                }
            }
            hops.append(&mut found);
        }
        let sampling = (!sent.sampled()).then(|| Sampling {
            forced: session
                .assembler()
                .trace(&sent.trace_id)
                .and_then(|entry| first_recorded(&entry.spans, &hops)),
            silent: None,
        });
        Route {
            sent: sent.clone(),
            hops,
            spans,
            sampling,
        }
    }

    /// For an unsampled route: names the sender of the forced hop and counts the hops that
    /// stayed silent, from `reference`, the route of a sampled request through the same
    /// services. Does nothing to a sampled route.
    pub fn compare_sampling(&mut self, reference: &Route) {
        let Some(sampling) = &mut self.sampling else {
            return;
        };
        let receivers: Vec<&Hop> = reference.hops.iter().filter(|h| h.to.is_some()).collect();
        let recorded = |service: &str| {
            self.hops
                .iter()
                .any(|h| h.to.as_deref() == Some(service) && h.receiver.is_some())
                || self.hops.iter().any(|h| h.from == service)
        };
        let silent = receivers
            .iter()
            .filter(|h| !recorded(h.to.as_deref().unwrap_or_default()))
            .count();
        sampling.silent = Some((silent, receivers.len()));
        if let Some(forced) = &mut sampling.forced
            && forced.from == "?"
            && let Some(hop) = receivers
                .iter()
                .find(|h| h.to.as_deref() == Some(forced.to.as_str()))
        {
            forced.from.clone_from(&hop.from);
        }
    }

    /// The rule ids of everything that broke, in hop order, less those in `allow`. Of an
    /// unsampled route only `sampling-forced`: the spans of a forced hop are judged no further.
    pub fn broken<'a>(&'a self, allow: &'a [String]) -> impl Iterator<Item = &'static str> + 'a {
        let rules: Vec<&'static str> = match &self.sampling {
            Some(sampling) => sampling
                .forced
                .iter()
                .map(|_| Rule::SamplingForced.id())
                .collect(),
            None => self.hops.iter().flat_map(Hop::broken).collect(),
        };
        rules
            .into_iter()
            .filter(move |rule| !allow.iter().any(|a| a == rule))
    }

    /// Whether no service exported anything of the request: nothing to report on (what an
    /// unsampled request should leave).
    pub fn saw_nothing(&self) -> bool {
        self.hops.iter().all(|h| h.trace == TraceVerdict::Unseen)
    }
}

/// The first span of `spans` (the probe's own left out) a service recorded: the hop it names,
/// from the route's `hops` where one has it as its receiver.
fn first_recorded(spans: &[Span], hops: &[Hop]) -> Option<ForcedHop> {
    let first = spans
        .iter()
        .filter(|s| s.service() != PROBE_SERVICE)
        .min_by_key(|s| s.start_unix_nano)?;
    // The span that received the request in that service: the first one's local root.
    let mut receiver = first;
    while let Some(parent) = receiver
        .parent_span_id
        .and_then(|p| spans.iter().find(|s| s.span_id == p))
        .filter(|p| p.service() == first.service())
    {
        receiver = parent;
    }
    let hop = hops.iter().find(|h| h.receiver == Some(receiver.span_id));
    // The sender, where its span was recorded (an unrecorded parent is what an unsampled
    // request should leave: a sampled request along the route names it).
    let from = spans
        .iter()
        .find(|s| Some(s.span_id) == receiver.parent_span_id)
        .map_or_else(|| "?".to_owned(), |s| s.service().to_owned());
    Some(ForcedHop {
        from,
        to: receiver.service().to_owned(),
        to_instance: receiver.resource.instance().map(str::to_owned),
        kind: hop.map_or_else(|| crossing(receiver), |h| h.kind.clone()),
        span_id: receiver.span_id,
        flags: reported_flags(receiver),
    })
}

/// Whether `span` received its context from another process: a SERVER or CONSUMER span whose
/// parent is remote, in another service, or not in the trace.
fn is_receiver(span: &Span, spans: &[Span]) -> bool {
    if !matches!(span.kind, SpanKind::Server | SpanKind::Consumer) {
        return false;
    }
    let Some(parent) = span.parent_span_id else {
        return false;
    };
    if span.parent_is_remote() == Some(true) {
        return true;
    }
    spans
        .iter()
        .find(|s| s.span_id == parent)
        .is_none_or(|p| p.service() != span.service())
}

/// The kind of crossing a receiving span stands for.
fn crossing(span: &Span) -> String {
    let rpc = span
        .attribute("rpc.system.name")
        .or_else(|| span.attribute("rpc.system"))
        .and_then(Value::as_str);
    if let Some(system) = rpc {
        return system.to_owned();
    }
    if span.attribute("http.request.method").is_some() || span.attribute("http.method").is_some() {
        return "http".to_owned();
    }
    if span.attribute("messaging.system").is_some()
        || span.attribute("messaging.destination.name").is_some()
    {
        return "messaging".to_owned();
    }
    span.kind.name().to_lowercase()
}

/// The W3C trace flags of `span` when its exporter reports them: an exported span was
/// sampled, so flags without the sampled bit were not reported.
fn reported_flags(span: &Span) -> Option<u8> {
    let flags = (span.flags & 0xff) as u8;
    (flags & 0x01 != 0).then_some(flags)
}

fn compare_trace_state(sent: &str, received: &str) -> TraceStateVerdict {
    let sent: Vec<(&str, &str)> = trace_state_entries(sent).collect();
    if sent.is_empty() {
        return TraceStateVerdict::NotApplicable;
    }
    let received: Vec<(&str, &str)> = trace_state_entries(received).collect();
    let missing: Vec<String> = sent
        .iter()
        .filter(|(k, _)| !received.iter().any(|(r, _)| r == k))
        .map(|(k, _)| (*k).to_owned())
        .collect();
    if !missing.is_empty() {
        return TraceStateVerdict::Dropped { keys: missing };
    }
    if sent == received {
        return TraceStateVerdict::Kept;
    }
    // Every key is there: what differs was added or updated (a vendor moves its own entry to
    // the front when it updates it).
    let keys = received
        .iter()
        .filter(|entry| !sent.contains(entry))
        .map(|(k, _)| (*k).to_owned())
        .collect();
    TraceStateVerdict::Added { keys }
}

fn compare_baggage(sent: &[String], receiver: &Span) -> BaggageVerdict {
    if sent.is_empty() {
        return BaggageVerdict::NotApplicable;
    }
    let Some(keys) = baggage_keys(receiver) else {
        return BaggageVerdict::NotObservable;
    };
    let missing: Vec<String> = sent
        .iter()
        .filter(|k| !keys.contains(&k.as_str()))
        .cloned()
        .collect();
    if missing.is_empty() {
        BaggageVerdict::Kept
    } else {
        BaggageVerdict::Dropped { keys: missing }
    }
}

/// The hops of one trace: its receiving spans, and its senders with no receiver.
fn trace_hops(
    sent: &Sent,
    spans: &[Span],
    in_probe_trace: bool,
    findings: &[&Finding],
    session: &Session,
) -> Vec<Hop> {
    let by_id = |id: SpanId| spans.iter().find(|s| s.span_id == id);
    // Senders (CLIENT, PRODUCER) that no receiver in this trace names as its parent.
    let mut orphans: Vec<&Span> = spans
        .iter()
        .filter(|s| {
            matches!(s.kind, SpanKind::Client | SpanKind::Producer)
                && !spans
                    .iter()
                    .any(|r| r.parent_span_id == Some(s.span_id) && is_receiver(r, spans))
        })
        .collect();
    let mut ordered: Vec<(u64, Hop)> = Vec::new();
    for receiver in spans.iter().filter(|s| is_receiver(s, spans)) {
        let Some(parent_id) = receiver.parent_span_id else {
            continue;
        };
        let exported = by_id(parent_id);
        // A parent nobody exported: an unreported hop in between. Its sender is the orphan of
        // another service that was waiting on the wire when the receiver started.
        let through = exported.is_none().then(|| {
            orphans
                .iter()
                .enumerate()
                .filter(|(_, s)| {
                    s.service() != receiver.service()
                        && s.start_unix_nano <= receiver.start_unix_nano
                        && receiver.start_unix_nano <= s.end_unix_nano
                })
                .max_by_key(|(_, s)| s.start_unix_nano)
                .map(|(i, _)| i)
        });
        let through = through.flatten().map(|i| orphans.remove(i));
        let sender = exported.or(through);
        let from = sender.map_or("?", Span::service).to_owned();
        let (parent, flags, trace_state, baggage) = match sender {
            None => (
                ParentVerdict::Reparented { parent: parent_id },
                FlagsVerdict::NotApplicable,
                TraceStateVerdict::NotApplicable,
                BaggageVerdict::NotApplicable,
            ),
            Some(sender) => {
                let flags = match (reported_flags(sender), reported_flags(receiver)) {
                    (Some(s), Some(r)) if s & !r != 0 => FlagsVerdict::Dropped {
                        sent: s,
                        received: r,
                    },
                    (Some(_), Some(r)) => FlagsVerdict::Kept(r),
                    _ => FlagsVerdict::NotReported,
                };
                let baggage = if in_probe_trace {
                    compare_baggage(&sent.baggage_keys, receiver)
                } else {
                    BaggageVerdict::NotApplicable
                };
                let parent = if exported.is_some() {
                    ParentVerdict::Kept
                } else {
                    ParentVerdict::Reparented { parent: parent_id }
                };
                (
                    parent,
                    flags,
                    compare_trace_state(&sender.trace_state, &receiver.trace_state),
                    baggage,
                )
            }
        };
        ordered.push((
            receiver.start_unix_nano,
            Hop {
                from,
                to: Some(receiver.service().to_owned()),
                to_instance: receiver.resource.instance().map(str::to_owned),
                kind: crossing(receiver),
                trace_id: receiver.trace_id,
                sender: sender.map(|s| s.span_id),
                receiver: Some(receiver.span_id),
                in_probe_trace,
                trace: TraceVerdict::Kept,
                parent,
                flags,
                trace_state,
                baggage,
            },
        ));
    }
    // Senders nobody received in this trace: lost (paired by the doctor) or unseen.
    for sender in orphans {
        let paired = findings
            .iter()
            .find(|f| f.span_ids.first() == Some(&sender.span_id) && f.trace_ids.len() == 2);
        let (to, to_instance, trace, receiver, kind) = match paired {
            Some(f) => {
                let new_trace = f.trace_ids[1];
                let receiver = f.span_ids.get(1).copied();
                let span = receiver.and_then(|r| {
                    session
                        .assembler()
                        .trace(&new_trace)
                        .and_then(|t| t.spans.iter().find(|s| s.span_id == r))
                });
                let cause = span
                    .and_then(|s| s.attribute(NEW_ROOT))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                (
                    f.services.get(1).cloned(),
                    span.and_then(|s| s.resource.instance().map(str::to_owned)),
                    TraceVerdict::Lost { new_trace, cause },
                    receiver,
                    span.map_or_else(|| crossing(sender), crossing),
                )
            }
            None => (None, None, TraceVerdict::Unseen, None, crossing(sender)),
        };
        ordered.push((
            sender.end_unix_nano,
            Hop {
                from: sender.service().to_owned(),
                to,
                to_instance,
                kind,
                trace_id: sender.trace_id,
                sender: Some(sender.span_id),
                receiver,
                in_probe_trace,
                trace,
                parent: ParentVerdict::NotApplicable,
                flags: FlagsVerdict::NotApplicable,
                trace_state: TraceStateVerdict::NotApplicable,
                baggage: BaggageVerdict::NotApplicable,
            },
        ));
    }
    ordered.sort_by_key(|(at, _)| *at);
    ordered.into_iter().map(|(_, hop)| hop).collect()
}

mod bleed;
mod repeat;
mod report;

pub use bleed::{Bleed, find_bleeds};
pub use repeat::{HopTally, InstanceTally, Tally};

#[cfg(test)]
mod tests;
