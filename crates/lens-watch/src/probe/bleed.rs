//! Context bleeding between concurrent probe requests: a service that attaches another
//! request's context (a variable holding the last request's context, a thread-local a worker
//! reuses, a context captured at startup) sends one request's call in another request's trace.
//! Every probe request has its own trace, so each trace should cross each hop as often as the
//! others do: a trace that crosses a hop more often than usual while another, whose sending
//! service did receive its request, crosses it less, holds the other's call; unless a span on
//! the way links to the other request's trace (a batch that serves both on purpose).

use super::hop::{Hop, TraceVerdict};
use super::route::Route;
use super::sent::PROBE_SERVICE;
use crate::model::{Span, SpanId, TraceId};
use crate::session::Session;

/// One probe request's call that arrived in another probe request's trace.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Bleed {
    /// The sending service (the one that attached the wrong context).
    pub from: String,
    /// The receiving service.
    pub to: String,
    /// The receiving instance (`service.instance.id`, else the host attributes).
    pub to_instance: Option<String>,
    /// The kind of crossing.
    pub kind: String,
    /// The request whose call it was: its trace is missing the call.
    pub request: TraceId,
    /// The request whose trace the call arrived in.
    pub into: TraceId,
    /// The receiving span, in `into`.
    pub receiver: SpanId,
}

/// The calls of `routes` (probe requests sent at once, each its own trace) that arrived in
/// another request's trace, read from the spans `session` holds.
pub fn find_bleeds(routes: &[Route], session: &Session) -> Vec<Bleed> {
    let mut bleeds = Vec::new();
    if routes.len() < 2 || routes.iter().any(|r| r.sampling.is_some()) {
        return bleeds;
    }
    let received = |route: &Route, service: &str| {
        route.hops.iter().any(|h| {
            h.in_probe_trace && h.to.as_deref() == Some(service) && h.trace == TraceVerdict::Kept
        })
    };
    // The hops between services (the probe's own first hop cannot bleed).
    let mut keys: Vec<(&str, &str, &str)> = Vec::new();
    for hop in routes.iter().flat_map(|r| &r.hops) {
        if let Some(key) = key(hop)
            && !keys.contains(&key)
        {
            keys.push(key);
        }
    }
    for (from, to, kind) in keys {
        fn crossings<'r>(route: &'r Route, of: (&str, &str, &str)) -> Vec<&'r Hop> {
            route.hops.iter().filter(|h| key(h) == Some(of)).collect()
        }
        // The routes whose sender received its request: how often they cross the hop.
        let counted: Vec<(&Route, Vec<&Hop>)> = routes
            .iter()
            .filter(|r| received(r, from))
            .map(|r| (r, crossings(r, (from, to, kind))))
            .collect();
        if counted.is_empty() {
            continue;
        }
        let total: usize = counted.iter().map(|(_, c)| c.len()).sum();
        let usual = (total + counted.len() / 2) / counted.len();
        let mut short: Vec<&Route> = Vec::new();
        for (route, crossed) in &counted {
            for _ in crossed.len()..usual {
                short.push(route);
            }
        }
        for (into, crossed) in &counted {
            let Some(spans) = session
                .assembler()
                .trace(&into.sent.trace_id)
                .map(|t| t.spans.as_slice())
            else {
                continue;
            };
            let mut extra = crossed.len().saturating_sub(usual);
            // Calls that link to the request they serve (a batch): on purpose, not a bleed.
            let mut unlinked = Vec::new();
            for hop in crossed.iter() {
                let linked = linked_traces(spans, hop.sender);
                match short.iter().position(|r| linked.contains(&r.sent.trace_id)) {
                    Some(at) if extra > 0 => {
                        short.remove(at);
                        extra -= 1;
                    }
                    _ if linked.iter().any(|t| *t != into.sent.trace_id) => {}
                    _ => unlinked.push(*hop),
                }
            }
            for hop in unlinked.into_iter().rev() {
                if extra == 0 || short.is_empty() {
                    break;
                }
                let Some(receiver) = hop.receiver else {
                    continue;
                };
                // The request whose call it was: one missing a call, whose sending service was
                // handling it when this call went out.
                let sent_at = hop
                    .sender
                    .and_then(|id| spans.iter().find(|s| s.span_id == id))
                    .map_or(0, |s| s.start_unix_nano);
                let Some(at) = short.iter().position(|r| {
                    r.sent.trace_id != into.sent.trace_id && handling(r, from, session, sent_at)
                }) else {
                    continue;
                };
                let request = short.remove(at);
                extra -= 1;
                bleeds.push(Bleed {
                    from: from.to_owned(),
                    to: to.to_owned(),
                    to_instance: hop.to_instance.clone(),
                    kind: kind.to_owned(),
                    request: request.sent.trace_id,
                    into: into.sent.trace_id,
                    receiver,
                });
            }
        }
    }
    bleeds
}

/// A hop between two services of a probe's trace, by sender, receiver and kind.
fn key(hop: &Hop) -> Option<(&str, &str, &str)> {
    let to = hop.to.as_deref()?;
    (hop.in_probe_trace
        && hop.from != PROBE_SERVICE
        && hop.from != "?"
        && hop.trace == TraceVerdict::Kept
        && hop.receiver.is_some())
    .then_some((hop.from.as_str(), to, hop.kind.as_str()))
}

/// The traces linked from `sender` and its ancestors in its own service.
fn linked_traces(spans: &[Span], sender: Option<SpanId>) -> Vec<TraceId> {
    let mut out = Vec::new();
    let mut at = sender.and_then(|id| spans.iter().find(|s| s.span_id == id));
    let service = at.map(Span::service);
    let mut steps = 0;
    while let Some(span) = at.filter(|s| Some(s.service()) == service) {
        out.extend(span.links.iter().map(|l| l.trace_id));
        at = span
            .parent_span_id
            .and_then(|p| spans.iter().find(|s| s.span_id == p));
        steps += 1;
        if steps > 64 {
            break;
        }
    }
    out
}

/// Whether `service` was handling `route`'s request at `at` (ns since the epoch; 0: unknown).
fn handling(route: &Route, service: &str, session: &Session, at: u64) -> bool {
    if at == 0 {
        return true;
    }
    let Some(hop) = route
        .hops
        .iter()
        .find(|h| h.to.as_deref() == Some(service) && h.in_probe_trace)
    else {
        return false;
    };
    session
        .assembler()
        .trace(&route.sent.trace_id)
        .and_then(|t| t.spans.iter().find(|s| Some(s.span_id) == hop.receiver))
        .is_none_or(|s| s.start_unix_nano <= at && at <= s.end_unix_nano)
}
