//! Many probe requests at once (`lens probe --repeat N`): their routes tallied hop by hop, with
//! the receiving instances where the losses concentrate (one bad replica behind a load balancer
//! loses one request in five: one request alone passes four times in five).

use std::fmt::Write as _;

use serde_json::{Value as Json, json};

use super::bleed::Bleed;
use super::hop::{
    BaggageVerdict, FlagsVerdict, Hop, ParentVerdict, TraceStateVerdict, TraceVerdict,
};
use super::route::{ForcedHop, Route};
use super::sent::PROBE_SERVICE;
use crate::diagnose::Rule;
use crate::model::TraceId;

/// The most trace ids of requests that lost something a [`Tally`] lists.
const MAX_LOST_TRACES: usize = 8;

/// What a hop did to the requests that crossed it, by receiving instance.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct InstanceTally {
    /// The receiving instance (`service.instance.id`, else the host attributes).
    pub instance: String,
    /// Requests it received over the hop.
    pub crossed: usize,
    /// Of those, requests that lost something on the hop.
    pub lost: usize,
}

/// One hop over all the requests of a probe.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct HopTally {
    /// The sending service.
    pub from: String,
    /// The receiving service, `None` where no receiver was seen.
    pub to: Option<String>,
    /// The kind of crossing (`http`, `grpc`, `messaging`, ...).
    pub kind: String,
    /// Requests that crossed the hop.
    pub crossed: usize,
    /// Of those, requests that lost something on it (less the allowed rules).
    pub lost: usize,
    /// Of those, requests whose receiving side exported nothing.
    pub unseen: usize,
    /// How many requests broke each rule on the hop, by rule id, most first.
    pub rules: Vec<(&'static str, usize)>,
    /// The receiving instances, those with the most losses first.
    pub instances: Vec<InstanceTally>,
}

impl HopTally {
    /// The instances that lost a request, most losses first.
    pub fn losing_instances(&self) -> impl Iterator<Item = &InstanceTally> {
        self.instances.iter().filter(|i| i.lost > 0)
    }
}

/// The routes of many probe requests, tallied per hop.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Tally {
    /// Requests sent.
    pub requests: usize,
    /// Requests that lost something on some hop (less the allowed rules).
    pub lost: usize,
    /// Requests of which no service exported anything.
    pub unseen: usize,
    /// The hops, in the order the requests crossed them (first seen first).
    pub hops: Vec<HopTally>,
    /// The traces of the first requests that lost something (at most 8).
    pub lost_traces: Vec<TraceId>,
    /// Unsampled requests: the hops that stayed silent, of the hops of their routes, summed
    /// over the requests (known from a sampled request along the same route).
    pub silent: Option<(usize, usize)>,
    /// Calls of one request that arrived in another's trace ([`find_bleeds`](crate::probe::find_bleeds)),
    /// unless `context-bleed` is allowed.
    pub bleeds: Vec<Bleed>,
}

