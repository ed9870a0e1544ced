//! OTLP in: an `ExportTraceServiceRequest` as protobuf or as OTLP/JSON, to owned [`Span`]s;
//! an `ExportLogsServiceRequest` likewise to owned [`LogRecord`]s ([`decode_logs_protobuf`],
//! [`decode_logs_json`]).
//!
//! Bytes that are not a request at all are a [`DecodeError`] (HTTP 400, gRPC
//! `INVALID_ARGUMENT`). A span that decodes but cannot be kept (a trace or span id of the wrong
//! length or all zero, a malformed parent or link id) is counted in [`Batch::rejected`] with the
//! first reason in [`Batch::error`]; the rest of the request is kept, as OTLP's
//! `partial_success` describes. A log record is rejected likewise for a trace or span id of
//! the wrong length (an absent or all-zero one is no id: the record is kept, with no span).
//!
//! OTLP/JSON is read as the specification writes it, and as real exporters send it: ids in hex
//! (either case), enums as integers (or their names), lowerCamelCase keys (the proto field names
//! too), 64-bit integers as strings or numbers, an empty `{}` AnyValue, unknown fields ignored.

use std::collections::HashSet;
use std::sync::Arc;

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1 as otlp_common;
use opentelemetry_proto::tonic::logs::v1 as otlp_logs;
use opentelemetry_proto::tonic::trace::v1 as otlp_trace;
use prost::Message as _;

mod json;

use crate::model::{
    Event, KeyValue, Link, LogRecord, Resource, Scope, Span, SpanId, SpanKind, Status, TraceId,
    Value,
};

/// Bytes that are not an OTLP trace (or logs) export request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Not a protobuf `ExportTraceServiceRequest`.
    #[error("not an OTLP/protobuf ExportTraceServiceRequest: {0}")]
    Protobuf(#[from] prost::DecodeError),
    /// Not JSON (or nested deeper than 128 levels).
    #[error("not JSON: {0}")]
    Json(serde_json::Error),
    /// JSON, but not an OTLP/JSON `ExportTraceServiceRequest`.
    #[error("not an OTLP/JSON ExportTraceServiceRequest: {at}: {source}")]
    Shape {
        /// Where, as a path (`resourceSpans[0].scopeSpans[1].spans[2].startTimeUnixNano`).
        at: String,
        /// What is wrong there.
        source: serde_json::Error,
    },
    /// Not a protobuf `ExportLogsServiceRequest`.
    #[error("not an OTLP/protobuf ExportLogsServiceRequest: {0}")]
    LogsProtobuf(prost::DecodeError),
    /// JSON, but not an OTLP/JSON `ExportLogsServiceRequest`.
    #[error("not an OTLP/JSON ExportLogsServiceRequest: {at}: {source}")]
    LogsShape {
        /// Where, as a path (`resourceLogs[0].scopeLogs[1].logRecords[2].timeUnixNano`).
        at: String,
        /// What is wrong there.
        source: serde_json::Error,
    },
}

/// The spans (or the log records) of one request: those kept, and how many were rejected and
/// why.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Batch {
    /// The spans kept, in the order of the request.
    pub spans: Vec<Span>,
    /// Spans that could not be kept.
    pub rejected: u64,
    /// Why the first rejected span (or log record) was rejected.
    pub error: Option<String>,
    /// The log records kept, in the order of the request (a logs request: [`decode_logs_json`],
    /// [`decode_logs_protobuf`]).
    pub logs: Vec<LogRecord>,
    /// Log records that could not be kept.
    pub rejected_logs: u64,
}

impl Batch {
    /// A batch of `spans`, none rejected (spans from another source than a decoder: an SDK's
    /// exporter, a test).
    pub fn new(spans: Vec<Span>) -> Self {
        Batch {
            spans,
            ..Batch::default()
        }
    }

    /// A batch of log records, none rejected.
    pub fn of_logs(logs: Vec<LogRecord>) -> Self {
        Batch {
            logs,
            ..Batch::default()
        }
    }

    fn reject(&mut self, why: impl FnOnce() -> String) {
        self.rejected += 1;
        self.first_error(why);
    }

    fn reject_log(&mut self, why: impl FnOnce() -> String) {
        self.rejected_logs += 1;
        self.first_error(why);
    }

