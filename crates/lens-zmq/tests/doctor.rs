//! The doctor pairs a lost ZeroMQ hop as it pairs a queue's: lens-zmq's real spans, written as
//! OTLP/JSON, through lens-watch's assembler and doctor. A message sent by a traced producer and
//! received by a consumer whose message lost its context frame (an untraced relay in between)
//! is a `lost-context` finding naming both services; the same message with its context is none.
#![allow(clippy::unwrap_used)]

mod common;

use common::Setup;
use lens_watch::assemble::{Assembler, Config};
use lens_watch::decode::decode_json;
use lens_watch::diagnose::{Doctor, DoctorConfig, Finding};
use opentelemetry::Value;
use opentelemetry::trace::SpanKind;
use opentelemetry_sdk::trace::SpanData;
use serde_json::{Value as Json, json};

fn nanos(t: std::time::SystemTime) -> String {
    t.duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
        .to_string()
}

/// One OTLP/JSON export request of `service` holding `spans`, as an SDK exporter writes it.
fn export(service: &str, spans: &[SpanData]) -> String {
    let spans: Vec<Json> = spans
        .iter()
        .map(|span| {
            let attributes: Vec<Json> = span
                .attributes
                .iter()
                .map(|kv| {
                    let value = match &kv.value {
                        Value::I64(v) => json!({"intValue": v.to_string()}),
                        Value::Bool(v) => json!({"boolValue": v}),
                        other => json!({"stringValue": other.as_str()}),
                    };
                    json!({"key": kv.key.as_str(), "value": value})
                })
                .collect();
            let kind = match span.span_kind {
                SpanKind::Producer => 4,
                SpanKind::Consumer => 5,
                _ => 1,
            };
            let mut out = json!({
                "traceId": span.span_context.trace_id().to_string(),
                "spanId": span.span_context.span_id().to_string(),
                "name": span.name,
                "kind": kind,
                "startTimeUnixNano": nanos(span.start_time),
                "endTimeUnixNano": nanos(span.end_time),
                "flags": 0x101,
                "attributes": attributes,
            });
            if span.parent_span_id != opentelemetry::trace::SpanId::INVALID {
                out["parentSpanId"] = json!(span.parent_span_id.to_string());
            }
            out
        })
        .collect();
    json!({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]},
        "scopeSpans": [{"scope": {"name": "lens-zmq"}, "spans": spans}],
    }]})
    .to_string()
}

fn check(lines: &[String]) -> Vec<Finding> {
    let mut assembler = Assembler::new(Config::default());
    let now = std::time::Instant::now();
    for line in lines {
        let batch = decode_json(line.as_bytes()).unwrap();
        assert_eq!(batch.rejected, 0, "{line}");
        assembler.insert(batch.spans, now);
    }
    let mut doctor = Doctor::new(DoctorConfig::default());
    assembler
        .flush()
        .into_iter()
        .flat_map(|id| doctor.diagnose(assembler.trace(&id).unwrap(), &assembler))
        .collect()
}

/// The front end sends one message to `engine.requests`; the engine receives it with its
/// context frame (`keep`) or without it (an untraced relay dropped it). The two services'
/// spans, as their exporters would send them.
fn hop(keep: bool) -> Vec<String> {
    let (front, engine) = (Setup::new(), Setup::new());
    let mut frames = vec![b"request".to_vec()];
    front
        .producer()
        .send_frames("engine.requests", &mut frames)
        .end();
    if !keep {
        frames.pop();
    }
    engine
        .consumer()
        .process_frames("engine.requests", &mut frames)
        .end();
    vec![
        export("front-end", &front.spans()),
        export("engine", &engine.spans()),
    ]
}

#[test]
fn a_lost_zeromq_hop_is_a_lost_context_finding() {
    let findings = check(&hop(false));
    let rules: Vec<&str> = findings.iter().map(|f| f.rule.id()).collect();
    assert_eq!(rules, ["lost-context"], "{findings:?}");
    assert_eq!(findings[0].services, ["front-end", "engine"]);
}

#[test]
fn a_zeromq_hop_with_its_context_is_no_finding() {
    let findings = check(&hop(true));
    assert!(findings.is_empty(), "{findings:?}");
}
