//! The doctor's lost hop over a queue (docs/doctor.md#over-a-queue), case by case, each with
//! its near miss: OTLP/JSON as the messaging instrumentations write it, through the assembler
//! and the doctor as `lens check` runs them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use lens_watch::assemble::{Assembler, Config};
use lens_watch::decode::decode_json;
use lens_watch::diagnose::{Doctor, DoctorConfig, Finding, NEW_ROOT_ATTRIBUTE, Severity};
use lens_watch::model::{SpanId, TraceId};
use serde_json::{Value as Json, json};

const A: &str = "0af7651916cd43dd8448eb211c80319c";
const B: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const C: &str = "5c0c2a8b1d3e4f5061728394a5b6c7d8";
const D: &str = "6d1d3b9c2e4f506172839405b6c7d8e9";
const E: &str = "7e2e4cad3f50617283940516c7d8e9fa";

const INTERNAL: u8 = 1;
const PRODUCER: u8 = 4;
const CONSUMER: u8 = 5;

fn s(v: &str) -> Json {
    json!({ "stringValue": v })
}

fn i(v: i64) -> Json {
    json!({ "intValue": v.to_string() })
}

/// A span of `trace` as OTLP/JSON, 500 µs long from `start` µs after 1,700,000,000 s; `parent`
/// 0 for a root; `links` to (trace, span id).
fn span(
    trace: &str,
    (id, parent): (u64, u64),
    kind: u8,
    start: u64,
    attributes: &[(&str, Json)],
    links: &[(&str, u64)],
) -> Json {
    let t0 = 1_700_000_000_000_000_000u64;
    let mut span = json!({
        "traceId": trace,
        "spanId": format!("{id:016x}"),
        "name": "m",
        "kind": kind,
        "startTimeUnixNano": (t0 + start * 1000).to_string(),
        "endTimeUnixNano": (t0 + (start + 500) * 1000).to_string(),
        "flags": 0x101,
        "attributes": attributes.iter().map(|(k, v)| json!({"key": k, "value": v})).collect::<Vec<_>>(),
        "links": links.iter().map(|(t, id)| json!({"traceId": t, "spanId": format!("{id:016x}")})).collect::<Vec<_>>(),
    });
    if parent != 0 {
        span["parentSpanId"] = json!(format!("{parent:016x}"));
    }
    span
}

/// One OTLP/JSON export request of `service`.
fn export(service: &str, spans: Vec<Json>) -> String {
    json!({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": s(service)}]},
        "scopeSpans": [{"scope": {"name": "test"}, "spans": spans}],
    }]})
    .to_string()
}

/// The NATS attributes for `rollout.jobs`, then `extra`.
fn nats<'a>(extra: &[(&'a str, Json)]) -> Vec<(&'a str, Json)> {
    let mut attrs = vec![
        ("messaging.system", s("nats")),
        ("messaging.destination.name", s("rollout.jobs")),
    ];
    attrs.extend(extra.iter().cloned());
    attrs
}

/// trainer's PRODUCER span 2 at 5 ms, the root of `trace`.
fn send(trace: &str, extra: &[(&str, Json)]) -> String {
    export(
        "trainer",
        vec![span(trace, (2, 0), PRODUCER, 5_000, &nats(extra), &[])],
    )
}

/// `service`'s CONSUMER span 7, the root of `trace`, at `start` µs.
fn root(service: &str, trace: &str, start: u64, extra: &[(&str, Json)]) -> String {
    root_linked(service, trace, start, extra, &[])
}

fn root_linked(
    service: &str,
    trace: &str,
    start: u64,
    extra: &[(&str, Json)],
    links: &[(&str, u64)],
) -> String {
    export(
        service,
        vec![span(trace, (7, 0), CONSUMER, start, &nats(extra), links)],
    )
}

/// `service`'s CONSUMER span 3, the child of trainer's span 2 in `trace`.
fn child(service: &str, trace: &str) -> String {
    export(
        service,
        vec![span(trace, (3, 2), CONSUMER, 5_600, &nats(&[]), &[])],
    )
}

/// Every finding on the traces of these export requests, as `lens check` reads a file.
fn check(lines: &[String]) -> Vec<Finding> {
    check_with(DoctorConfig::default(), lines)
}