    fn first_error(&mut self, why: impl FnOnce() -> String) {
        if self.error.is_none() {
            self.error = Some(why());
        }
    }
}

/// Decodes an OTLP/protobuf `ExportTraceServiceRequest`.
pub fn decode_protobuf(bytes: &[u8]) -> Result<Batch, DecodeError> {
    Ok(from_request(ExportTraceServiceRequest::decode(bytes)?))
}

/// Decodes an OTLP/JSON `ExportTraceServiceRequest` (one object; see the module docs for what
/// is accepted).
pub fn decode_json(bytes: &[u8]) -> Result<Batch, DecodeError> {
    json::request(bytes)
        .map(from_request)
        .map_err(|(at, source)| {
            json_error(at, source, |at, source| DecodeError::Shape { at, source })
        })
}

/// Decodes an OTLP/protobuf `ExportLogsServiceRequest` (into [`Batch::logs`]).
pub fn decode_logs_protobuf(bytes: &[u8]) -> Result<Batch, DecodeError> {
    ExportLogsServiceRequest::decode(bytes)
        .map(from_logs_request)
        .map_err(DecodeError::LogsProtobuf)
}

/// Decodes an OTLP/JSON `ExportLogsServiceRequest` (into [`Batch::logs`]; read as
/// [`decode_json`] reads spans).
pub fn decode_logs_json(bytes: &[u8]) -> Result<Batch, DecodeError> {
    json::logs_request(bytes)
        .map(from_logs_request)
        .map_err(|(at, source)| {
            json_error(at, source, |at, source| DecodeError::LogsShape {
                at,
                source,
            })
        })
}

/// The error of JSON that does not parse at `at`: `shape` when it is JSON of the wrong shape.
fn json_error(
    at: String,
    source: serde_json::Error,
    shape: impl FnOnce(String, serde_json::Error) -> DecodeError,
) -> DecodeError {
    match source.classify() {
        serde_json::error::Category::Data => shape(
            if at == "." {
                "the top level".to_owned()
            } else {
                at
            },
            source,
        ),
        _ => DecodeError::Json(source),
    }
}

/// Attribute keys of one request, each kept once: the spans of a batch repeat the same keys,
/// usually in the same order, so the key at the same position of the previous attribute list is
/// tried first (a string compare), then a set.
#[derive(Debug, Default)]
struct Keys {
    previous: Vec<Arc<str>>,
    all: HashSet<Arc<str>>,
}

/// More keys than this in one request are not interned (hostile input cannot grow the set).
const MAX_INTERNED_KEYS: usize = 4096;

impl Keys {
    fn intern(&mut self, position: usize, key: String) -> Arc<str> {
        if let Some(previous) = self.previous.get(position)
            && **previous == *key
        {
            return Arc::clone(previous);
        }
        let shared = match self.all.get(key.as_str()) {
            Some(known) => Arc::clone(known),
            None => {
                let new: Arc<str> = Arc::from(key);
                if self.all.len() < MAX_INTERNED_KEYS {
                    self.all.insert(Arc::clone(&new));
                }
                new
            }
        };
        if position < self.previous.len() {
            self.previous[position] = Arc::clone(&shared);
        } else if position == self.previous.len() {
            self.previous.push(Arc::clone(&shared));
        }
        shared
    }
}

/// The spans of an OTLP request already decoded into its protobuf messages (both receivers
/// take bytes and decode them with [`decode_protobuf`] or [`decode_json`]).
pub fn from_request(request: ExportTraceServiceRequest) -> Batch {
    let mut batch = Batch::default();
    let keys = &mut Keys::default();
    for resource_spans in request.resource_spans {
        let resource = Arc::new(resource(resource_spans.resource, keys));
        for scope_spans in resource_spans.scope_spans {
            let scope = scope(scope_spans.scope);
            batch.spans.reserve(scope_spans.spans.len());
            for span in scope_spans.spans {
                match convert_span(span, &resource, &scope, keys) {
                    Ok(span) => batch.spans.push(span),
                    Err(why) => batch.reject(|| why),
                }
            }
        }
    }
    batch
}

