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
//! Where a rule cannot decide (an exporter that does not report trace flags or tracestate, a
//! hop without the attributes to match it, baggage keys recorded on one side only), it says
//! nothing.
//!
//! [`Assembler`]: crate::assemble::Assembler

mod bleed;
mod candidates;
mod conventions;
mod doctor;
mod dropped;
mod finding;
mod forced;
mod hop_findings;
mod message;
mod new_root;
mod pairing;
mod queue_index;
mod queues;
mod rules;
mod span_index;
mod streams;

pub(crate) use conventions::split_url;
pub use doctor::{Doctor, DoctorConfig, Traces};
pub use dropped::BAGGAGE_KEYS_ATTRIBUTE;
pub(crate) use dropped::{baggage_keys, trace_state_entries};
pub use finding::{DOC_BASE, Finding, FindingCounts, Painted, Rule, Severity};
pub use new_root::{NEW_ROOT_ATTRIBUTE, NewRootCause};
