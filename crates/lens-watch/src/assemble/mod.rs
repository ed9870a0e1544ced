//! Spans to traces: grouped by trace id as they arrive, a trace complete once it has seen no new
//! span for a quiet window (a late span reopens it), memory bounded by whole-trace eviction.
//!
//! The bounds are honest: a trace evicted is remembered by its id (a bounded set), so that its
//! later spans are dropped and counted instead of starting a fragment that would later look
//! whole; eviction takes traces already complete (and shown) before open ones, oldest first; a
//! trace that lost a span to a bound says so ([`TraceEntry::is_partial`]); and every span
//! received is accounted for exactly once in [`Stats`] (see [`Stats::unaccounted`]).
//!
//! The clock is driven: every call takes `now`, nothing reads the time or sleeps, so tests (and
//! replays of a file, where the quiet window is moot) decide when time passes.

mod assembler;
mod stats;

pub use assembler::{Assembler, Config, TraceEntry};
pub use stats::{Account, Stats};

#[cfg(test)]
mod tests;
