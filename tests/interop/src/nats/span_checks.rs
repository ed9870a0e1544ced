//! The checks of the spans both sides exported for a case.

use super::case::{Case, Mode};
use super::context_checks::traceparent;
use super::observed::Observed;
use crate::check::Checks;
use crate::spans::{self, Side, SpanRecord};

/// The spans both sides exported for `case`.
pub(super) fn check_spans(
    checks: &mut Checks,
    case: &Case,
    observed: &Observed,
    all: &[SpanRecord],
    port: u16,
) {
    let label = |what: &str| case.label(what);
    let trace: Vec<SpanRecord> = all
        .iter()
        .filter(|s| s.trace_id == case.trace_id())
        .cloned()
        .collect();
    if !case.sampled() {
        checks.check(
            &label("unsampled: no span of the trace exported on either side"),
            trace.is_empty(),
            || {
                format!(
                    "{:?}",
                    trace.iter().map(|s| (&s.side, &s.name)).collect::<Vec<_>>()
                )
            },
        );
        return;
    }
    let subject = case.subject();
    let (producer_side, consumer_side) = case.sides();
    let send = format!("send {subject}");
    let process = format!("process {subject}");
    let producer = spans::one(checks, &trace, producer_side, "PRODUCER", &send, |s| {
        s.name == send
    });
    let consumer = spans::one(checks, &trace, consumer_side, "CONSUMER", &process, |s| {
        s.name == process
    });
    let caller = observed
        .caller
        .as_deref()
        .and_then(|id| trace.iter().find(|s| s.span_id == id));
    let settle = case.mode == Mode::JetStream && consumer_side == Side::Rust;
    // A Rust requester's wait for the reply is a `receive` span of its own, a Rust JetStream
    // publisher's ack a `publish_ack` span.
    let rust_producer = producer_side == Side::Rust;
    let expected = 2
        + usize::from(observed.caller.is_some())
        + usize::from(case.mode == Mode::Request)
        + usize::from(case.mode == Mode::Request && rust_producer)
        + usize::from(case.mode == Mode::JetStream && rust_producer)
        + usize::from(settle);
    checks.eq(
        &label("spans of the trace (both sides)"),
        &trace.len(),
        &expected,
    );
    checks.spans += trace.len();

    spans::parent_is(checks, consumer, producer, true);
    match caller {
        Some(caller) => spans::parent_is(checks, producer, Some(caller), false),
        None => {
            let parent = case.parent.span.as_ref().map(|s| s.span_id.as_str());
            checks.eq(
                &label("the PRODUCER span's parent is the message's parent context"),
                &producer.and_then(|p| p.parent_span_id.as_deref()),
                &parent,
            );
        }
    }
    checks.eq(
        &label("the handler runs in the CONSUMER span"),
        &observed
            .handled
            .consumer
            .span
            .as_ref()
            .map(|s| s.span_id.as_str()),
        &consumer.map(|c| c.span_id.as_str()),
    );
    let arrived = traceparent(observed.handled.headers.get("traceparent"));
    checks.eq(
        &label("the traceparent header names the PRODUCER span"),
        &arrived.as_ref().map(|(_, s, _)| s.as_str()),
        &producer.map(|p| p.span_id.as_str()),
    );

    // The messaging attributes, on both sides' spans (lens's also name the server).
    for (span, operation, destination) in [
        (producer, "send", &subject),
        (consumer, "process", &subject),
    ] {
        let Some(span) = span else { continue };
        checks.eq(
            &label(&format!(
                "{:?} {} span: messaging attributes",
                span.side, span.kind
            )),
            &(
                span.attribute("messaging.system"),
                span.attribute("messaging.operation.name"),
                span.attribute("messaging.operation.type"),
                span.attribute("messaging.destination.name"),
            ),
            &(
                Some("nats".to_owned()),
                Some(operation.to_owned()),
                Some(operation.to_owned()),
                Some(destination.clone()),
            ),
        );
        if span.side == Side::Rust {
            checks.eq(
                &label(&format!(
                    "Rust {} span: server.address, server.port",
                    span.kind
                )),
                &(
                    span.attribute("server.address"),
                    span.attribute("server.port"),
                ),
                &(Some("127.0.0.1".to_owned()), Some(port.to_string())),
            );
        }
        if case.mode == Mode::JetStream {
            // A Rust publisher records the ack on its `publish_ack` span, the child of `send`.
            let acked = format!("publish_ack {subject}");
            let recorded = match (span.side, span.kind.as_str()) {
                (Side::Rust, "PRODUCER") => trace
                    .iter()
                    .find(|s| s.side == Side::Rust && s.name == acked)
                    .and_then(|s| s.attribute("messaging.nats.stream_sequence")),
                _ => span.attribute("messaging.nats.stream_sequence"),
            };
            checks.eq(
                &label(&format!(
                    "{:?} {} span: the stream sequence",
                    span.side, span.kind
                )),
                &recorded,
                &observed.handled.sequence.map(|s| s.to_string()),
            );
        }
    }
    if case.mode == Mode::Request {
        // The reply goes to the requester's inbox: a temporary destination, a span named `send`.
        let reply = spans::one(
            checks,
            &trace,
            consumer_side,
            "PRODUCER",
            "the reply",
            |s| s.name == "send",
        );
        spans::parent_is(checks, reply, consumer, false);
        checks.eq(
            &label("the reply's send span: a temporary destination"),
            &reply.and_then(|r| r.attribute("messaging.destination.temporary")),
            &Some("true".to_owned()),
        );
        let reply_traceparent = traceparent(
            observed
                .reply
                .as_ref()
                .and_then(|(_, h)| h.get("traceparent")),
        );
        checks.eq(
            &label("the reply's traceparent names the reply's send span"),
            &reply_traceparent.as_ref().map(|(_, s, _)| s.as_str()),
            &reply.map(|r| r.span_id.as_str()),
        );
    }
    if settle {
        let ack = format!("ack {subject}");
        let ack_span = spans::one(checks, &trace, Side::Rust, "CLIENT", &ack, |s| {
            s.name == ack
        });
        spans::parent_is(checks, ack_span, consumer, false);
    }
    for span in &trace {
        checks.eq(
            &label(&format!(
                "{:?} {} {:?}: trace flags",
                span.side, span.kind, span.name
            )),
            &span.trace_flags,
            &case.flags(),
        );
    }
}