/// The log records of an OTLP logs request already decoded into its protobuf messages.
pub fn from_logs_request(request: ExportLogsServiceRequest) -> Batch {
    let mut batch = Batch::default();
    let keys = &mut Keys::default();
    for resource_logs in request.resource_logs {
        let resource = Arc::new(resource(resource_logs.resource, keys));
        for scope_logs in resource_logs.scope_logs {
            let scope = scope(scope_logs.scope);
            batch.logs.reserve(scope_logs.log_records.len());
            for record in scope_logs.log_records {
                match convert_log(record, &resource, &scope, keys) {
                    Ok(log) => batch.logs.push(log),
                    Err(why) => batch.reject_log(|| why),
                }
            }
        }
    }
    batch
}

/// An optional id: none when absent or all zero, an error when of the wrong length.
fn optional_id<T>(bytes: &[u8], len: usize, from: fn(&[u8]) -> Option<T>) -> Result<Option<T>, ()> {
    if bytes.iter().all(|b| *b == 0) && (bytes.is_empty() || bytes.len() == len) {
        return Ok(None);
    }
    from(bytes).map(Some).ok_or(())
}

fn convert_log(
    record: otlp_logs::LogRecord,
    resource: &Arc<Resource>,
    scope: &Arc<Scope>,
    keys: &mut Keys,
) -> Result<LogRecord, String> {
    let trace_id = optional_id(&record.trace_id, 16, TraceId::from_slice)
        .map_err(|()| "log record: invalid trace id (must be empty or 16 bytes)".to_owned())?;
    let span_id = optional_id(&record.span_id, 8, SpanId::from_slice)
        .map_err(|()| "log record: invalid span id (must be empty or 8 bytes)".to_owned())?;
    Ok(LogRecord {
        time_unix_nano: record.time_unix_nano,
        observed_time_unix_nano: record.observed_time_unix_nano,
        severity_number: record.severity_number,
        severity_text: record.severity_text,
        body: any_value(record.body, keys),
        attributes: attributes(record.attributes, keys),
        trace_id,
        span_id,
        resource: Arc::clone(resource),
        scope: Arc::clone(scope),
    })
}

fn scope(scope: Option<otlp_common::InstrumentationScope>) -> Arc<Scope> {
    Arc::new(
        scope
            .map(|s| Scope {
                name: s.name,
                version: s.version,
            })
            .unwrap_or_default(),
    )
}

fn resource(
    resource: Option<opentelemetry_proto::tonic::resource::v1::Resource>,
    keys: &mut Keys,
) -> Resource {
    let attributes = resource
        .map(|r| attributes(r.attributes, keys))
        .unwrap_or_default();
    let service = crate::model::attribute(&attributes, "service.name")
        .and_then(Value::as_str)
        .unwrap_or(Resource::UNKNOWN_SERVICE);
    Resource {
        service: Arc::from(service),
        attributes,
    }
}

fn convert_span(
    span: otlp_trace::Span,
    resource: &Arc<Resource>,
    scope: &Arc<Scope>,
    keys: &mut Keys,
) -> Result<Span, String> {
    let trace_id = TraceId::from_slice(&span.trace_id).ok_or_else(|| {
        format!(
            "span {:?}: invalid trace id (must be 16 bytes, not all zero)",
            span.name
        )
    })?;
    let span_id = SpanId::from_slice(&span.span_id).ok_or_else(|| {
        format!(
            "span {:?}: invalid span id (must be 8 bytes, not all zero)",
            span.name
        )
    })?;
    let parent_span_id = match span.parent_span_id.as_slice() {
        [] => None,
        bytes if bytes.len() == 8 && bytes.iter().all(|b| *b == 0) => None,
        bytes => Some(SpanId::from_slice(bytes).ok_or_else(|| {
            format!(
                "span {:?}: invalid parent span id (must be empty or 8 bytes)",
                span.name
            )
        })?),
    };
    let mut links = Vec::with_capacity(span.links.len());
    for link in span.links {
        match (
            TraceId::from_slice(&link.trace_id),
            SpanId::from_slice(&link.span_id),
        ) {
            (Some(trace_id), Some(span_id)) => links.push(Link {
                trace_id,
                span_id,
                trace_state: link.trace_state,
                attributes: attributes(link.attributes, keys),
                flags: link.flags,
            }),
            _ => {
                return Err(format!(
                    "span {:?}: a link with an invalid trace or span id",
                    span.name
                ));
            }
        }
    }
    let (code, message) = span.status.map(|s| (s.code, s.message)).unwrap_or_default();
    Ok(Span {
        trace_id,
        span_id,
        parent_span_id,
        trace_state: span.trace_state,
        flags: span.flags,
        kind: SpanKind::from_otlp(span.kind),
        resource: Arc::clone(resource),
        scope: Arc::clone(scope),
        start_unix_nano: span.start_time_unix_nano,
        end_unix_nano: span.end_time_unix_nano,
        attributes: attributes(span.attributes, keys),
        events: {
            // Exact capacity: prost's vectors grew by doubling, and a mapped collect would keep
            // that allocation.
            let mut events = Vec::with_capacity(span.events.len());
            for e in span.events {
                events.push(Event {
                    time_unix_nano: e.time_unix_nano,
                    name: e.name,
                    attributes: attributes(e.attributes, keys),
                });
            }
            events
        },
        links,
        status: Status::from_otlp(code, message),
        name: span.name,
    })
}

