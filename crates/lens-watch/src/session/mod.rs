//! One session: the flow every command drives. Spans in (decoded [`Batch`]es from a receiver, a
//! file, or an SDK), grouped into traces by the [`Assembler`]; each trace out as it completes,
//! with the doctor's findings on it ([`Completed`]); a [`TraceView`] of any trace held, with
//! everything a renderer needs resolved; the list a page shows ([`Session::list`]); and the
//! statistics, whose `Display` is the status line.
//!
//! Log records ([`Batch::logs`]) are held beside the traces, the newest
//! [`SessionConfig::max_logs`] (the oldest dropped first, and counted): a view made with
//! [`Session::with_logs`] shows each span's records under it (matched by trace and span id),
//! and [`Session::unmatched_logs`] lists those of no span held.
//!
//! ```
//! use std::time::Instant;
//! use lens_watch::{decode, render::Output, session::{Session, SessionConfig}};
//!
//! let line = br#"{"resourceSpans":[{"resource":{"attributes":[
//!     {"key":"service.name","value":{"stringValue":"gateway"}}]},
//!   "scopeSpans":[{"scope":{"name":"demo"},"spans":[
//!     {"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7",
//!      "name":"GET /","kind":2,"startTimeUnixNano":"1700000000000000000",
//!      "endTimeUnixNano":"1700000000001000000"}]}]}]}"#;
//! let mut session = Session::new(SessionConfig::default());
//! session.ingest(decode::decode_json(line)?, Instant::now());
//! let mut out = String::new();
//! for done in session.flush() {
//!     let view = session.view_of(&done).expect("held");
//!     Output::Text { colour: false }.trace(&view, &mut out);
//!     Output::Text { colour: false }.findings(&done.findings, &mut out);
//! }
//! assert!(out.contains("GET /") && out.contains("1 spans, complete"));
//! assert!(session.stats().to_string().starts_with("1 spans received, 1 traces (1 complete)"));
//! # Ok::<(), lens_watch::decode::DecodeError>(())
//! ```
//!
//! [`Batch`]: crate::decode::Batch
//! [`Assembler`]: crate::assemble::Assembler
//! [`TraceView`]: crate::render::TraceView
//! [`Batch::logs`]: crate::decode::Batch::logs

mod flow;
mod logs;
mod query;
mod stats;

pub use flow::{Completed, Session, SessionConfig};
pub use logs::LogList;
pub use query::{ListFilter, ListOrder, Listed, TraceList};
pub use stats::{LogStats, SessionStats};

#[cfg(test)]
mod tests;
