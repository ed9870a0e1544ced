//! The checks of the pulled batch and of the links-only consumer.

use super::batch::{BATCH, BatchObserved, batch_label, batch_parent, linked_label, linked_parent};
use super::observed::{Handled, Published};
use crate::check::Checks;
use crate::spans::{self, Side, SpanRecord};

/// The batch: one CLIENT `receive` span that links to every Python PRODUCER span, each message's
/// CONSUMER `process` span the child of its PRODUCER span and linked to the `receive` span.
pub(super) fn check_batch(checks: &mut Checks, observed: &BatchObserved, all: &[SpanRecord]) {
    let parent = batch_parent();
    let trace_id = parent.span.as_ref().map_or("", |s| s.trace_id.as_str());
    checks.eq(
        &batch_label("messages in the batch, in order"),
        &observed
            .handled
            .iter()
            .map(|h| h.subject.as_str())
            .collect::<Vec<_>>(),
        &(0..BATCH)
            .map(|n| format!("rs.batch.{n}"))
            .collect::<Vec<_>>()
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    let receive = observed
        .receive
        .as_deref()
        .and_then(|id| all.iter().find(|s| s.span_id == id));
    checks.eq(
        &batch_label("the receive span: Rust CLIENT `receive RSBATCH`, a root, 3 messages"),
        &receive.map(|r| {
            (
                r.side,
                r.kind.as_str(),
                r.name.as_str(),
                r.parent_span_id.is_none(),
                r.attribute("messaging.batch.message_count"),
            )
        }),
        &Some((
            Side::Rust,
            "CLIENT",
            "receive RSBATCH",
            true,
            Some(BATCH.to_string()),
        )),
    );
    let producers: Vec<Option<&SpanRecord>> = observed
        .published
        .iter()
        .map(|p| {
            let id = p.producer.as_ref().and_then(|s| s.span.as_ref())?;
            all.iter()
                .find(|s| s.side == Side::Python && s.span_id == id.span_id)
        })
        .collect();
    let mut linked: Vec<(String, String)> = receive
        .map(|r| {
            r.links
                .iter()
                .map(|l| (l.trace_id.clone(), l.span_id.clone()))
                .collect()
        })
        .unwrap_or_default();
    linked.sort();
    let mut expected: Vec<(String, String)> = producers
        .iter()
        .flatten()
        .map(|p| (p.trace_id.clone(), p.span_id.clone()))
        .collect();
    expected.sort();
    checks.eq(
        &batch_label("the receive span links to every Python PRODUCER span, across the boundary"),
        &linked,
        &expected,
    );
    checks.eq(
        &batch_label("a Python PRODUCER span per message"),
        &expected.len(),
        &BATCH,
    );
    for (n, (handled, producer)) in observed.handled.iter().zip(&producers).enumerate() {
        let label = |what: &str| batch_label(&format!("message {n}: {what}"));
        let span = handled.consumer.span.as_ref();
        checks.eq(
            &label("handler: trace id, flags, tracestate, baggage of the producer's context"),
            &(
                span.map(|s| (s.trace_id.as_str(), s.trace_flags, s.tracestate.as_str())),
                &handled.consumer.baggage,
            ),
            &(
                Some((trace_id, 0x01, parent.tracestate_header().as_str())),
                &parent.baggage,
            ),
        );
        let process = span.and_then(|s| all.iter().find(|r| r.span_id == s.span_id));
        checks.eq(
            &label("the handler ran in a Rust CONSUMER `process` span"),
            &process.map(|p| (p.side, p.kind.as_str(), p.name.clone())),
            &Some((Side::Rust, "CONSUMER", format!("process rs.batch.{n}"))),
        );
        spans::parent_is(checks, process, *producer, true);
        checks.check(
            &label("the process span links to the receive span"),
            process.is_some_and(|p| {
                observed
                    .receive
                    .as_deref()
                    .is_some_and(|r| p.links.iter().any(|l| l.span_id == r))
            }),
            || format!("{:?}", process.map(|p| &p.links)),
        );
        checks.eq(
            &label("the stream sequence: Python's ack, the message, both spans"),
            &(
                handled.sequence,
                process.and_then(|p| p.attribute("messaging.nats.stream_sequence")),
                producer.and_then(|p| p.attribute("messaging.nats.stream_sequence")),
            ),
            &(
                observed.published.get(n).and_then(|p| p.sequence),
                observed
                    .published
                    .get(n)
                    .and_then(|p| p.sequence)
                    .map(|s| s.to_string()),
                observed
                    .published
                    .get(n)
                    .and_then(|p| p.sequence)
                    .map(|s| s.to_string()),
            ),
        );
        checks.contexts += 1;
    }
    let trace: Vec<&SpanRecord> = all.iter().filter(|s| s.trace_id == trace_id).collect();
    checks.eq(
        &batch_label("spans of the producers' trace: 3 PRODUCER, 3 CONSUMER"),
        &trace.len(),
        &(2 * BATCH),
    );
    checks.spans += trace.len() + usize::from(receive.is_some());
}

/// Links only: the `process` span starts a new trace that links to the Python PRODUCER span,
/// records why (`lens.trace.new_root` = `linked`), and the message's baggage is still current.
pub(super) fn check_linked(
    checks: &mut Checks,
    (published, handled): &(Published, Handled),
    all: &[SpanRecord],
) {
    let parent = linked_parent();
    let trace_id = parent.span.as_ref().map_or("", |s| s.trace_id.as_str());
    let producer = published
        .producer
        .as_ref()
        .and_then(|p| p.span.as_ref())
        .and_then(|p| {
            all.iter()
                .find(|s| s.side == Side::Python && s.span_id == p.span_id)
        });
    checks.eq(
        &linked_label("one Python PRODUCER span `send rs.linked.5b` in the producer's trace"),
        &producer.map(|p| (p.kind.as_str(), p.name.as_str(), p.trace_id.as_str())),
        &Some(("PRODUCER", "send rs.linked.5b", trace_id)),
    );
    let span = handled.consumer.span.as_ref();
    checks.check(
        &linked_label("handler: a new trace, sampled"),
        span.is_some_and(|s| s.trace_id != trace_id && s.sampled),
        || format!("{span:?}"),
    );
    checks.eq(
        &linked_label("handler: the message's baggage (the policy trusts it)"),
        &handled.consumer.baggage,
        &parent.baggage,
    );
    let process = span.and_then(|s| all.iter().find(|r| r.span_id == s.span_id));
    checks.eq(
        &linked_label("the Rust CONSUMER span: a root, `lens.trace.new_root` = linked"),
        &process.map(|p| {
            (
                p.kind.as_str(),
                p.name.as_str(),
                p.parent_span_id.is_none(),
                p.attribute("lens.trace.new_root"),
            )
        }),
        &Some((
            "CONSUMER",
            "process rs.linked.5b",
            true,
            Some("linked".to_owned()),
        )),
    );
    checks.eq(
        &linked_label("the CONSUMER span links to the Python PRODUCER span, across the boundary"),
        &process.map(|p| p.links.clone()),
        &producer.map(|p| {
            vec![spans::LinkRecord {
                trace_id: p.trace_id.clone(),
                span_id: p.span_id.clone(),
            }]
        }),
    );
    checks.spans += usize::from(producer.is_some()) + usize::from(process.is_some());
    checks.contexts += 1;
}
