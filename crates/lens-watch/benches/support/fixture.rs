//! The benchmark fixture: a realistic span (10 attributes of the HTTP conventions, one event) in
//! batches of 512, across 8 traces of 64 spans. A batch comes from one service (as an SDK's
//! batch processor exports its own process's spans); batch `n` from service `n % 4`.

use std::sync::Arc;

use lens_watch::model::{
    Event, KeyValue, Resource, Scope, Span, SpanId, SpanKind, Status, TraceId, Value,
};

/// Spans per export batch (the SDK batch processor's default `max_export_batch_size`).
pub(crate) const BATCH: usize = 512;

/// Spans per trace in the fixture.
pub(crate) const PER_TRACE: usize = 64;

/// Batch `n`'s spans (ids unique per batch).
pub(crate) fn spans(n: u64) -> Vec<Span> {
    let services = ["gateway", "planner", "trainer", "rollout-worker"];
    let resource = Arc::new(Resource::for_service(services[(n % 4) as usize]));
    let scope = Arc::new(Scope {
        name: "opentelemetry-instrumentation-fastapi".into(),
        version: "0.66b2".into(),
    });
    let t0 = 1_700_000_000_000_000_000u64;
    (0..BATCH as u64)
        .map(|i| {
            let trace = n * 1000 + i / PER_TRACE as u64 + 1;
            let mut trace_id = [0u8; 16];
            trace_id[8..].copy_from_slice(&trace.to_be_bytes());
            let span = n * 100_000 + i + 1;
            let parent = (i % PER_TRACE as u64 != 0).then(|| SpanId((span - 1).to_be_bytes()));
            Span {
                trace_id: TraceId(trace_id),
                span_id: SpanId(span.to_be_bytes()),
                parent_span_id: parent,
                trace_state: String::new(),
                flags: 0x301,
                name: format!("POST /v1/stage/{}", i % 7),
                kind: if i % 2 == 0 {
                    SpanKind::Server
                } else {
                    SpanKind::Client
                },
                resource: Arc::clone(&resource),
                scope: Arc::clone(&scope),
                start_unix_nano: t0 + i * 1000,
                end_unix_nano: t0 + i * 1000 + 850_000,
                attributes: vec![
                    KeyValue::new("http.request.method", Value::String("POST".into())),
                    KeyValue::new(
                        "url.full",
                        Value::String(format!("http://planner.internal:8080/v1/stage/{}", i % 7)),
                    ),
                    KeyValue::new("url.path", Value::String(format!("/v1/stage/{}", i % 7))),
                    KeyValue::new("http.route", Value::String("/v1/stage/{id}".into())),
                    KeyValue::new("server.address", Value::String("planner.internal".into())),
                    KeyValue::new("server.port", Value::Int(8080)),
                    KeyValue::new("http.response.status_code", Value::Int(200)),
                    KeyValue::new("network.protocol.version", Value::String("1.1".into())),
                    KeyValue::new(
                        "user_agent.original",
                        Value::String("python-requests/2.34.2".into()),
                    ),
                    KeyValue::new("lens.request.tokens", Value::Int(1024)),
                ],
                events: vec![Event {
                    time_unix_nano: t0 + i * 1000 + 400_000,
                    name: "first token".into(),
                    attributes: vec![KeyValue::new("gen_ai.token.index", Value::Int(0))],
                }],
                links: Vec::new(),
                status: Status::Unset,
            }
        })
        .collect()
}