fn check_with(config: DoctorConfig, lines: &[String]) -> Vec<Finding> {
    let mut assembler = Assembler::new(Config::default());
    let now = Instant::now();
    for line in lines {
        let batch = decode_json(line.as_bytes()).unwrap();
        assert_eq!(batch.rejected, 0, "{line}");
        assembler.insert(batch.spans, now);
    }
    let mut doctor = Doctor::new(config);
    assembler
        .flush()
        .into_iter()
        .flat_map(|id| doctor.diagnose(assembler.trace(&id).unwrap(), &assembler))
        .collect()
}

fn rules(findings: &[Finding]) -> Vec<&'static str> {
    findings.iter().map(|f| f.rule.id()).collect()
}

fn trace(hex: &str) -> TraceId {
    TraceId::from_hex(hex).unwrap()
}

/// Both orders of completion give `expected` (rule ids).
fn either_order(lines: &[String], expected: &[&str]) -> Vec<Finding> {
    let mut reversed = lines.to_vec();
    reversed.reverse();
    let reversed = check(&reversed);
    assert_eq!(rules(&reversed), expected, "{reversed:#?}");
    let found = check(lines);
    assert_eq!(rules(&found), expected, "{found:#?}");
    found
}

fn cause(value: &str) -> (&'static str, Json) {
    (NEW_ROOT_ATTRIBUTE, s(value))
}

#[test]
fn fan_out_reports_every_consumer_that_started_a_new_trace() {
    // trainer publishes with its context: rollout-worker continues the trace, audit (a
    // subscriber that ignores the headers) starts its own.
    let lines = [
        send(A, &[]),
        child("rollout-worker", A),
        root("audit", B, 6_000, &[]),
    ];
    let found = either_order(&lines, &["lost-context"]);
    assert_eq!(found[0].services, ["trainer", "audit"]);
    assert_eq!(found[0].trace_ids, [trace(A), trace(B)]);
    // Two subscribers that lost it: each reported.
    either_order(
        &[
            send(A, &[]),
            child("rollout-worker", A),
            root("audit", B, 6_000, &[]),
            root("billing", C, 6_100, &[]),
        ],
        &["lost-context", "lost-context"],
    );
    // Near miss: another root of the service that continued it is another message (a queue
    // group gets each message once), not this one's lost hop.
    either_order(
        &[
            send(A, &[]),
            child("rollout-worker", A),
            root("rollout-worker", B, 6_000, &[]),
        ],
        &[],
    );
}

#[test]
fn only_a_link_to_the_paired_producer_continues_the_trace() {
    // A link to the producer's span: continued by link, in either order.
    either_order(
        &[send(A, &[]), root_linked("audit", B, 6_000, &[], &[(A, 2)])],
        &[],
    );
    // Links to anything else (the span current where the subscriber was polled, a batch
    // `receive` span): the message lost its context.
    let ambient = export("audit", vec![span(C, (1, 0), INTERNAL, 4_000, &[], &[])]);
    let found = either_order(
        &[
            send(A, &[]),
            ambient,
            root_linked("audit", B, 6_000, &[cause("none")], &[(C, 1)]),
        ],
        &["lost-context"],
    );
    assert_eq!(found[0].services, ["trainer", "audit"]);
    // `lens.trace.new_root` says the consumer linked by choice: continued by link, whatever
    // its links point to.
    for value in ["linked", "untrusted:linked"] {
        either_order(
            &[
                send(A, &[]),
                root_linked("audit", B, 6_000, &[cause(value)], &[(C, 1)]),
            ],
            &[],
        );
    }
}

