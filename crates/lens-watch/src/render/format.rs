//! Durations and counts in words: `12.3 ms`, `2 hops`.

use std::time::Duration;

use crate::model::Span;

/// A duration as `850 µs`, `12.3 ms` or `1.24 s`.
pub fn format_duration(d: Duration) -> String {
    let micros = d.as_secs_f64() * 1e6;
    if micros < 1000.0 {
        format!("{micros:.0} µs")
    } else if micros < 1e6 {
        format!("{:.1} ms", micros / 1e3)
    } else {
        format!("{:.2} s", micros / 1e6)
    }
}

/// A span's duration.
pub fn span_duration(span: &Span) -> Duration {
    Duration::from_nanos(span.duration_nanos())
}

/// `n` and `noun`, in the plural unless `n` is 1: `1 hop`, `2 hops`.
pub(crate) fn counted(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
