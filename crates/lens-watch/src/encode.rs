//! Owned spans back to OTLP: an `ExportTraceServiceRequest` (protobuf messages), or OTLP/JSON as
//! the specification writes it (the format of the Collector's file exporter, one request a
//! line), which [`crate::decode`] reads back; log records as an OTLP/JSON
//! `ExportLogsServiceRequest` likewise ([`logs_to_json_line`]).

use std::sync::Arc;

use base64::Engine as _;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1 as otlp_common;
use opentelemetry_proto::tonic::resource::v1 as otlp_resource;
use opentelemetry_proto::tonic::trace::v1 as otlp_trace;
use serde_json::{Value as Json, json};

use crate::model::{KeyValue, LogRecord, Resource, Scope, Span, Value};

/// What came from a resource and a scope: a span or a log record.
trait Sourced {
    fn resource(&self) -> &Arc<Resource>;
    fn scope(&self) -> &Arc<Scope>;
}

impl Sourced for Span {
    fn resource(&self) -> &Arc<Resource> {
        &self.resource
    }
    fn scope(&self) -> &Arc<Scope> {
        &self.scope
    }
}

impl Sourced for LogRecord {
    fn resource(&self) -> &Arc<Resource> {
        &self.resource
    }
    fn scope(&self) -> &Arc<Scope> {
        &self.scope
    }
}

/// Runs of spans (or log records) that share a resource, then a scope (as they arrive from one
/// export).
fn groups<T: Sourced>(spans: &[T]) -> Vec<Vec<&[T]>> {
    let mut out: Vec<Vec<&[T]>> = Vec::new();
    let mut start = 0;
    for i in 1..=spans.len() {
        let split = i == spans.len()
            || !Arc::ptr_eq(spans[i].resource(), spans[start].resource())
            || !Arc::ptr_eq(spans[i].scope(), spans[start].scope());
        if split {
            let run = &spans[start..i];
            let same_resource = out
                .last()
                .and_then(|g| g.first())
                .is_some_and(|prev| Arc::ptr_eq(prev[0].resource(), run[0].resource()));
            match out.last_mut() {
                Some(group) if same_resource => group.push(run),
                _ => out.push(vec![run]),
            }
            start = i;
        }
    }
    out
}

/// `spans` as an OTLP request (protobuf messages).
pub fn to_request(spans: &[Span]) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: groups(spans)
            .into_iter()
            .map(|runs| otlp_trace::ResourceSpans {
                resource: Some(otlp_resource::Resource {
                    attributes: proto_attributes(&runs[0][0].resource.attributes),
                    ..Default::default()
                }),
                scope_spans: runs
                    .into_iter()
                    .map(|run| otlp_trace::ScopeSpans {
                        scope: Some(otlp_common::InstrumentationScope {
                            name: run[0].scope.name.clone(),
                            version: run[0].scope.version.clone(),
                            ..Default::default()
                        }),
                        spans: run.iter().map(proto_span).collect(),
                        schema_url: String::new(),
                    })
                    .collect(),
                schema_url: String::new(),
            })
            .collect(),
    }
}

fn proto_span(span: &Span) -> otlp_trace::Span {
    let (code, message) = match &span.status {
        crate::model::Status::Unset => (0, String::new()),
        crate::model::Status::Ok => (1, String::new()),
        crate::model::Status::Error(m) => (2, m.clone()),
    };
    otlp_trace::Span {
        trace_id: span.trace_id.0.to_vec(),
        span_id: span.span_id.0.to_vec(),
        trace_state: span.trace_state.clone(),
        parent_span_id: span
            .parent_span_id
            .map(|p| p.0.to_vec())
            .unwrap_or_default(),
        flags: span.flags,
        name: span.name.clone(),
        kind: span.kind.to_otlp(),
        start_time_unix_nano: span.start_unix_nano,
        end_time_unix_nano: span.end_unix_nano,
        attributes: proto_attributes(&span.attributes),
        dropped_attributes_count: 0,
        events: span
            .events
            .iter()
            .map(|e| otlp_trace::span::Event {
                time_unix_nano: e.time_unix_nano,
                name: e.name.clone(),
                attributes: proto_attributes(&e.attributes),
                dropped_attributes_count: 0,
            })
            .collect(),
        dropped_events_count: 0,
        links: span
            .links
            .iter()
            .map(|l| otlp_trace::span::Link {
                trace_id: l.trace_id.0.to_vec(),
                span_id: l.span_id.0.to_vec(),
                trace_state: l.trace_state.clone(),
                attributes: proto_attributes(&l.attributes),
                dropped_attributes_count: 0,
                flags: l.flags,
            })
            .collect(),
        dropped_links_count: 0,
        status: Some(otlp_trace::Status { message, code }),
    }
}

fn proto_attributes(kvs: &[KeyValue]) -> Vec<otlp_common::KeyValue> {
    kvs.iter()
        .map(|kv| otlp_common::KeyValue {
            key: kv.key.to_string(),
            value: Some(proto_value(&kv.value)),
            ..Default::default()
        })
        .collect()
}

fn proto_value(value: &Value) -> otlp_common::AnyValue {
    use otlp_common::any_value::Value as V;
    otlp_common::AnyValue {
        value: match value {
            Value::String(s) => Some(V::StringValue(s.clone())),
            Value::Bool(b) => Some(V::BoolValue(*b)),
            Value::Int(i) => Some(V::IntValue(*i)),
            Value::Double(d) => Some(V::DoubleValue(*d)),
            Value::Bytes(b) => Some(V::BytesValue(b.clone())),
            Value::Array(values) => Some(V::ArrayValue(otlp_common::ArrayValue {
                values: values.iter().map(proto_value).collect(),
            })),
            Value::KvList(kvs) => Some(V::KvlistValue(otlp_common::KeyValueList {
                values: proto_attributes(kvs),
            })),
            Value::Empty => None,
        },
    }
}

