//! One hop of a probe's route ([`Hop`]) and the verdicts on what of the context crossed it.

use crate::diagnose::Rule;
use crate::model::{SpanId, TraceId};

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
    /// The sending service ([`PROBE_SERVICE`](crate::probe::PROBE_SERVICE) for the first hop).
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
