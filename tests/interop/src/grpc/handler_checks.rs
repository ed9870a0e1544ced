//! What a handler saw, checked against what its caller sent.

use super::case::{Case, Direction};
use crate::check::Checks;
use crate::describe::Seen;

/// What a call showed: the caller's span (when it has one of its own) and the span each
/// message of the callee's handler ran in.
#[derive(Default)]
pub(super) struct Observed {
    pub(super) caller: Option<String>,
    pub(super) handler: Option<String>,
}

pub(super) fn label(direction: Direction, case: &Case, what: &str) -> String {
    let d = match direction {
        Direction::PythonToRust => "python->rust",
        Direction::RustToPython => "rust->python",
    };
    format!("{d} [{}] {what}", case.name)
}

/// What each message says its handler saw: the trace, the handler's own span, the baggage and
/// tracestate the caller sent. Returns the handler's span id.
pub(super) fn check_handler(
    checks: &mut Checks,
    direction: Direction,
    case: &Case,
    answers: &[Seen],
) -> Option<String> {
    let label = |what: &str| label(direction, case, what);
    checks.eq(&label("messages received"), &answers.len(), &case.items);
    let first = answers.first()?.span.as_ref()?.span_id.clone();
    for (i, answer) in answers.iter().enumerate() {
        let span = answer.span.as_ref();
        checks.eq(
            &label(&format!(
                "message {i}: handler's trace id, flags, tracestate, one span"
            )),
            &span.map(|s| {
                (
                    s.trace_id.as_str(),
                    s.trace_flags,
                    s.tracestate.as_str(),
                    s.span_id.as_str(),
                )
            }),
            &Some((
                case.trace_id(),
                case.flags(),
                case.parent.tracestate_header().as_str(),
                first.as_str(),
            )),
        );
        checks.eq(
            &label(&format!("message {i}: baggage as the caller set it")),
            &answer.baggage,
            &case.parent.baggage,
        );
    }
    checks.contexts += 1;
    Some(first)
}
