//! The checks of what the handler saw and what arrived in the headers.

use super::case::{Case, Direction, Mode};
use super::observed::Observed;
use crate::check::Checks;

/// `00-<trace>-<span>-<flags>` split in three.
pub(super) fn traceparent(value: Option<&String>) -> Option<(String, String, String)> {
    let mut parts = value?.split('-');
    let (version, trace, span, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    (version == "00" && parts.next().is_none())
        .then(|| (trace.to_owned(), span.to_owned(), flags.to_owned()))
}

/// What the handler saw and what arrived in the headers.
pub(super) fn check_context(checks: &mut Checks, case: &Case, observed: &Observed) {
    let label = |what: &str| case.label(what);
    let handled = &observed.handled;
    checks.eq(
        &label("handled on its subject"),
        &handled.subject,
        &case.subject(),
    );
    let span = handled.consumer.span.as_ref();
    checks.eq(
        &label("handler: trace id, flags, tracestate of the producer's context"),
        &span.map(|s| (s.trace_id.as_str(), s.trace_flags, s.tracestate.as_str())),
        &Some((
            case.trace_id(),
            case.flags(),
            case.parent.tracestate_header().as_str(),
        )),
    );
    checks.eq(
        &label("handler: baggage as the producer set it"),
        &handled.consumer.baggage,
        &case.parent.baggage,
    );
    let arrived = traceparent(handled.headers.get("traceparent"));
    checks.eq(
        &label("traceparent header: the trace id and flags"),
        &arrived.as_ref().map(|(t, _, f)| (t.as_str(), f.as_str())),
        &Some((case.trace_id(), format!("{:02x}", case.flags()).as_str())),
    );
    checks.eq(
        &label("tracestate header"),
        &handled.headers.get("tracestate").map(String::as_str),
        &(!case.parent.tracestate_header().is_empty())
            .then(|| case.parent.tracestate_header())
            .as_deref(),
    );
    checks.check(
        &label("baggage header present"),
        handled.headers.contains_key("baggage"),
        || format!("headers {:?}", handled.headers),
    );
    if case.direction == Direction::PythonToRust {
        let producer = observed
            .published
            .producer
            .as_ref()
            .and_then(|p| p.span.as_ref());
        checks.eq(
            &label("inject_context wrote the PRODUCER span's context"),
            &arrived.as_ref().map(|(_, s, _)| s.as_str()),
            &producer.map(|p| p.span_id.as_str()),
        );
        checks.eq(
            &label("the headers arrived as inject_context wrote them"),
            &handled.headers,
            &observed.published.headers,
        );
    }
    if case.mode == Mode::JetStream {
        checks.eq(
            &label("the consumer's message has the sequence of the publisher's ack"),
            &handled.sequence,
            &observed.published.sequence,
        );
        checks.check(
            &label("a stream sequence was read"),
            handled.sequence.is_some_and(|s| s > 0),
            || format!("{:?}", handled.sequence),
        );
    }
    if case.mode == Mode::Request {
        checks.eq(
            &label("the reply says what the responder's handler saw"),
            &observed.reply.as_ref().map(|(s, _)| s),
            &Some(&handled.consumer),
        );
        let reply_traceparent = traceparent(
            observed
                .reply
                .as_ref()
                .and_then(|(_, h)| h.get("traceparent")),
        );
        checks.eq(
            &label("the reply's traceparent: the same trace"),
            &reply_traceparent.as_ref().map(|(t, _, _)| t.as_str()),
            &Some(case.trace_id()),
        );
    }
    checks.contexts += 1;
}
