//! The hops of the demo that `lens demo --break HOP` can send without context, by name.

use lens_reqwest::FilterDecision;

/// The subject the rollout jobs go to, before the run's suffix; the queue hop's name in
/// `--break trainer->rollout.jobs`.
pub(crate) const ROLLOUT_JOBS: &str = "rollout.jobs";

/// A hop of the demo that `lens demo --break HOP` sends without context: a client or producer
/// span (lens-reqwest's, lens-tonic's, lens-nats's) whose request or message goes out with no
/// `traceparent`, as from a client that records spans but does not inject. The other hops (the
/// remote call, the broadcast, the pipeline's links) carry their context in the payload, with no
/// client span for the doctor to pair a new root with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hop {
    /// The driver's reqwest call to the gateway (HTTP).
    DemoToGateway,
    /// The gateway's reqwest call to the planner (HTTP).
    GatewayToPlanner,
    /// The planner's gRPC call to the trainer (tonic).
    PlannerToTrainer,
    /// The trainer's rollout job to the rollout worker over NATS (`--nats` only).
    TrainerToRolloutJobs,
}

impl Hop {
    /// Every hop that can be broken, in the order a request crosses them.
    pub(crate) const ALL: [Hop; 4] = [
        Hop::DemoToGateway,
        Hop::GatewayToPlanner,
        Hop::PlannerToTrainer,
        Hop::TrainerToRolloutJobs,
    ];

    /// The sending service and what it sends to: the called service, or the queue.
    pub(crate) fn ends(self) -> (&'static str, &'static str) {
        match self {
            Hop::DemoToGateway => ("lens-demo", "gateway"),
            Hop::GatewayToPlanner => ("gateway", "planner"),
            Hop::PlannerToTrainer => ("planner", "trainer"),
            Hop::TrainerToRolloutJobs => ("trainer", ROLLOUT_JOBS),
        }
    }

    /// The sending and the receiving service.
    pub(crate) fn services(self) -> (&'static str, &'static str) {
        match self {
            Hop::TrainerToRolloutJobs => ("trainer", "rollout-worker"),
            other => other.ends(),
        }
    }

    /// Whether the hop exists only with `--nats`.
    pub(crate) fn needs_nats(self) -> bool {
        self == Hop::TrainerToRolloutJobs
    }

    /// `from->to`, as `--break` takes it.
    pub(crate) fn name(self) -> String {
        let (from, to) = self.ends();
        format!("{from}->{to}")
    }

    /// The hop named `from->to` (spaces around the arrow allowed).
    pub(crate) fn parse(value: &str) -> Option<Hop> {
        let (from, to) = value.split_once("->")?;
        Hop::ALL
            .into_iter()
            .find(|hop| hop.ends() == (from.trim(), to.trim()))
    }

    /// The client filter of the calling side: a span for every request, context injected
    /// unless this is the broken hop.
    pub(super) fn filter(broken: Option<Hop>, hop: Hop) -> FilterDecision {
        FilterDecision {
            span: true,
            inject: broken != Some(hop),
        }
    }
}
