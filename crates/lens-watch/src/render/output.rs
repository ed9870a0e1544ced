//! The line outputs of a terminal ([`Output`]): the waterfall as text or JSON lines, and the
//! findings likewise.

use std::fmt::Write as _;

use super::view::TraceView;
use super::{json, text};
use crate::diagnose::Finding;

/// The line outputs: the terminal's waterfall (coloured or not) or one JSON object a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Output {
    /// The waterfall, then its summary line.
    Text {
        /// ANSI colours.
        colour: bool,
    },
    /// One JSON object a line.
    Json,
}

impl Output {
    /// Writes `trace`: its waterfall (ending with the summary line), or one JSON line.
    pub fn trace(self, trace: &TraceView<'_>, out: &mut String) {
        match self {
            Output::Json => {
                out.push_str(&json::trace(trace).to_string());
                out.push('\n');
            }
            Output::Text { colour } => text::render(trace, colour, out),
        }
    }

    /// Writes `findings`, one line each: `error[lost-context] message (docs/doctor.md#...)`,
    /// or one JSON object.
    pub fn findings(self, findings: &[Finding], out: &mut String) {
        for finding in findings {
            match self {
                Output::Json => out.push_str(&finding.to_json()),
                Output::Text { colour } => {
                    let _ = write!(out, "{}", finding.painted(colour));
                }
            }
            out.push('\n');
        }
    }
}
