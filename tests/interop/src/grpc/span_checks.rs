//! The checks of the spans both sides exported for a case.

use tonic::Code;

use super::case::{Case, Direction, Target, Via, code_name};
use super::handler_checks::{Observed, check_handler, label};
use super::wire::SEEN_ATTRIBUTE;
use crate::check::Checks;
use crate::describe::Seen;
use crate::spans::{self, Side, SpanRecord};

/// The spans both sides exported for `case`: one trace, the callee's SERVER span a child of
/// the caller's span across the language boundary, the status read from the trailers, and for a
/// stream the caller's span ending after the callee's.
pub(super) fn check_spans(
    checks: &mut Checks,
    direction: Direction,
    case: &Case,
    observed: &Observed,
    all: &[SpanRecord],
) {
    let label = |what: &str| label(direction, case, what);
    let trace: Vec<SpanRecord> = all
        .iter()
        .filter(|s| s.trace_id == case.trace_id())
        .cloned()
        .collect();
    let name = case.method().trim_start_matches('/');
    let (caller_side, callee_side) = match direction {
        Direction::PythonToRust => (Side::Python, Side::Rust),
        Direction::RustToPython => (Side::Rust, Side::Python),
    };
    let callee = spans::one(checks, &trace, callee_side, "SERVER", name, |_| true);
    // With the interceptor no CLIENT span exists: the caller's span is injected.
    let client = match case.via {
        Via::Layer => spans::one(checks, &trace, caller_side, "CLIENT", name, |_| true),
        Via::Interceptor => None,
    };
    let caller = observed
        .caller
        .as_deref()
        .and_then(|id| trace.iter().find(|s| s.span_id == id));
    checks.eq(
        &label("spans of the trace (both sides)"),
        &trace.len(),
        &(2 + usize::from(direction == Direction::RustToPython && case.caller_span)
            - usize::from(case.via == Via::Interceptor)),
    );
    checks.spans += trace.len();

    // The callee's SERVER span: a child of the span that injected, across the boundary.
    match case.via {
        Via::Layer => {
            spans::parent_is(checks, callee, client, true);
            if direction == Direction::RustToPython && case.caller_span {
                spans::parent_is(checks, client, caller, false);
            }
            if !case.caller_span || direction == Direction::PythonToRust {
                let parent = case.parent.span.as_ref().map(|s| s.span_id.as_str());
                checks.eq(
                    &label("the CLIENT span's parent is the call's parent context"),
                    &client.and_then(|c| c.parent_span_id.as_deref()),
                    &parent,
                );
            }
        }
        Via::Interceptor => spans::parent_is(checks, callee, caller, true),
    }
    let handler = match (case.target, direction) {
        // No message: the handler said nothing.
        (Target::Relay, _) if case.items == 0 => None,
        (Target::Relay, _) => Some(observed.handler.clone()),
        (Target::Health, Direction::RustToPython) => {
            let seen: Option<Seen> = callee
                .and_then(|s| s.attribute(SEEN_ATTRIBUTE))
                .and_then(|text| serde_json::from_str(&text).ok());
            Some(check_handler(checks, direction, case, seen.as_slice()))
        }
        // tonic-health's handler says nothing of its Context.
        (Target::Health, Direction::PythonToRust) => None,
    };
    if let Some(handler) = handler {
        checks.eq(
            &label("the handler runs in its SERVER span"),
            &handler.as_deref(),
            &callee.map(|s| s.span_id.as_str()),
        );
    }
    for span in [caller, client, callee].into_iter().flatten() {
        checks.eq(
            &label(&format!("{:?} {} span: trace flags", span.side, span.kind)),
            &span.trace_flags,
            &case.flags(),
        );
    }

    // The lens span's status: read from the trailers (after the messages of a stream).
    let lens_span = match (direction, case.via) {
        (Direction::PythonToRust, _) => callee,
        (Direction::RustToPython, Via::Layer) => client,
        // No lens span: the interceptor only injects.
        (Direction::RustToPython, Via::Interceptor) => return,
    };
    let code = case.code as i32;
    let error = case.code != Code::Ok;
    checks.eq(
        &label("lens span: rpc.grpc.status_code, error.type, status"),
        &lens_span.map(|s| {
            (
                s.attribute("rpc.grpc.status_code"),
                s.attribute("error.type"),
                s.status.as_str(),
            )
        }),
        &Some((
            Some(code.to_string()),
            error.then(|| code_name(case.code).to_owned()),
            if error { "ERROR" } else { "UNSET" },
        )),
    );
    if case.streaming
        && let (Some(c), Some(s)) = (client, callee)
    {
        checks.check(
            &label("the CLIENT span ends after the SERVER span (at the stream's end)"),
            c.end_unix_nano >= s.end_unix_nano && s.end_unix_nano > 0,
            || {
                format!(
                    "client ended {}, server {}",
                    c.end_unix_nano, s.end_unix_nano
                )
            },
        );
    }
}
