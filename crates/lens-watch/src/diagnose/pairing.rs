//! The lost hop: childless CLIENT spans and new-root SERVER spans wait in an index keyed by the
//! request and ordered by start time, each completion pairing its own with the tightest fit
//! on the other side; bounded by count and by age.

use std::sync::Arc;

use super::candidates::PendingLink;
use super::conventions::{Candidate, Role, candidate};
use super::doctor::{Doctor, DoctorConfig, Traces};
use super::finding::Finding;
use super::hop_findings::{Pairing, ambiguous_hop, lost_context, untrusted_linked};
use super::new_root::NewRootCause;
use crate::model::{Span, SpanKind};
/// Whether a server span began and ended within a client span (with the tolerances), in
/// another service and another trace.
pub(super) fn within(client: &Candidate, server: &Candidate, config: &DoctorConfig) -> bool {
    if client.service == server.service || client.trace_id == server.trace_id {
        return false;
    }
    server.start.saturating_add(config.start_tolerance_nanos) >= client.start
        && server.start <= client.end.saturating_add(config.start_tolerance_nanos)
        && server.end <= client.end.saturating_add(config.end_margin_nanos)
}

/// Whether a server span began and ended within a client span (with the tolerances), for the
/// same query, at the address the client called (when both say).
pub(super) fn matches(client: &Candidate, server: &Candidate, config: &DoctorConfig) -> bool {
    within(client, server, config)
        && client.address.same_query(&server.address)
        && client.address.reached(&server.address)
}

/// How far a new root is from saying that no context arrived, for pairing by request: 0 for a
/// lens server that received no traceparent or rejected it, 1 for one that says nothing (not
/// lens) or that its policy ignored a context.
fn preference(server: &Candidate) -> u8 {
    match server.cause {
        Some(NewRootCause::NoTraceparent | NewRootCause::Rejected(_)) => 0,
        _ => 1,
    }
}

/// The most candidates one completion looks at: the per-completion cost stays flat however
/// many wait for the same request.
const MAX_SCAN: usize = 1024;

/// The most candidates an `ambiguous-hop` warning lists.
pub(super) const MAX_LISTED: usize = 8;

/// What one completion found on the other side.
#[derive(Debug, PartialEq)]
pub(super) enum Pick {
    /// One at the address the client called: the tightest fit.
    Address((u64, u64)),
    /// None at the address, exactly one by request and time.
    Request((u64, u64)),
    /// None at the address, several by request and time (at most [`MAX_LISTED`], and how many
    /// in all).
    Several(Vec<(u64, u64)>, usize),
    /// None.
    Nothing,
}

/// Of `candidates` (in order of start, moving away from the other side's start), the one that
/// fits at the client's address with the least gap (`fit`: the gap, or `None` when it does
/// not match); else those that fit by request (`by_request`: the preference of one that does,
/// lowest first, see [`preference`]). The gap is at least the distance between the two
/// starts, so the scan stops at the first candidate whose `distance` (once moving away) is no
/// less than the best gap found; it looks at [`MAX_SCAN`] candidates at most.
pub(super) fn tightest<'a>(
    candidates: impl Iterator<Item = (&'a (u64, u64), &'a Candidate)>,
    distance: impl Fn(&Candidate) -> Option<u64>,
    fit: impl Fn(&Candidate) -> Option<u64>,
    by_request: impl Fn(&Candidate) -> Option<u8>,
) -> Pick {
    let mut best: Option<((u64, u64), u64)> = None;
    // (preference, at) of the request fits, and how many of the best preference.
    let mut requests: Vec<(u8, (u64, u64))> = Vec::new();
    let mut best_preference = u8::MAX;
    let mut of_best = 0usize;
    for (at, c) in candidates.take(MAX_SCAN) {
        if let (Some((_, least)), Some(d)) = (best, distance(c))
            && d >= least
        {
            break;
        }
        if let Some(g) = fit(c) {
            if best.is_none_or(|(_, least)| g < least) {
                best = Some((*at, g));
            }
        } else if best.is_none()
            && let Some(p) = by_request(c)
        {
            if p < best_preference {
                best_preference = p;
                of_best = 0;
                requests.clear();
            }
            if p == best_preference {
                of_best += 1;
                if requests.len() < MAX_LISTED {
                    requests.push((p, *at));
                }
            }
        }
    }
    if let Some((at, _)) = best {
        return Pick::Address(at);
    }
    let listed: Vec<(u64, u64)> = requests
        .into_iter()
        .filter(|(p, _)| *p == best_preference)
        .map(|(_, at)| at)
        .collect();
    match (of_best, listed.first()) {
        (1, Some(at)) => Pick::Request(*at),
        (0, _) | (_, None) => Pick::Nothing,
        _ => Pick::Several(listed, of_best),
    }
}

