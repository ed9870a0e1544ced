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
//!
//! [`Session`]: crate::session::Session

mod bleed;
mod hop;
mod repeat;
mod report;
mod route;
mod sent;

pub use bleed::{Bleed, find_bleeds};
pub use hop::{BaggageVerdict, FlagsVerdict, Hop, ParentVerdict, TraceStateVerdict, TraceVerdict};
pub use repeat::{HopTally, InstanceTally, Tally};
pub use route::{ForcedHop, Route, Sampling};
pub use sent::{PROBE_SERVICE, Sent};

#[cfg(test)]
mod tests;