#[test]
fn a_producer_whose_consumer_child_arrives_late_is_withdrawn() {
    // Live: trainer's trace closes with its PRODUCER childless; rollout-worker's child arrives
    // late and reopens it. A root of rollout-worker on the same destination in the window is
    // then another message, not this one's lost hop.
    let run = |late_child: bool| {
        let t0 = Instant::now();
        let mut assembler = Assembler::new(Config::default());
        let mut doctor = Doctor::new(DoctorConfig::default());
        let mut found = Vec::new();
        let mut step = |line: String, secs: u64| {
            let at = t0 + Duration::from_secs(secs);
            assembler.insert(decode_json(line.as_bytes()).unwrap().spans, at);
            let quiet = assembler.config().quiet_for;
            for id in assembler.poll(at + quiet) {
                found.extend(doctor.diagnose(assembler.trace(&id).unwrap(), &assembler));
            }
        };
        step(send(A, &[]), 0);
        if late_child {
            step(child("rollout-worker", A), 10);
        }
        step(root("rollout-worker", B, 6_000, &[]), 20);
        rules(&found)
    };
    assert_eq!(run(true), Vec::<&str>::new());
    // Near miss: without the late child, that root is the lost hop.
    assert_eq!(run(false), ["lost-context"]);
}

#[test]
fn a_backlog_consumer_pairs_by_message_id_long_after_the_send() {
    // 30 s after the send, past the 2 s window: the ids pair it.
    let later = 30_000_000;
    for ids in [
        // JetStream: the Nats-Msg-Id header (lens-nats records it on both sides).
        vec![("messaging.message.id", s("job-17"))],
        // JetStream: the stream sequence of the publisher's ack and of the delivery.
        vec![
            ("messaging.nats.stream", s("JOBS")),
            ("messaging.nats.stream_sequence", i(42)),
        ],
        // AMQP message-id, as the pika instrumentations write it (older key).
        vec![("messaging.message_id", s("b7f0"))],
        // Kafka: partition and offset.
        vec![
            ("messaging.destination.partition.id", s("3")),
            ("messaging.kafka.offset", i(1007)),
        ],
    ] {
        let found = either_order(
            &[send(A, &ids), root("rollout-worker", B, later, &ids)],
            &["lost-context"],
        );
        assert_eq!(found[0].trace_ids, [trace(A), trace(B)], "{ids:?}");
    }
    // Near misses: another id, at any time; no ids, past the window.
    let other = [("messaging.message.id", s("job-18"))];
    let ids = [("messaging.message.id", s("job-17"))];
    either_order(
        &[send(A, &ids), root("rollout-worker", B, 6_000, &other)],
        &[],
    );
    either_order(&[send(A, &[]), root("rollout-worker", B, later, &[])], &[]);
    // The window is the doctor's option: 60 s pairs what 2 s does not.
    let wide = DoctorConfig {
        queue_window_nanos: 60_000_000_000,
        ..DoctorConfig::default()
    };
    assert_eq!(
        rules(&check_with(
            wide,
            &[send(A, &[]), root("rollout-worker", B, later, &[])]
        )),
        ["lost-context"]
    );
    // Kafka partitions tell messages apart without offsets: another partition is no pair.
    let p = |n: &str| [("messaging.kafka.partition", s(n))];
    either_order(
        &[send(A, &p("1")), root("rollout-worker", B, 6_000, &p("2"))],
        &[],
    );
    either_order(
        &[send(A, &p("1")), root("rollout-worker", B, 6_000, &p("1"))],
        &["lost-context"],
    );
}

#[test]
fn a_publisher_and_a_consumer_in_one_service_are_a_pair_like_any_other() {
    let found = either_order(
        &[send(A, &[]), root("trainer", B, 6_000, &[])],
        &["lost-context"],
    );
    assert_eq!(found[0].services, ["trainer", "trainer"]);
    // Near miss: its consumer continued the trace inside the service.
    either_order(&[send(A, &[]), child("trainer", A)], &[]);
}