/// `spans` as one OTLP/JSON `ExportTraceServiceRequest` object: hex ids, integer enums,
/// lowerCamelCase keys, 64-bit integers as strings.
pub fn to_json(spans: &[Span]) -> Json {
    json_request(spans, ["resourceSpans", "scopeSpans", "spans"], json_span)
}

/// `items` as one OTLP/JSON request whose `keys` are those of its resources, scopes and items,
/// each item written by `item`.
fn json_request<T: Sourced>(items: &[T], keys: [&str; 3], item: fn(&T) -> Json) -> Json {
    let [resources, scopes, records] = keys;
    let groups: Vec<Json> = groups(items)
        .into_iter()
        .map(|runs| {
            json!({
                "resource": { "attributes": json_attributes(&runs[0][0].resource().attributes) },
                scopes: runs.into_iter().map(|run| json!({
                    "scope": { "name": run[0].scope().name, "version": run[0].scope().version },
                    records: run.iter().map(item).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({ resources: groups })
}

/// `logs` as one OTLP/JSON `ExportLogsServiceRequest` object, written as [`to_json`] writes
/// spans.
pub fn logs_to_json(logs: &[LogRecord]) -> Json {
    json_request(logs, ["resourceLogs", "scopeLogs", "logRecords"], json_log)
}

/// [`logs_to_json`] as one line of text, without its newline.
pub fn logs_to_json_line(logs: &[LogRecord]) -> String {
    logs_to_json(logs).to_string()
}

fn json_log(log: &LogRecord) -> Json {
    let mut out = json!({
        "timeUnixNano": log.time_unix_nano.to_string(),
        "observedTimeUnixNano": log.observed_time_unix_nano.to_string(),
        "severityNumber": log.severity_number,
        "severityText": log.severity_text,
        "body": json_value(&log.body),
        "attributes": json_attributes(&log.attributes),
    });
    if let Some(obj) = out.as_object_mut() {
        if let Some(trace) = log.trace_id {
            obj.insert("traceId".into(), Json::from(trace.to_string()));
        }
        if let Some(span) = log.span_id {
            obj.insert("spanId".into(), Json::from(span.to_string()));
        }
    }
    out
}

/// [`to_json`] as one line of text, without its newline.
pub fn to_json_line(spans: &[Span]) -> String {
    to_json(spans).to_string()
}

fn json_span(span: &Span) -> Json {
    let mut out = json!({
        "traceId": span.trace_id.to_string(),
        "spanId": span.span_id.to_string(),
        "flags": span.flags,
        "name": span.name,
        "kind": span.kind.to_otlp(),
        "startTimeUnixNano": span.start_unix_nano.to_string(),
        "endTimeUnixNano": span.end_unix_nano.to_string(),
        "attributes": json_attributes(&span.attributes),
    });
    if let Some(obj) = out.as_object_mut() {
        if let Some(parent) = span.parent_span_id {
            obj.insert("parentSpanId".into(), Json::from(parent.to_string()));
        }
        if !span.trace_state.is_empty() {
            obj.insert("traceState".into(), Json::from(span.trace_state.as_str()));
        }
        if !span.events.is_empty() {
            let events = span.events.iter().map(|e| {
                json!({
                    "timeUnixNano": e.time_unix_nano.to_string(),
                    "name": e.name,
                    "attributes": json_attributes(&e.attributes),
                })
            });
            obj.insert("events".into(), Json::Array(events.collect()));
        }
        if !span.links.is_empty() {
            let links = span.links.iter().map(|l| {
                let mut link = json!({
                    "traceId": l.trace_id.to_string(),
                    "spanId": l.span_id.to_string(),
                    "attributes": json_attributes(&l.attributes),
                    "flags": l.flags,
                });
                if !l.trace_state.is_empty()
                    && let Some(obj) = link.as_object_mut()
                {
                    obj.insert("traceState".into(), Json::from(l.trace_state.as_str()));
                }
                link
            });
            obj.insert("links".into(), Json::Array(links.collect()));
        }
        let status = match &span.status {
            crate::model::Status::Unset => None,
            crate::model::Status::Ok => Some(json!({ "code": 1 })),
            crate::model::Status::Error(m) => Some(json!({ "code": 2, "message": m })),
        };
        if let Some(status) = status {
            obj.insert("status".into(), status);
        }
    }
    out
}

fn json_attributes(kvs: &[KeyValue]) -> Json {
    Json::Array(
        kvs.iter()
            .map(|kv| json!({ "key": &*kv.key, "value": json_value(&kv.value) }))
            .collect(),
    )
}

fn json_value(value: &Value) -> Json {
    match value {
        Value::String(s) => json!({ "stringValue": s }),
        Value::Bool(b) => json!({ "boolValue": b }),
        Value::Int(i) => json!({ "intValue": i.to_string() }),
        Value::Double(d) if d.is_finite() => json!({ "doubleValue": d }),
        Value::Double(d) => json!({ "doubleValue": if d.is_nan() {
            "NaN"
        } else if *d > 0.0 {
            "Infinity"
        } else {
            "-Infinity"
        } }),
        Value::Bytes(b) => {
            json!({ "bytesValue": base64::engine::general_purpose::STANDARD.encode(b) })
        }
        Value::Array(values) => {
            json!({ "arrayValue": { "values": values.iter().map(json_value).collect::<Vec<_>>() } })
        }
        Value::KvList(kvs) => json!({ "kvlistValue": { "values": json_attributes(kvs) } }),
        Value::Empty => json!({}),
    }
}
