//! What an assembler has seen ([`Stats`]): every span received accounted for, and the
//! account's line for the end of a run ([`Account`]).

/// What an [`Assembler`] has seen; nothing it drops goes uncounted. Every span received is, at
/// any time, exactly one of: shown (part of a trace when it completed), held and not yet shown,
/// or dropped for one reason ([`Stats::unaccounted`] checks it).
///
/// [`Assembler`]: crate::assemble::Assembler
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Spans given to the assembler (kept or dropped).
    pub spans_received: u64,
    /// Spans rejected by the decoder (see [`Assembler::count_rejected`]); not in
    /// `spans_received`.
    ///
    /// [`Assembler::count_rejected`]: crate::assemble::Assembler::count_rejected
    pub spans_rejected: u64,
    /// Traces held now.
    pub traces: usize,
    /// Spans held now.
    pub spans: usize,
    /// Distinct services seen (counted up to 100,000).
    pub services: usize,
    /// Traces that have completed, each counted once (a trace reopened by late spans and
    /// completed again is not counted again).
    pub traces_completed: u64,
    /// Spans that were part of a trace when it completed (each counted once).
    pub spans_shown: u64,
    /// Spans held that have not been part of a completed trace yet.
    pub spans_open: u64,
    /// Whole traces evicted to stay within the bounds (each counted once).
    pub evicted_traces: u64,
    /// The spans those traces held when evicted.
    pub evicted_spans: u64,
    /// Of the evicted traces, those evicted while open (not complete).
    pub evicted_open_traces: u64,
    /// Spans dropped with an evicted trace before they were ever shown.
    pub dropped_evicted: u64,
    /// Spans that arrived after their trace had been evicted, dropped.
    pub dropped_late: u64,
    /// Spans dropped because their trace had [`Config::max_spans_per_trace`] spans.
    ///
    /// [`Config::max_spans_per_trace`]: crate::assemble::Config::max_spans_per_trace
    pub dropped_spans: u64,
    /// Ids of evicted traces remembered now.
    pub evicted_ids: usize,
    /// Ids of evicted traces forgotten to stay within [`Config::max_evicted_ids`] (a later
    /// span of one of those traces starts a new, partial-looking trace).
    ///
    /// [`Config::max_evicted_ids`]: crate::assemble::Config::max_evicted_ids
    pub evicted_ids_forgotten: u64,
}

impl Stats {
    /// Spans dropped, all reasons together (not counting rejected ones).
    pub fn dropped(&self) -> u64 {
        self.dropped_evicted + self.dropped_late + self.dropped_spans
    }

    /// Spans received that are neither shown, held open nor dropped: always 0 (a check for
    /// tests and for the status).
    pub fn unaccounted(&self) -> i128 {
        i128::from(self.spans_received)
            - i128::from(self.spans_shown)
            - i128::from(self.spans_open)
            - i128::from(self.dropped())
    }
}

impl std::fmt::Display for Stats {
    /// The status line: spans received, traces, services, rejected, evicted, and every span
    /// dropped by its reason (never silent).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} spans received, {} traces ({} complete), {} services, {} rejected, {} traces evicted ({} spans)",
            self.spans_received,
            self.traces,
            self.traces_completed,
            self.services,
            self.spans_rejected,
            self.evicted_traces,
            self.evicted_spans,
        )?;
        if self.evicted_open_traces > 0 {
            write!(
                f,
                ", {} of them open ({} spans never shown)",
                self.evicted_open_traces, self.dropped_evicted
            )?;
        }
        if self.dropped_late > 0 {
            write!(
                f,
                ", {} later spans of evicted traces dropped",
                self.dropped_late
            )?;
        }
        if self.dropped_spans > 0 {
            write!(
                f,
                ", {} spans dropped over the per-trace limit",
                self.dropped_spans
            )?;
        }
        Ok(())
    }
}

impl Stats {
    /// The account of every span received, for the end of a run: `received = shown + held +
    /// dropped by reason`, with `saved` (spans written to a file) beside `received` when given.
    pub fn account(&self, saved: Option<u64>) -> Account<'_> {
        Account { stats: self, saved }
    }
}

/// [`Stats::account`]'s line.
#[derive(Clone, Copy, Debug)]
pub struct Account<'a> {
    stats: &'a Stats,
    saved: Option<u64>,
}

impl std::fmt::Display for Account<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let stats = self.stats;
        write!(f, "{} spans received", stats.spans_received)?;
        if let Some(saved) = self.saved {
            write!(f, ", {saved} saved")?;
        }
        write!(f, ": {} shown", stats.spans_shown)?;
        if stats.spans_open > 0 {
            write!(f, ", {} held open", stats.spans_open)?;
        }
        write!(
            f,
            ", {} dropped ({} in traces evicted while open, {} arriving after their trace was \
evicted, {} over the per-trace limit)",
            stats.dropped(),
            stats.dropped_evicted,
            stats.dropped_late,
            stats.dropped_spans
        )?;
        if stats.spans_rejected > 0 {
            write!(f, "; {} more rejected by the decoder", stats.spans_rejected)?;
        }
        Ok(())
    }
}