#[test]
fn several_possible_producers_without_ids_are_a_warning_listing_them() {
    let second = export(
        "scheduler",
        vec![span(C, (4, 0), PRODUCER, 5_200, &nats(&[]), &[])],
    );
    let found = check(&[
        send(A, &[]),
        second.clone(),
        root("rollout-worker", B, 6_000, &[]),
    ]);
    assert_eq!(rules(&found), ["ambiguous-producer"], "{found:#?}");
    let f = &found[0];
    assert_eq!(f.severity(), Severity::Warning);
    assert_eq!(f.services, ["trainer", "scheduler", "rollout-worker"]);
    assert_eq!(f.trace_ids.len(), 3);
    assert!(f.span_ids.contains(&SpanId(2u64.to_be_bytes())));
    assert!(f.span_ids.contains(&SpanId(4u64.to_be_bytes())));
    assert!(f.message.contains("2 producers"), "{}", f.message);
    // The producers completing in the other order: the same.
    let found = check(&[
        second.clone(),
        send(A, &[]),
        root("rollout-worker", B, 6_000, &[]),
    ]);
    assert_eq!(rules(&found), ["ambiguous-producer"], "{found:#?}");
    // The consumer says it found no context: the loss is certain, the candidates listed.
    let found = check(&[
        send(A, &[]),
        second.clone(),
        root("rollout-worker", B, 6_000, &[cause("none")]),
    ]);
    assert_eq!(rules(&found), ["lost-context"]);
    assert_eq!(found[0].severity(), Severity::Error);
    assert_eq!(found[0].trace_ids.len(), 3);
    // Near miss: message ids say which one.
    let id = |m: &str| [("messaging.message.id", s(m))];
    let second = export(
        "scheduler",
        vec![span(C, (4, 0), PRODUCER, 5_200, &nats(&id("m2")), &[])],
    );
    let found = check(&[
        send(A, &id("m1")),
        second,
        root("rollout-worker", B, 6_000, &id("m2")),
    ]);
    assert_eq!(rules(&found), ["lost-context"]);
    assert_eq!(found[0].trace_ids, [trace(C), trace(B)]);
    // Near miss: the earlier message was consumed by rollout-worker already.
    let found = check(&[
        send(A, &[]),
        root("rollout-worker", D, 5_100, &[]),
        export(
            "scheduler",
            vec![span(C, (4, 0), PRODUCER, 5_200, &nats(&[]), &[])],
        ),
        root("rollout-worker", E, 6_000, &[]),
    ]);
    assert_eq!(
        rules(&found),
        ["lost-context", "lost-context"],
        "{found:#?}"
    );
    assert_eq!(found[1].trace_ids, [trace(C), trace(E)]);
}

#[test]
fn a_destination_ignored_on_purpose_is_info_with_its_cause() {
    let found = either_order(
        &[
            send(A, &[]),
            root("audit", B, 6_000, &[cause("untrusted:ignored")]),
        ],
        &["untrusted-ignored"],
    );
    assert_eq!(found[0].severity(), Severity::Info);
    assert_eq!(found[0].services, ["trainer", "audit"]);
    assert!(
        found[0].message.contains("untrusted:ignored"),
        "{}",
        found[0].message
    );
    // Near miss: a consumer that found no traceparent is an error.
    either_order(
        &[send(A, &[]), root("audit", B, 6_000, &[cause("none")])],
        &["lost-context"],
    );
}

#[test]
fn a_consumer_under_spans_of_its_own_service_started_its_trace() {
    // pika without a context in the message: its CONSUMER span is the child of the span current
    // where the callback ran (here the worker's loop span).
    let polled = export(
        "rollout-worker",
        vec![
            span(B, (1, 0), INTERNAL, 5_500, &[], &[]),
            span(B, (7, 1), CONSUMER, 6_000, &nats(&[]), &[]),
        ],
    );
    either_order(&[send(A, &[]), polled], &["lost-context"]);
    // Near miss: under a span of another service (a request the worker was serving), it is in
    // that service's trace, not one it started: no finding rests on it.
    let served = [
        export("gateway", vec![span(B, (1, 0), INTERNAL, 5_500, &[], &[])]),
        export(
            "rollout-worker",
            vec![span(B, (7, 1), CONSUMER, 6_000, &nats(&[]), &[])],
        ),
    ];
    either_order(&[send(A, &[]), served[0].clone(), served[1].clone()], &[]);
}

/// `service`'s RabbitMQ span of `kind` in `trace` (the root) at `start` µs, destination under
/// `key`.
fn rabbit(
    service: &str,
    trace: &str,
    kind: u8,
    start: u64,
    key: &str,
    destination: &str,
) -> String {
    export(
        service,
        vec![span(
            trace,
            (if kind == PRODUCER { 2 } else { 7 }, 0),
            kind,
            start,
            &[("messaging.system", s("rabbitmq")), (key, s(destination))],
            &[],
        )],
    )
}

