//! What `lens watch` shows on the terminal: each completed trace with its findings on standard
//! output, the status line on standard error (kept in place on a terminal).

use std::io::{IsTerminal as _, Write as _};
use std::process::ExitCode;

use lens_watch::render::Output;
use lens_watch::session::Completed;

use super::store::Store;

/// What the terminal shows of each trace.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shown {
    /// The waterfall or JSON.
    pub(crate) output: Output,
    /// Each span's log records under it (`--logs`).
    pub(crate) logs: bool,
}

/// The terminal's side of a watch.
pub(super) struct Terminal {
    store: Store,
    output: Output,
    logs: bool,
    tty: bool,
    shown_status: String,
    max_traces: usize,
    warned_evicting_open: bool,
}

impl Terminal {
    pub(super) fn new(store: Store, shown: Shown, max_traces: usize) -> Self {
        Terminal {
            store,
            output: shown.output,
            logs: shown.logs,
            tty: std::io::stderr().is_terminal(),
            shown_status: String::new(),
            max_traces,
            warned_evicting_open: false,
        }
    }

    /// Whether standard error is a terminal.
    pub(super) fn tty(&self) -> bool {
        self.tty
    }

    /// Prints the traces `done` and their findings, then the status when it changed (always
    /// when `last`). `Ok(false)`: standard output is closed (nothing more to show); `Err`: it
    /// cannot be written (said).
    pub(super) fn show(&mut self, done: &[Completed], last: bool) -> Result<bool, ExitCode> {
        let mut out = String::new();
        let (status, evicting_open) = {
            let session = self.store.lock();
            for completed in done {
                if let Some(mut view) = session.view_of(completed) {
                    if self.logs {
                        view = session.with_logs(view);
                    }
                    self.output.trace(&view, &mut out);
                }
                self.output.findings(&completed.findings, &mut out);
                if matches!(self.output, Output::Text { .. }) {
                    out.push('\n');
                }
            }
            let stats = session.stats();
            (stats.to_string(), stats.spans.evicted_open_traces > 0)
        };
        if evicting_open && !self.warned_evicting_open {
            self.warned_evicting_open = true;
            self.clear_status();
            eprintln!(
                "warning: lens watch is evicting traces that are still open: more than \
--max-traces {} traces were open at once. Their spans are dropped and counted (never shown as \
a fragment); raise --max-traces, or shorten the exporters' batch delay \
(OTEL_BSP_SCHEDULE_DELAY) so that traces complete sooner (docs/watch.md, \"Sizing --max-traces\")",
                self.max_traces
            );
        }
        if !out.is_empty() {
            self.clear_status();
            if !crate::flags::print(&out)? {
                return Ok(false);
            }
        }
        if status != self.shown_status && (self.tty || !out.is_empty() || last) {
            // The status is for a person: a closed standard error must not stop the watch.
            let mut stderr = std::io::stderr().lock();
            let _ = if self.tty {
                write!(stderr, "\r\x1b[K{status}")
            } else {
                writeln!(stderr, "{status}")
            };
            self.shown_status = status;
        }
        if last && self.tty {
            let _ = writeln!(std::io::stderr());
        }
        Ok(true)
    }

    /// Clears the status line on a terminal, before other output.
    pub(super) fn clear_status(&mut self) {
        if self.tty && !self.shown_status.is_empty() {
            let _ = write!(std::io::stderr(), "\r\x1b[K");
            self.shown_status.clear();
        }
    }
}
