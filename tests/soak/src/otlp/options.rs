//! The options of the comparison.

use std::time::Duration;

/// Options of [`run_otlp_faults`](super::run_otlp_faults).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct OtlpOptions {
    /// Total measuring time, shared by the arms (warm-up rounds not included).
    pub duration: Duration,
    /// Concurrent clients.
    pub concurrency: usize,
    /// Length of one round (one arm at a time).
    pub round: Duration,
    /// Largest allowed slow-down of a fault arm against the reference, in percent.
    pub max_slowdown_percent: u64,
    /// Timeout of each OTLP export.
    pub export_timeout: Duration,
}

impl OtlpOptions {
    /// `duration` with `concurrency` clients, 50 ms rounds, 5% allowed, 2 s export timeout.
    pub fn new(duration: Duration, concurrency: usize) -> Self {
        OtlpOptions {
            duration,
            concurrency,
            round: Duration::from_millis(50),
            max_slowdown_percent: 5,
            export_timeout: Duration::from_secs(2),
        }
    }
}
