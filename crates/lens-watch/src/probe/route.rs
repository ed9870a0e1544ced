//! The route of a probe request ([`Route`]): its hops read from a session's spans and the
//! doctor's `lost-context` findings, and what became of an unsampled request.

use super::hop::{
    BaggageVerdict, FlagsVerdict, Hop, ParentVerdict, TraceStateVerdict, TraceVerdict,
};
use super::sent::{PROBE_SERVICE, Sent};
use crate::diagnose::{
    Finding, NEW_ROOT_ATTRIBUTE as NEW_ROOT, Rule, baggage_keys, trace_state_entries,
};
use crate::model::{Span, SpanId, SpanKind, Value};
use crate::session::Session;

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