/// How far a server span is from filling its client span: the time from the client's start to
/// the server's, plus from the server's end to the client's. Of the requests alike in every
/// attribute and in flight together, the true pair is the tightest (one network latency each
/// way); the doctor pairs the candidates with the least gap.
pub(super) fn gap(client: &Candidate, server: &Candidate) -> u64 {
    server
        .start
        .abs_diff(client.start)
        .saturating_add(client.end.abs_diff(server.end))
}

/// Whether a server span fits a client span by the request and time alone (the addresses
/// differ: a proxy or load balancer between them), and with what preference.
pub(super) fn by_request(
    client: &Candidate,
    server: &Candidate,
    config: &DoctorConfig,
) -> Option<u8> {
    (within(client, server, config) && client.address.same_query(&server.address))
        .then(|| preference(server))
}

impl Doctor {
    pub(super) fn new_root(
        &mut self,
        others: &dyn Traces,
        span: &Span,
        findings: &mut Vec<Finding>,
    ) {
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
            if let Some(linked) = others.complete(&link.trace_id) {
                let childless = |client: &Span| {
                    !linked
                        .iter()
                        .any(|s| s.parent_span_id == Some(client.span_id))
                };
                if let Some(client) = linked.iter().find(|s| {
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
        let found = self.clients.by_key.get(&key).map(|clients| {
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
                |c| by_request(c, &server, &self.config),
            )
        });
        match found.unwrap_or(Pick::Nothing) {
            Pick::Address(at) => {
                if let Some(client) = self.clients.remove(&key, at) {
                    findings.push(lost_context(&client, &server, Pairing::Address));
                }
            }
            Pick::Request(at) => {
                if let Some(client) = self.clients.remove(&key, at) {
                    findings.push(lost_context(&client, &server, Pairing::Request));
                }
            }
            Pick::Several(at, all) => {
                let clients: Vec<&Candidate> = at
                    .iter()
                    .filter_map(|at| self.clients.by_key.get(&key)?.get(at))
                    .collect();
                findings.push(ambiguous_hop(&server, &clients, all, true));
            }
            Pick::Nothing => {
                self.seq += 1;
                self.roots.insert(key, self.seq, server);
            }
        }
    }

    /// A CLIENT span without a child in its trace.
    pub(super) fn childless_client(&mut self, span: &Span, findings: &mut Vec<Finding>) {
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
        let found = self.roots.by_key.get(&key).map(|roots| {
            tightest(
                roots.range(
                    (client.start.saturating_sub(tolerance), 0)
                        ..=(client.end.saturating_add(tolerance), u64::MAX),
                ),
                |r| r.start.checked_sub(client.start),
                |r| matches(&client, r, &self.config).then(|| gap(&client, r)),
                |r| by_request(&client, r, &self.config),
            )
        });
        match found.unwrap_or(Pick::Nothing) {
            Pick::Address(at) => {
                if let Some(server) = self.roots.remove(&key, at) {
                    findings.push(lost_context(&client, &server, Pairing::Address));
                }
            }
            Pick::Request(at) => {
                if let Some(server) = self.roots.remove(&key, at) {
                    findings.push(lost_context(&client, &server, Pairing::Request));
                }
            }
            Pick::Several(at, all) => {
                let roots: Vec<&Candidate> = at
                    .iter()
                    .filter_map(|at| self.roots.by_key.get(&key)?.get(at))
                    .collect();
                findings.push(ambiguous_hop(&client, &roots, all, false));
            }
            Pick::Nothing => {
                self.seq += 1;
                self.clients.insert(key, self.seq, client);
            }
        }
    }

    /// A CLIENT span whose child arrived after its trace had completed without it: no longer
    /// waiting for a new root (a later one for the same request is not its lost hop).
    pub(super) fn answered_client(&mut self, span: &Span) {
        if self.seen.contains(&(span.trace_id, span.span_id))
            && let Some((key, c)) = candidate(span, None, Role::Client)
        {
            self.clients.remove_span(&key, c.start, c.span_id);
        }
    }
}
