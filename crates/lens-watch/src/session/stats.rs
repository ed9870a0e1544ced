//! The statistics of a session and of its log records; their `Display` is the status line.

use std::fmt;

use crate::assemble::Stats;
use crate::diagnose::FindingCounts;

/// The statistics of a session: the assembler's counts and the findings'. `Display` is the
/// status line: `13 spans received, 1 traces (1 complete), ...; 0 findings (...)`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionStats {
    /// What the assembler received, holds and dropped.
    pub spans: Stats,
    /// The findings returned, by severity.
    pub findings: FindingCounts,
    /// The findings left out by [`SessionConfig::allow`](crate::session::SessionConfig::allow).
    pub allowed: u64,
    /// The log records received, held and dropped.
    pub logs: LogStats,
}

impl fmt::Display for SessionStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}; {}", self.spans, self.findings)?;
        if self.allowed > 0 {
            write!(f, " ({} allowed by --allow, left out)", self.allowed)?;
        }
        if self.logs.received > 0 || self.logs.rejected > 0 {
            write!(f, "; {}", self.logs)?;
        }
        Ok(())
    }
}

/// What became of the log records a session received. `Display`: `3 logs received (1 held, 2
/// dropped, the oldest first)`, with the rejected ones when there are any.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogStats {
    /// Records received and kept by the decoder.
    pub received: u64,
    /// Records the decoder rejected (invalid ids).
    pub rejected: u64,
    /// Records held now.
    pub held: u64,
    /// Records dropped to stay within [`SessionConfig::max_logs`] (the oldest first).
    ///
    /// [`SessionConfig::max_logs`]: crate::session::SessionConfig::max_logs
    pub dropped: u64,
}

impl fmt::Display for LogStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} logs received ({} held", self.received, self.held)?;
        if self.dropped > 0 {
            write!(f, ", {} dropped, the oldest first", self.dropped)?;
        }
        f.write_str(")")?;
        if self.rejected > 0 {
            write!(f, ", {} rejected", self.rejected)?;
        }
        Ok(())
    }
}