/// Attributes with exact capacity (prost's vectors grew by doubling; a mapped collect would keep
/// that allocation) and interned keys.
fn attributes(kvs: Vec<otlp_common::KeyValue>, keys: &mut Keys) -> Vec<KeyValue> {
    let mut out = Vec::with_capacity(kvs.len());
    for (position, kv) in kvs.into_iter().enumerate() {
        out.push(KeyValue {
            key: keys.intern(position, kv.key),
            value: any_value(kv.value, keys),
        });
    }
    out
}

fn any_value(value: Option<otlp_common::AnyValue>, keys: &mut Keys) -> Value {
    use otlp_common::any_value::Value as V;
    match value.and_then(|v| v.value) {
        None | Some(V::StringValueStrindex(_)) => Value::Empty,
        Some(V::StringValue(s)) => Value::String(s),
        Some(V::BoolValue(b)) => Value::Bool(b),
        Some(V::IntValue(i)) => Value::Int(i),
        Some(V::DoubleValue(d)) => Value::Double(d),
        Some(V::BytesValue(b)) => Value::Bytes(b),
        Some(V::ArrayValue(a)) => {
            let mut values = Vec::with_capacity(a.values.len());
            for v in a.values {
                values.push(any_value(Some(v), keys));
            }
            Value::Array(values)
        }
        Some(V::KvlistValue(l)) => Value::KvList(attributes(l.values, keys)),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::testing::sample;

    fn one_span(span: &str) -> String {
        format!(
            r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"svc"}}}}]}},"scopeSpans":[{{"scope":{{"name":"s"}},"spans":[{span}]}}]}}]}}"#
        )
    }

    const GOOD: &str = r#"{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7","name":"ok","kind":2,"startTimeUnixNano":"1","endTimeUnixNano":"2"}"#;

    #[test]
    fn protobuf_round_trips_every_field() {
        let mut spans = sample();
        spans[0].events.push(Event {
            time_unix_nano: 5,
            name: "e".into(),
            attributes: vec![KeyValue::new(
                "v",
                Value::Array(vec![Value::Bytes(vec![1]), Value::Empty]),
            )],
        });
        spans[1].status = Status::Error("boom".into());
        let bytes = prost::Message::encode_to_vec(&crate::encode::to_request(&spans));
        let batch = decode_protobuf(&bytes).unwrap();
        assert_eq!(batch.rejected, 0);
        assert_eq!(batch.spans, spans);
    }

    #[test]
    fn json_round_trips_every_field() {
        let mut spans = sample();
        spans[2].attributes.push(KeyValue::new(
            "kv",
            Value::KvList(vec![KeyValue::new("d", Value::Double(f64::INFINITY))]),
        ));
        spans[2].trace_state = "a=b".into();
        let line = crate::encode::to_json_line(&spans);
        let batch = decode_json(line.as_bytes()).unwrap();
        assert_eq!(batch.spans, spans);
    }

    #[test]
    fn json_accepts_the_quirks_of_the_specification_and_of_real_senders() {
        // Upper-case hex, integers as numbers, enums by name, snake_case keys, `{}` values,
        // unknown fields, a float-typed integer.
        let span = r#"{"traceId":"4BF92F3577B34DA6A3CE929D0E0E4736","span_id":"00F067AA0BA902B7",
            "parentSpanId":"","name":"x","kind":"SPAN_KIND_CLIENT","startTimeUnixNano":1700000000000000000,
            "endTimeUnixNano":1.7e18,"flags":769,"unknownField":{"nested":[1,2]},
            "attributes":[{"key":"empty","value":{}},{"key":"n","value":{"intValue":42}},
                          {"key":"s","value":{"intValue":"-7"}},{"key":"d","value":{"doubleValue":"NaN"}},
                          {"key":"novalue"}],
            "status":{"code":"STATUS_CODE_ERROR","message":"m"}}"#;
        let batch = decode_json(one_span(span).as_bytes()).unwrap();
        assert_eq!(batch.rejected, 0, "{:?}", batch.error);
        let s = &batch.spans[0];
        assert_eq!(s.trace_id.to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(s.span_id.to_string(), "00f067aa0ba902b7");
        assert_eq!(s.parent_span_id, None);
        assert_eq!(s.kind, SpanKind::Client);
        assert_eq!(
            (s.start_unix_nano, s.end_unix_nano),
            (1_700_000_000_000_000_000, 1_700_000_000_000_000_000)
        );
        assert_eq!(s.parent_is_remote(), Some(true));
        assert_eq!(s.attribute("empty"), Some(&Value::Empty));
        assert_eq!(s.attribute("novalue"), Some(&Value::Empty));
        assert_eq!(s.attribute("n"), Some(&Value::Int(42)));
        assert_eq!(s.attribute("s"), Some(&Value::Int(-7)));
        assert!(matches!(s.attribute("d"), Some(Value::Double(d)) if d.is_nan()));
        assert_eq!(s.status, Status::Error("m".into()));
        assert_eq!(s.service(), "svc");
    }

    #[test]
    fn a_resource_without_service_name_is_unknown_service() {
        let json = format!(r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{GOOD}]}}]}}]}}"#);
        let batch = decode_json(json.as_bytes()).unwrap();
        assert_eq!(batch.spans[0].service(), "unknown_service");
    }

    #[test]
    fn an_invalid_trace_id_rejects_that_span_only() {
        let bad = GOOD.replace("4bf92f3577b34da6a3ce929d0e0e4736", "4bf92f");
        let batch = decode_json(one_span(&format!("{GOOD},{bad}")).as_bytes()).unwrap();
        assert_eq!((batch.spans.len(), batch.rejected), (1, 1));
        assert!(batch.error.unwrap().contains("invalid trace id"));
    }

    #[test]
    fn an_all_zero_trace_id_is_rejected() {
        let bad = GOOD.replace("4bf92f3577b34da6a3ce929d0e0e4736", &"0".repeat(32));
        let batch = decode_json(one_span(&bad).as_bytes()).unwrap();
        assert_eq!((batch.spans.len(), batch.rejected), (0, 1));
    }

    #[test]
    fn a_non_hex_span_id_is_rejected() {
        let bad = GOOD.replace("00f067aa0ba902b7", "00f067aa0ba902zz");
        let batch = decode_json(one_span(&bad).as_bytes()).unwrap();
        assert_eq!(batch.rejected, 1);
        assert!(batch.error.unwrap().contains("invalid span id"));
    }

    #[test]
    fn a_malformed_parent_or_link_id_is_rejected() {
        let parent = GOOD.replace(r#""name""#, r#""parentSpanId":"abc","name""#);
        let link = GOOD.replace(
            r#""name""#,
            r#""links":[{"traceId":"00","spanId":"00f067aa0ba902b7"}],"name""#,
        );
        for bad in [parent, link] {
            let batch = decode_json(one_span(&bad).as_bytes()).unwrap();
            assert_eq!(batch.rejected, 1, "{bad}");
        }
    }

    #[test]
    fn protobuf_ids_of_the_wrong_length_are_rejected_per_span() {
        let mut request = crate::encode::to_request(&sample());
        request.resource_spans[0].scope_spans[0].spans[0]
            .trace_id
            .pop();
        let bytes = prost::Message::encode_to_vec(&request);
        let batch = decode_protobuf(&bytes).unwrap();
        assert_eq!((batch.spans.len(), batch.rejected), (4, 1));
    }

    #[test]
    fn bytes_that_are_not_protobuf_are_an_error() {
        let err = decode_protobuf(b"\xff\xff\xff\xff").unwrap_err();
        assert!(matches!(err, DecodeError::Protobuf(_)));
        assert!(err.to_string().contains("OTLP/protobuf"));
    }

    #[test]
    fn text_that_is_not_json_is_an_error() {
        let err = decode_json(b"{\"resourceSpans\": [").unwrap_err();
        assert!(matches!(err, DecodeError::Json(_)), "{err}");
    }

    #[test]
    fn json_of_the_wrong_shape_names_where() {
        let err =
            decode_json(one_span(&GOOD.replace(r#""1""#, r#""one""#)).as_bytes()).unwrap_err();
        let message = err.to_string();
        assert!(
            message.starts_with(
                "not an OTLP/JSON ExportTraceServiceRequest: resourceSpans[0].scopeSpans[0].spans[0].startTimeUnixNano: invalid value: string \"one\", expected an unsigned integer (string or number)"
            ),
            "{message}"
        );
        for bad in [
            "[]",
            r#"{"resourceSpans":{}}"#,
            r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":5}]}]}]}"#,
            r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"startTimeUnixNano":1.5}]}]}]}"#,
            r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"attributes":[{"key":"k","value":{"intValue":true}}]}]}]}]}"#,
        ] {
            assert!(
                matches!(decode_json(bad.as_bytes()), Err(DecodeError::Shape { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let mut value = String::from("{}");
        for _ in 0..10_000 {
            value = format!(r#"{{"arrayValue":{{"values":[{value}]}}}}"#);
        }
        let span = GOOD.replace(
            r#""name""#,
            &format!(r#""attributes":[{{"key":"k","value":{value}}}],"name""#),
        );
        assert!(decode_json(one_span(&span).as_bytes()).is_err());
        // Protobuf: nested arrays past prost's recursion limit.
        let mut any = otlp_common::AnyValue { value: None };
        for _ in 0..200 {
            any = otlp_common::AnyValue {
                value: Some(otlp_common::any_value::Value::ArrayValue(
                    otlp_common::ArrayValue { values: vec![any] },
                )),
            };
        }
        let mut request = crate::encode::to_request(&sample());
        request.resource_spans[0].scope_spans[0].spans[0]
            .attributes
            .push(otlp_common::KeyValue {
                key: "k".into(),
                value: Some(any),
                ..Default::default()
            });
        assert!(decode_protobuf(&prost::Message::encode_to_vec(&request)).is_err());
    }

    #[test]
    fn attribute_keys_are_shared_across_the_spans_of_a_request_in_any_order() {
        let mut spans = sample();
        for (i, span) in spans.iter_mut().enumerate() {
            let mut kvs = vec![
                KeyValue::new("a", Value::Int(1)),
                KeyValue::new("b", Value::Int(2)),
            ];
            if i % 2 == 1 {
                kvs.reverse();
            }
            span.attributes = kvs;
        }
        let bytes = prost::Message::encode_to_vec(&crate::encode::to_request(&spans));
        let batch = decode_protobuf(&bytes).unwrap();
        assert_eq!(batch.spans, spans);
        let key = |s: usize, name: &str| {
            let kv = batch.spans[s]
                .attributes
                .iter()
                .find(|kv| &*kv.key == name)
                .unwrap();
            Arc::clone(&kv.key)
        };
        for s in 1..batch.spans.len() {
            assert!(Arc::ptr_eq(&key(0, "a"), &key(s, "a")));
            assert!(Arc::ptr_eq(&key(0, "b"), &key(s, "b")));
        }
        // Exact capacity, not the decoder's doubled one.
        assert!(
            batch
                .spans
                .iter()
                .all(|s| s.attributes.capacity() == s.attributes.len())
        );
    }

    #[test]
    fn doubles_read_back_exactly_from_json() {
        // Found by the fuzz target: a subnormal the default serde_json parser rounds.
        for d in [5.660466211991887e-309, f64::MIN_POSITIVE, 0.1, -0.0, 1e300] {
            let mut spans = sample();
            spans[0].attributes = vec![KeyValue::new("d", Value::Double(d))];
            let line = crate::encode::to_json_line(&spans);
            let back = decode_json(line.as_bytes()).unwrap();
            assert_eq!(
                back.spans[0].attribute("d"),
                Some(&Value::Double(d)),
                "{d:e}"
            );
        }
    }

    fn one_log(record: &str) -> String {
        format!(
            r#"{{"resourceLogs":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"svc"}}}}]}},"scopeLogs":[{{"scope":{{"name":"s"}},"logRecords":[{record}]}}]}}]}}"#
        )
    }

    #[test]
    fn log_records_decode_from_json_and_protobuf_alike() {
        let record = r#"{"timeUnixNano":"5","observedTimeUnixNano":6,"severityNumber":"SEVERITY_NUMBER_WARN",
            "severityText":"WARNING","body":{"stringValue":"disk low"},
            "attributes":[{"key":"k","value":{"intValue":"1"}}],"flags":1,
            "traceId":"4BF92F3577B34DA6A3CE929D0E0E4736","spanId":"00f067aa0ba902b7","unknown":1}"#;
        let batch = decode_logs_json(one_log(record).as_bytes()).unwrap();
        assert_eq!((batch.logs.len(), batch.rejected_logs), (1, 0));
        let log = &batch.logs[0];
        assert_eq!(log.body, Value::String("disk low".into()));
        assert_eq!(
            (log.severity(), log.severity_number, log.time()),
            ("WARNING", 13, 5)
        );
        assert_eq!(log.service(), "svc");
        assert_eq!(
            log.span(),
            Some((
                TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
                SpanId::from_hex("00f067aa0ba902b7").unwrap()
            ))
        );
        let request = json::logs_request(one_log(record).as_bytes()).unwrap();
        let back = decode_logs_protobuf(&prost::Message::encode_to_vec(&request)).unwrap();
        assert_eq!(back, batch);
        assert!(back.spans.is_empty() && back.rejected == 0);
    }

    #[test]
    fn log_records_round_trip_through_otlp_json() {
        let mut a = crate::testing::log(Some(3), "a");
        a.severity_text = "WARNING".into();
        let mut b = crate::testing::log(None, "b");
        b.body = Value::KvList(vec![KeyValue::new("k", Value::Bytes(vec![1, 2]))]);
        let logs = vec![a, b];
        let line = crate::encode::logs_to_json_line(&logs);
        assert!(line.starts_with(r#"{"resourceLogs":[{"#), "{line}");
        let back = decode_logs_json(line.as_bytes()).unwrap();
        assert_eq!((back.logs, back.rejected_logs), (logs, 0));
        // A logs line is no trace request: read as one, it holds nothing.
        assert_eq!(decode_json(line.as_bytes()).unwrap(), Batch::default());
    }

    #[test]
    fn a_log_record_without_ids_is_kept_and_one_with_bad_ids_rejected() {
        let none = r#"{"body":{"stringValue":"a"},"traceId":"","spanId":"0000000000000000"}"#;
        let bad = r#"{"body":{"stringValue":"b"},"traceId":"4bf92f","spanId":"00f067aa0ba902b7"}"#;
        let batch = decode_logs_json(one_log(&format!("{none},{bad}")).as_bytes()).unwrap();
        assert_eq!((batch.logs.len(), batch.rejected_logs), (1, 1));
        assert_eq!(batch.logs[0].span(), None);
        assert!(batch.error.unwrap().contains("invalid trace id"));
    }

    #[test]
    fn logs_that_do_not_decode_are_errors_that_say_logs() {
        let err = decode_logs_protobuf(b"\xff\xff\xff\xff").unwrap_err();
        assert!(
            err.to_string().contains("ExportLogsServiceRequest"),
            "{err}"
        );
        let err = decode_logs_json(
            br#"{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"timeUnixNano":"x"}]}]}]}"#,
        )
        .unwrap_err();
        assert!(
            err.to_string().starts_with(
                "not an OTLP/JSON ExportLogsServiceRequest: resourceLogs[0].scopeLogs[0].logRecords[0].timeUnixNano"
            ),
            "{err}"
        );
        assert!(matches!(
            decode_logs_json(b"{\"resourceLogs\": ["),
            Err(DecodeError::Json(_))
        ));
        assert!(matches!(
            decode_logs_json(b"[]"),
            Err(DecodeError::LogsShape { .. })
        ));
    }

    #[test]
    fn an_empty_request_is_an_empty_batch() {
        assert_eq!(decode_json(b"{}").unwrap(), Batch::default());
        assert_eq!(decode_protobuf(b"").unwrap(), Batch::default());
    }
}
