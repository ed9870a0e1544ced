//! The OTLP/JSON messages (requests, resources, scopes, spans, events, links, log records) as
//! serde reads them, and their conversion into the protobuf messages.

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1 as otlp_common;
use opentelemetry_proto::tonic::logs::v1 as otlp_logs;
use opentelemetry_proto::tonic::resource::v1 as otlp_resource;
use opentelemetry_proto::tonic::trace::v1 as otlp_trace;
use serde::Deserialize;

use super::values::{
    AnyValue, Enum, HexId, Int, KeyValue, SeverityNumbers, SpanKinds, StatusCodes, kvs, nullable,
};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Request {
    #[serde(default, alias = "resource_spans", deserialize_with = "nullable")]
    resource_spans: Vec<ResourceSpans>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct LogsRequest {
    #[serde(default, alias = "resource_logs", deserialize_with = "nullable")]
    resource_logs: Vec<ResourceLogs>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceLogs {
    #[serde(default)]
    resource: Option<Resource>,
    #[serde(default, alias = "scope_logs", deserialize_with = "nullable")]
    scope_logs: Vec<ScopeLogs>,
    #[serde(default, alias = "schema_url", deserialize_with = "nullable")]
    schema_url: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ScopeLogs {
    #[serde(default)]
    scope: Option<Scope>,
    #[serde(default, alias = "log_records", deserialize_with = "nullable")]
    log_records: Vec<LogRecord>,
    #[serde(default, alias = "schema_url", deserialize_with = "nullable")]
    schema_url: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogRecord {
    #[serde(default, alias = "time_unix_nano")]
    time_unix_nano: Int<u64>,
    #[serde(default, alias = "observed_time_unix_nano")]
    observed_time_unix_nano: Int<u64>,
    #[serde(default, alias = "severity_number")]
    severity_number: Enum<SeverityNumbers>,
    #[serde(default, alias = "severity_text", deserialize_with = "nullable")]
    severity_text: String,
    #[serde(default)]
    body: Option<AnyValue>,
    #[serde(default, deserialize_with = "nullable")]
    attributes: Vec<KeyValue>,
    #[serde(default, alias = "dropped_attributes_count")]
    dropped_attributes_count: Int<u32>,
    #[serde(default)]
    flags: Int<u32>,
    #[serde(default, alias = "trace_id")]
    trace_id: HexId,
    #[serde(default, alias = "span_id")]
    span_id: HexId,
    #[serde(default, alias = "event_name", deserialize_with = "nullable")]
    event_name: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceSpans {
    #[serde(default)]
    resource: Option<Resource>,
    #[serde(default, alias = "scope_spans", deserialize_with = "nullable")]
    scope_spans: Vec<ScopeSpans>,
    #[serde(default, alias = "schema_url", deserialize_with = "nullable")]
    schema_url: String,
}

#[derive(Deserialize)]
struct Resource {
    #[serde(default, deserialize_with = "nullable")]
    attributes: Vec<KeyValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ScopeSpans {
    #[serde(default)]
    scope: Option<Scope>,
    #[serde(default, deserialize_with = "nullable")]
    spans: Vec<Span>,
    #[serde(default, alias = "schema_url", deserialize_with = "nullable")]
    schema_url: String,
}

#[derive(Deserialize)]
struct Scope {
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default, deserialize_with = "nullable")]
    version: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Span {
    #[serde(default, alias = "trace_id")]
    trace_id: HexId,
    #[serde(default, alias = "span_id")]
    span_id: HexId,
    #[serde(default, alias = "trace_state", deserialize_with = "nullable")]
    trace_state: String,
    #[serde(default, alias = "parent_span_id")]
    parent_span_id: HexId,
    #[serde(default)]
    flags: Int<u32>,
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default)]
    kind: Enum<SpanKinds>,
    #[serde(default, alias = "start_time_unix_nano")]
    start_time_unix_nano: Int<u64>,
    #[serde(default, alias = "end_time_unix_nano")]
    end_time_unix_nano: Int<u64>,
    #[serde(default, deserialize_with = "nullable")]
    attributes: Vec<KeyValue>,
    #[serde(default, alias = "dropped_attributes_count")]
    dropped_attributes_count: Int<u32>,
    #[serde(default, deserialize_with = "nullable")]
    events: Vec<Event>,
    #[serde(default, alias = "dropped_events_count")]
    dropped_events_count: Int<u32>,
    #[serde(default, deserialize_with = "nullable")]
    links: Vec<Link>,
    #[serde(default, alias = "dropped_links_count")]
    dropped_links_count: Int<u32>,
    #[serde(default)]
    status: Option<Status>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Event {
    #[serde(default, alias = "time_unix_nano")]
    time_unix_nano: Int<u64>,
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default, deserialize_with = "nullable")]
    attributes: Vec<KeyValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Link {
    #[serde(default, alias = "trace_id")]
    trace_id: HexId,
    #[serde(default, alias = "span_id")]
    span_id: HexId,
    #[serde(default, alias = "trace_state", deserialize_with = "nullable")]
    trace_state: String,
    #[serde(default, deserialize_with = "nullable")]
    attributes: Vec<KeyValue>,
    #[serde(default)]
    flags: Int<u32>,
}

#[derive(Deserialize)]
struct Status {
    #[serde(default, deserialize_with = "nullable")]
    message: String,
    #[serde(default)]
    code: Enum<StatusCodes>,
}

impl From<Request> for ExportTraceServiceRequest {
    fn from(r: Request) -> Self {
        ExportTraceServiceRequest {
            resource_spans: r
                .resource_spans
                .into_iter()
                .map(|rs| otlp_trace::ResourceSpans {
                    resource: resource(rs.resource),
                    scope_spans: rs
                        .scope_spans
                        .into_iter()
                        .map(|ss| otlp_trace::ScopeSpans {
                            scope: scope(ss.scope),
                            spans: ss.spans.into_iter().map(Into::into).collect(),
                            schema_url: ss.schema_url,
                        })
                        .collect(),
                    schema_url: rs.schema_url,
                })
                .collect(),
        }
    }
}

/// The resource of a `resourceSpans` or `resourceLogs` entry.
fn resource(resource: Option<Resource>) -> Option<otlp_resource::Resource> {
    resource.map(|res| otlp_resource::Resource {
        attributes: kvs(res.attributes),
        ..Default::default()
    })
}

/// The scope of a `scopeSpans` or `scopeLogs` entry.
fn scope(scope: Option<Scope>) -> Option<otlp_common::InstrumentationScope> {
    scope.map(|s| otlp_common::InstrumentationScope {
        name: s.name,
        version: s.version,
        ..Default::default()
    })
}

impl From<LogsRequest> for ExportLogsServiceRequest {
    fn from(r: LogsRequest) -> Self {
        ExportLogsServiceRequest {
            resource_logs: r
                .resource_logs
                .into_iter()
                .map(|rl| otlp_logs::ResourceLogs {
                    resource: resource(rl.resource),
                    scope_logs: rl
                        .scope_logs
                        .into_iter()
                        .map(|sl| otlp_logs::ScopeLogs {
                            scope: scope(sl.scope),
                            log_records: sl.log_records.into_iter().map(Into::into).collect(),
                            schema_url: sl.schema_url,
                        })
                        .collect(),
                    schema_url: rl.schema_url,
                })
                .collect(),
        }
    }
}

impl From<LogRecord> for otlp_logs::LogRecord {
    fn from(l: LogRecord) -> Self {
        otlp_logs::LogRecord {
            time_unix_nano: l.time_unix_nano.0,
            observed_time_unix_nano: l.observed_time_unix_nano.0,
            severity_number: l.severity_number.0,
            severity_text: l.severity_text,
            body: l.body.map(Into::into),
            attributes: kvs(l.attributes),
            dropped_attributes_count: l.dropped_attributes_count.0,
            flags: l.flags.0,
            trace_id: l.trace_id.0,
            span_id: l.span_id.0,
            event_name: l.event_name,
        }
    }
}

impl From<Span> for otlp_trace::Span {
    fn from(s: Span) -> Self {
        otlp_trace::Span {
            trace_id: s.trace_id.0,
            span_id: s.span_id.0,
            trace_state: s.trace_state,
            parent_span_id: s.parent_span_id.0,
            flags: s.flags.0,
            name: s.name,
            kind: s.kind.0,
            start_time_unix_nano: s.start_time_unix_nano.0,
            end_time_unix_nano: s.end_time_unix_nano.0,
            attributes: kvs(s.attributes),
            dropped_attributes_count: s.dropped_attributes_count.0,
            events: s
                .events
                .into_iter()
                .map(|e| otlp_trace::span::Event {
                    time_unix_nano: e.time_unix_nano.0,
                    name: e.name,
                    attributes: kvs(e.attributes),
                    dropped_attributes_count: 0,
                })
                .collect(),
            dropped_events_count: s.dropped_events_count.0,
            links: s
                .links
                .into_iter()
                .map(|l| otlp_trace::span::Link {
                    trace_id: l.trace_id.0,
                    span_id: l.span_id.0,
                    trace_state: l.trace_state,
                    attributes: kvs(l.attributes),
                    dropped_attributes_count: 0,
                    flags: l.flags.0,
                })
                .collect(),
            dropped_links_count: s.dropped_links_count.0,
            status: s.status.map(|st| otlp_trace::Status {
                message: st.message,
                code: st.code.0,
            }),
        }
    }
}
