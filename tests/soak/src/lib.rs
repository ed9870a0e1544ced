//! lens-soak: load and fault checks for lens, run by `cargo xtask soak`. A test harness: it is
//! not published and no crate depends on it.
//!
//! * [`run_soak`]: the axum → reqwest → axum chain ([`Chain`]) on loopback under concurrent
//!   clients, every request with its own trace id and baggage; then the checks: no context
//!   mix-up (every hop saw its own request's ids), no lost span (exported = requests × 3),
//!   flat memory (resident set at the end within 10% of after warm-up).
//! * [`run_otlp_faults`]: the same chain while the OTLP collector is down or black-holing,
//!   against the same exporter with a healthy collector, alternated in one run: no failed
//!   request, no slow-down above 5%.
//! * [`run_watch_load`]: `lens watch --max-traces M` under N real SDK exporters at once: every
//!   span accounted for through evictions, bounded resident memory, a responsive page.
//!
//! ```no_run
//! use std::time::Duration;
//! use lens_soak::{SoakOptions, run_soak};
//!
//! # async fn demo() -> Result<(), lens_soak::SoakError> {
//! let report = run_soak(&SoakOptions::new(Duration::from_secs(10), 8)).await?;
//! println!("{:.0} requests/s", report.requests_per_second());
//! assert!(report.failures().is_empty(), "{:?}", report.failures());
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

mod chain;
mod error;
mod nonce;
mod otlp;
mod rss;
mod soak;
mod tally;
mod watch_load;

pub use chain::{BACK_SPAN, Chain, FRONT_SPAN, Outcome, RequestId, send};
pub use error::SoakError;
pub use otlp::{ArmStats, Mode, OtlpOptions, OtlpReport, RoundStats, Statistic, run_otlp_faults};
pub use rss::resident_bytes;
pub use soak::{SoakOptions, SoakReport, run_soak};
pub use tally::{SPANS_PER_REQUEST, SpanTally, TallyCounts};
pub use watch_load::{
    BYTES_PER_HELD_LOG, BYTES_PER_HELD_SPAN, POLL_P95_LIMIT, RSS_SLACK, SPANS_PER_TRACE,
    WatchLoadOptions, WatchLoadReport, run_watch_load,
};

/// The README's example, compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