#[test]
fn rabbitmq_producer_and_consumer_names_pair_in_every_form() {
    const NAME: &str = "messaging.destination.name";
    const OLD: &str = "messaging.destination";
    for (producer, consumer) in [
        // Conventions 1.26 and later: `{exchange}:{routing key}`, `{exchange}:{routing key}:{queue}`.
        ((NAME, "jobs:rollout"), (NAME, "jobs:rollout:rollout-q")),
        // The default exchange: the routing key, and the queue (equal to it) once.
        ((NAME, "rollout-q"), (NAME, "rollout-q")),
        // pika: the exchange (or the routing key) on both sides.
        ((OLD, "jobs"), (OLD, "jobs")),
        // aio-pika: `{exchange},{routing key}`, consumed as the exchange; on the default exchange
        // `,{routing key}`, consumed as the routing key.
        ((OLD, "jobs,rollout"), (OLD, "jobs")),
        ((OLD, ",rollout-q"), (OLD, "rollout-q")),
        // Across instrumentations: aio-pika publishing, a 1.26 consumer.
        ((OLD, "jobs,rollout"), (NAME, "jobs:rollout:rollout-q")),
    ] {
        let lines = [
            rabbit("trainer", A, PRODUCER, 5_000, producer.0, producer.1),
            rabbit("rollout-worker", B, CONSUMER, 6_000, consumer.0, consumer.1),
        ];
        assert_eq!(
            rules(&check(&lines)),
            ["lost-context"],
            "{producer:?} {consumer:?}"
        );
    }
    // Near miss: another exchange.
    let lines = [
        rabbit("trainer", A, PRODUCER, 5_000, NAME, "jobs:rollout"),
        rabbit(
            "rollout-worker",
            B,
            CONSUMER,
            6_000,
            NAME,
            "audit:rollout:rollout-q",
        ),
    ];
    assert_eq!(check(&lines), []);
}

#[test]
fn a_producer_span_that_wraps_another_is_one_send() {
    // pika records BlockingChannel.basic_publish and, under it, Channel.basic_publish: two
    // PRODUCER spans of one message. One candidate, not two.
    let nested = export(
        "trainer",
        vec![
            span(A, (1, 0), PRODUCER, 5_000, &nats(&[]), &[]),
            span(A, (2, 1), PRODUCER, 5_100, &nats(&[]), &[]),
        ],
    );
    let found = either_order(
        &[nested, root("rollout-worker", B, 6_000, &[])],
        &["lost-context"],
    );
    assert_eq!(found[0].span_ids[0], SpanId(2u64.to_be_bytes()));
}

#[test]
fn an_ambiguous_finding_lists_eight_candidates_and_says_there_are_more() {
    // Twelve producers to one destination in the window, then one consumer root.
    let mut lines: Vec<String> = (0..12u64)
        .map(|n| {
            export(
                "scheduler",
                vec![span(
                    &format!("{:032x}", n + 100),
                    (2, 0),
                    PRODUCER,
                    5_000 + n * 10,
                    &nats(&[]),
                    &[],
                )],
            )
        })
        .collect();
    lines.push(root("rollout-worker", B, 6_000, &[]));
    let found = check(&lines);
    assert_eq!(rules(&found), ["ambiguous-producer"]);
    let f = &found[0];
    // Eight producers and the consumer.
    assert_eq!(f.span_ids.len(), 9);
    assert!(f.message.contains("more than 8 producers"), "{}", f.message);
    assert!(f.message.contains(", more;"), "{}", f.message);
}

#[test]
fn a_consumer_span_inside_another_of_the_message_is_one_consumer() {
    // A CONSUMER span with the destination, and inside it another (a framework's and the
    // user's): one lost hop, the outer span's.
    let nested = export(
        "rollout-worker",
        vec![
            span(B, (7, 0), CONSUMER, 6_000, &nats(&[]), &[]),
            span(B, (8, 7), CONSUMER, 6_100, &nats(&[]), &[]),
        ],
    );
    let found = either_order(&[send(A, &[]), nested], &["lost-context"]);
    assert_eq!(found[0].span_ids[1], SpanId(7u64.to_be_bytes()));
}