impl Tally {
    /// Tallies `routes`, one a request, and the `bleeds` found between them; what breaks a rule
    /// in `allow` is not a loss.
    pub fn new(routes: &[Route], bleeds: &[Bleed], allow: &[String]) -> Tally {
        let mut hops: Vec<HopTally> = Vec::new();
        let mut lost = 0;
        let mut lost_traces = Vec::new();
        let bleed_allowed = allow.iter().any(|a| a == Rule::ContextBleed.id());
        let mut lost_ids: Vec<TraceId> = Vec::new();
        for route in routes {
            let mut route_lost = false;
            // An unsampled request: the hop that forced sampling on, nothing else.
            let forced: Vec<Hop> = route
                .sampling
                .iter()
                .filter_map(|s| s.forced.as_ref())
                .map(|f| forced_hop(route, f))
                .collect();
            let judged = if route.sampling.is_some() {
                &forced
            } else {
                &route.hops
            };
            for hop in judged {
                let broken: Vec<&'static str> = if route.sampling.is_some() {
                    route.broken(allow).collect()
                } else {
                    hop.broken()
                        .into_iter()
                        .filter(|rule| !allow.iter().any(|a| a == rule))
                        .collect()
                };
                let i = match hops
                    .iter()
                    .position(|t| t.from == hop.from && t.to == hop.to && t.kind == hop.kind)
                {
                    Some(i) => i,
                    None => {
                        hops.push(HopTally {
                            from: hop.from.clone(),
                            to: hop.to.clone(),
                            kind: hop.kind.clone(),
                            crossed: 0,
                            lost: 0,
                            unseen: 0,
                            rules: Vec::new(),
                            instances: Vec::new(),
                        });
                        hops.len() - 1
                    }
                };
                let tally = &mut hops[i];
                tally.crossed += 1;
                if hop.trace == TraceVerdict::Unseen {
                    tally.unseen += 1;
                }
                if !broken.is_empty() {
                    tally.lost += 1;
                    route_lost = true;
                }
                for rule in &broken {
                    match tally.rules.iter_mut().find(|(r, _)| r == rule) {
                        Some((_, n)) => *n += 1,
                        None => tally.rules.push((rule, 1)),
                    }
                }
                if let Some(instance) = &hop.to_instance {
                    let at = match tally.instances.iter().position(|t| &t.instance == instance) {
                        Some(at) => at,
                        None => {
                            tally.instances.push(InstanceTally {
                                instance: instance.clone(),
                                crossed: 0,
                                lost: 0,
                            });
                            tally.instances.len() - 1
                        }
                    };
                    tally.instances[at].crossed += 1;
                    tally.instances[at].lost += usize::from(!broken.is_empty());
                }
            }
            let bled = !bleed_allowed
                && bleeds
                    .iter()
                    .any(|b| b.request == route.sent.trace_id || b.into == route.sent.trace_id);
            if route_lost || bled {
                lost += 1;
                lost_ids.push(route.sent.trace_id);
                if lost_traces.len() < MAX_LOST_TRACES {
                    lost_traces.push(route.sent.trace_id);
                }
            }
        }
        // A hop whose receiver other requests reached but these never did: their context was
        // lost where the doctor could not pair the new root (behind a load balancer), or the
        // replica they reached exports nothing: either way, not followed.
        let lost_allowed = allow.iter().any(|a| a == Rule::LostContext.id());
        let reached: Vec<(String, String)> = hops
            .iter()
            .filter(|t| t.to.is_some() && t.unseen < t.crossed)
            .map(|t| (t.from.clone(), t.kind.clone()))
            .collect();
        let mut unfollowed: Vec<TraceId> = Vec::new();
        if !lost_allowed {
            for tally in &mut hops {
                if tally.to.is_none()
                    && tally.from != PROBE_SERVICE
                    && reached.contains(&(tally.from.clone(), tally.kind.clone()))
                {
                    tally.lost += tally.unseen;
                    tally.unseen = 0;
                    tally.rules.push((Rule::LostContext.id(), tally.lost));
                    for route in routes {
                        if route
                            .hops
                            .iter()
                            .any(|h| h.to.is_none() && h.from == tally.from && h.kind == tally.kind)
                        {
                            unfollowed.push(route.sent.trace_id);
                        }
                    }
                }
            }
        }
        for id in unfollowed {
            if !lost_ids.contains(&id) {
                lost += 1;
                lost_ids.push(id);
                if lost_traces.len() < MAX_LOST_TRACES {
                    lost_traces.push(id);
                }
            }
        }
        let bleeds: Vec<Bleed> = if bleed_allowed {
            Vec::new()
        } else {
            bleeds.to_vec()
        };
        for bleed in &bleeds {
            let Some(tally) = hops.iter_mut().find(|t| {
                t.from == bleed.from
                    && t.to.as_deref() == Some(bleed.to.as_str())
                    && t.kind == bleed.kind
            }) else {
                continue;
            };
            tally.lost += 1;
            match tally
                .rules
                .iter_mut()
                .find(|(r, _)| *r == Rule::ContextBleed.id())
            {
                Some((_, n)) => *n += 1,
                None => tally.rules.push((Rule::ContextBleed.id(), 1)),
            }
            if let Some(i) = tally
                .instances
                .iter_mut()
                .find(|i| Some(&i.instance) == bleed.to_instance.as_ref())
            {
                i.lost += 1;
            }
        }
        for tally in &mut hops {
            tally.rules.sort_by_key(|r| std::cmp::Reverse(r.1));
            tally
                .instances
                .sort_by(|a, b| b.lost.cmp(&a.lost).then(a.instance.cmp(&b.instance)));
        }
        let silent = routes
            .iter()
            .filter_map(|r| r.sampling.as_ref().and_then(|s| s.silent))
            .reduce(|(a, b), (c, d)| (a + c, b + d));
        let unsampled = routes.iter().all(|r| r.sampling.is_some());
        Tally {
            requests: routes.len(),
            lost,
            // Unsampled requests should leave nothing.
            unseen: if unsampled {
                0
            } else {
                routes.iter().filter(|r| r.saw_nothing()).count()
            },
            hops,
            lost_traces,
            silent,
            bleeds,
        }
    }

    /// The tally as text: a line a hop, `gateway -> planner (http): 4 of 20 lost (lost-context
    /// 4; planner instance planner-2: 4 of 4)`, then the requests that lost something.
    pub fn text(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "{} requests, each with its own trace: {} lost something{}",
            self.requests,
            self.lost,
            if self.unseen > 0 {
                format!(", {} exported nothing", self.unseen)
            } else {
                String::new()
            }
        );
        for (n, hop) in self.hops.iter().enumerate() {
            let to = hop.to.as_deref().unwrap_or("?");
            let _ = write!(out, "{:>2}. {} -> {to} ({}): ", n + 1, hop.from, hop.kind);
            let mut parts = Vec::new();
            if hop.lost > 0 {
                let mut why: Vec<String> = hop
                    .rules
                    .iter()
                    .map(|(rule, count)| format!("{rule} {count}"))
                    .collect();
                let instances: Vec<String> = hop
                    .losing_instances()
                    .map(|i| format!("{to} instance {}: {} of {}", i.instance, i.lost, i.crossed))
                    .collect();
                if !instances.is_empty() {
                    why.push(instances.join(", "));
                }
                if hop.to.is_none() {
                    why.push(
                        "their receiver never arrived in their trace while other requests' did: \
a context lost where the new root could not be paired, or a replica that exports nothing"
                            .to_owned(),
                    );
                }
                parts.push(format!(
                    "{} of {} lost ({})",
                    hop.lost,
                    hop.crossed,
                    why.join("; ")
                ));
            }
            if hop.unseen > 0 {
                parts.push(format!(
                    "{} of {} not seen (no span of the receiving side arrived)",
                    hop.unseen, hop.crossed
                ));
            }
            let kept = hop.crossed.saturating_sub(hop.lost + hop.unseen);
            if parts.is_empty() || kept > 0 {
                parts.insert(0, format!("{kept} of {} kept", hop.crossed));
            }
            out.push_str(&parts.join(", "));
            out.push('\n');
        }
        if let Some((silent, of)) = self.silent {
            let _ = writeln!(
                out,
                "unsampled: {silent} of {} stayed silent as {} should, over the {} requests",
                crate::render::counted(of, "hop"),
                if silent == 1 { "it" } else { "they" },
                self.requests
            );
        }
        for bleed in &self.bleeds {
            let instance = bleed
                .to_instance
                .as_ref()
                .map(|i| format!(", {} instance {i}", bleed.to))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "CONTEXT BLEED: {} -> {} ({}): a call of request {} arrived in the trace of request {} (span {}{instance})",
                bleed.from, bleed.to, bleed.kind, bleed.request, bleed.into, bleed.receiver
            );
        }
        if !self.lost_traces.is_empty() {
            let ids: Vec<String> = self.lost_traces.iter().map(ToString::to_string).collect();
            let more = self.lost - self.lost_traces.len();
            let _ = writeln!(
                out,
                "requests that lost something, by trace: {}{}",
                ids.join(" "),
                if more > 0 {
                    format!(" (and {more} more)")
                } else {
                    String::new()
                }
            );
        }
    }

    /// The tally as JSON: `requests`, `lost`, `unseen`, `hops` (each with `crossed`, `lost`,
    /// `unseen`, `rules` and `instances`) and `lost_traces`.
    pub fn json(&self) -> Json {
        json!({
            "requests": self.requests,
            "lost": self.lost,
            "unseen": self.unseen,
            "hops": self.hops.iter().map(|h| json!({
                "from": h.from,
                "to": h.to,
                "kind": h.kind,
                "crossed": h.crossed,
                "lost": h.lost,
                "unseen": h.unseen,
                "rules": h.rules.iter().map(|(r, n)| (r.to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
                "instances": h.instances.iter().map(|i| json!({
                    "instance": i.instance, "crossed": i.crossed, "lost": i.lost,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "bleeds": self.bleeds.iter().map(|b| json!({
                "from": b.from,
                "to": b.to,
                "to_instance": b.to_instance,
                "kind": b.kind,
                "request": b.request.to_string(),
                "into": b.into.to_string(),
                "receiver_span_id": b.receiver.to_string(),
            })).collect::<Vec<_>>(),
            "silent_hops": self.silent.map(|(silent, _)| silent),
            "silent_of": self.silent.map(|(_, of)| of),
            "lost_traces": self.lost_traces.iter().map(ToString::to_string).collect::<Vec<_>>(),
        })
    }
}

/// The hop of an unsampled request that forced sampling on, as a hop to tally.
fn forced_hop(route: &Route, forced: &ForcedHop) -> Hop {
    Hop {
        from: forced.from.clone(),
        to: Some(forced.to.clone()),
        to_instance: forced.to_instance.clone(),
        kind: forced.kind.clone(),
        trace_id: route.sent.trace_id,
        sender: None,
        receiver: Some(forced.span_id),
        in_probe_trace: true,
        trace: TraceVerdict::Kept,
        parent: ParentVerdict::NotApplicable,
        flags: FlagsVerdict::NotApplicable,
        trace_state: TraceStateVerdict::NotApplicable,
        baggage: BaggageVerdict::NotApplicable,
    }
}
