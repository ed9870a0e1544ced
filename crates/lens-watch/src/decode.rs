//! OTLP in: an `ExportTraceServiceRequest` as protobuf or as OTLP/JSON, to owned [`Span`]s.
//!
//! Bytes that are not a request at all are a [`DecodeError`] (HTTP 400, gRPC
//! `INVALID_ARGUMENT`). A span that decodes but cannot be kept (a trace or span id of the wrong
//! length or all zero, a malformed parent or link id) is counted in [`Batch::rejected`] with the
//! first reason in [`Batch::error`]; the rest of the request is kept, as OTLP's
//! `partial_success` describes.
//!
//! OTLP/JSON is read as the specification writes it, and as real exporters send it: ids in hex
//! (either case), enums as integers (or their names), lowerCamelCase keys (the proto field names
//! too), 64-bit integers as strings or numbers, an empty `{}` AnyValue, unknown fields ignored.

use std::collections::HashSet;
use std::sync::Arc;

use base64::Engine as _;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1 as otlp_common;
use opentelemetry_proto::tonic::trace::v1 as otlp_trace;
use prost::Message as _;
use serde_json::{Map, Value as Json};

use crate::model::{
    Event, KeyValue, Link, Resource, Scope, Span, SpanId, SpanKind, Status, TraceId, Value,
};

/// Bytes that are not an OTLP trace export request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Not a protobuf `ExportTraceServiceRequest`.
    #[error("not an OTLP/protobuf ExportTraceServiceRequest: {0}")]
    Protobuf(#[from] prost::DecodeError),
    /// Not JSON.
    #[error("not JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// JSON, but not an OTLP/JSON `ExportTraceServiceRequest`.
    #[error("not an OTLP/JSON ExportTraceServiceRequest: {at}: {message}")]
    Shape {
        /// Where, as a path (`resourceSpans[0].scopeSpans[1].spans[2].startTimeUnixNano`).
        at: String,
        /// What is wrong there.
        message: &'static str,
    },
}

/// The spans of one request: those kept, and how many were rejected and why.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Batch {
    /// The spans kept, in the order of the request.
    pub spans: Vec<Span>,
    /// Spans that could not be kept.
    pub rejected: u64,
    /// Why the first rejected span was rejected.
    pub error: Option<String>,
}

impl Batch {
    fn reject(&mut self, why: impl FnOnce() -> String) {
        self.rejected += 1;
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
    let json: Json = serde_json::from_slice(bytes)?;
    Ok(from_request(json_request(&json)?))
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

/// The spans of a decoded request (the gRPC receiver gets it decoded).
pub fn from_request(request: ExportTraceServiceRequest) -> Batch {
    let mut batch = Batch::default();
    let keys = &mut Keys::default();
    for resource_spans in request.resource_spans {
        let resource = Arc::new(resource(resource_spans.resource, keys));
        for scope_spans in resource_spans.scope_spans {
            let scope = Arc::new(
                scope_spans
                    .scope
                    .map(|s| Scope {
                        name: s.name,
                        version: s.version,
                    })
                    .unwrap_or_default(),
            );
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

// ---- OTLP/JSON to the protobuf messages ----

/// A JSON path for error messages, built only when an error is reported.
#[derive(Clone, Copy)]
enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'static str),
    Index(&'a Path<'a>, usize),
}

impl Path<'_> {
    fn render(&self) -> String {
        match self {
            Path::Root => String::new(),
            Path::Key(parent, key) => {
                let p = parent.render();
                if p.is_empty() {
                    (*key).to_owned()
                } else {
                    format!("{p}.{key}")
                }
            }
            Path::Index(parent, i) => format!("{}[{i}]", parent.render()),
        }
    }

    fn error(&self, message: &'static str) -> DecodeError {
        DecodeError::Shape {
            at: match self.render() {
                p if p.is_empty() => "the top level".to_owned(),
                p => p,
            },
            message,
        }
    }
}

type Obj = Map<String, Json>;

fn object<'a>(json: &'a Json, at: &Path<'_>) -> Result<&'a Obj, DecodeError> {
    json.as_object()
        .ok_or_else(|| at.error("expected an object"))
}

/// The field `camel` (or its proto name `snake`), `None` when absent or null.
fn field<'a>(obj: &'a Obj, camel: &str, snake: &str) -> Option<&'a Json> {
    obj.get(camel)
        .or_else(|| obj.get(snake))
        .filter(|v| !v.is_null())
}

/// A repeated field: absent or null is empty.
fn array<'a>(
    obj: &'a Obj,
    camel: &'static str,
    snake: &str,
    at: &Path<'_>,
) -> Result<&'a [Json], DecodeError> {
    match field(obj, camel, snake) {
        None => Ok(&[]),
        Some(Json::Array(items)) => Ok(items),
        Some(_) => Err(Path::Key(at, camel).error("expected an array")),
    }
}

fn string(
    obj: &Obj,
    camel: &'static str,
    snake: &str,
    at: &Path<'_>,
) -> Result<String, DecodeError> {
    match field(obj, camel, snake) {
        None => Ok(String::new()),
        Some(Json::String(s)) => Ok(s.clone()),
        Some(_) => Err(Path::Key(at, camel).error("expected a string")),
    }
}

/// A 64-bit unsigned integer, as a string or a number.
fn uint64(obj: &Obj, camel: &'static str, snake: &str, at: &Path<'_>) -> Result<u64, DecodeError> {
    let bad = || Path::Key(at, camel).error("expected an unsigned integer (string or number)");
    match field(obj, camel, snake) {
        None => Ok(0),
        Some(Json::String(s)) => s.trim().parse().map_err(|_| bad()),
        Some(Json::Number(n)) => n
            .as_u64()
            .or_else(|| n.as_f64().and_then(integral_u64))
            .ok_or_else(bad),
        Some(_) => Err(bad()),
    }
}

/// A float with no fraction, in range, as u64 (`1e18` is a valid JSON integer).
fn integral_u64(f: f64) -> Option<u64> {
    (f.fract() == 0.0 && (0.0..=u64::MAX as f64).contains(&f)).then_some(f as u64)
}

fn integral_i64(f: f64) -> Option<i64> {
    (f.fract() == 0.0 && (i64::MIN as f64..=i64::MAX as f64).contains(&f)).then_some(f as i64)
}

/// A 32-bit unsigned integer (fixed32 flags, counts), as a number or a string.
fn uint32(obj: &Obj, camel: &'static str, snake: &str, at: &Path<'_>) -> Result<u32, DecodeError> {
    let bad = || Path::Key(at, camel).error("expected a 32-bit unsigned integer");
    match field(obj, camel, snake) {
        None => Ok(0),
        Some(Json::String(s)) => s.trim().parse().map_err(|_| bad()),
        Some(Json::Number(n)) => n
            .as_u64()
            .or_else(|| n.as_f64().and_then(integral_u64))
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(bad),
        Some(_) => Err(bad()),
    }
}

/// An enum: its integer value, or its name from `names` (index = value).
fn enumeration(
    obj: &Obj,
    camel: &'static str,
    snake: &str,
    names: &[&str],
    at: &Path<'_>,
) -> Result<i32, DecodeError> {
    let bad = || Path::Key(at, camel).error("expected an enum value (an integer or its name)");
    match field(obj, camel, snake) {
        None => Ok(0),
        Some(Json::Number(n)) => n
            .as_i64()
            .and_then(|v| i32::try_from(v).ok())
            .ok_or_else(bad),
        Some(Json::String(s)) => names
            .iter()
            .position(|name| name == s)
            .and_then(|i| i32::try_from(i).ok())
            .or_else(|| s.parse().ok())
            .ok_or_else(bad),
        Some(_) => Err(bad()),
    }
}

/// An id in hex (either case). A malformed id becomes bytes of the wrong length, so that the
/// span is rejected (counted in `partial_success`) rather than the whole request.
fn hex_id(
    obj: &Obj,
    camel: &'static str,
    snake: &str,
    at: &Path<'_>,
) -> Result<Vec<u8>, DecodeError> {
    let text = string(obj, camel, snake, at)?;
    if text.len() % 2 != 0 {
        return Ok(vec![0; 1]);
    }
    let mut out = Vec::with_capacity(text.len() / 2);
    for pair in text.as_bytes().chunks_exact(2) {
        match (
            char::from(pair[0]).to_digit(16),
            char::from(pair[1]).to_digit(16),
        ) {
            (Some(hi), Some(lo)) => out.push(u8::try_from(hi * 16 + lo).unwrap_or(0)),
            _ => return Ok(vec![0; 1]),
        }
    }
    Ok(out)
}

fn json_request(json: &Json) -> Result<ExportTraceServiceRequest, DecodeError> {
    let root = Path::Root;
    let obj = object(json, &root)?;
    let mut request = ExportTraceServiceRequest::default();
    let at = Path::Key(&root, "resourceSpans");
    for (i, rs) in array(obj, "resourceSpans", "resource_spans", &root)?
        .iter()
        .enumerate()
    {
        let at = Path::Index(&at, i);
        request.resource_spans.push(json_resource_spans(rs, &at)?);
    }
    Ok(request)
}

fn json_resource_spans(
    json: &Json,
    at: &Path<'_>,
) -> Result<otlp_trace::ResourceSpans, DecodeError> {
    let obj = object(json, at)?;
    let resource = match field(obj, "resource", "resource") {
        None => None,
        Some(r) => {
            let at = Path::Key(at, "resource");
            let r = object(r, &at)?;
            Some(opentelemetry_proto::tonic::resource::v1::Resource {
                attributes: json_attributes(r, &at)?,
                ..Default::default()
            })
        }
    };
    let mut scope_spans = Vec::new();
    let list = Path::Key(at, "scopeSpans");
    for (i, ss) in array(obj, "scopeSpans", "scope_spans", at)?
        .iter()
        .enumerate()
    {
        let at = Path::Index(&list, i);
        let ss_obj = object(ss, &at)?;
        let scope = match field(ss_obj, "scope", "scope") {
            None => None,
            Some(s) => {
                let at = Path::Key(&at, "scope");
                let s = object(s, &at)?;
                Some(otlp_common::InstrumentationScope {
                    name: string(s, "name", "name", &at)?,
                    version: string(s, "version", "version", &at)?,
                    ..Default::default()
                })
            }
        };
        let mut spans = Vec::new();
        let span_list = Path::Key(&at, "spans");
        for (j, span) in array(ss_obj, "spans", "spans", &at)?.iter().enumerate() {
            spans.push(json_span(span, &Path::Index(&span_list, j))?);
        }
        scope_spans.push(otlp_trace::ScopeSpans {
            scope,
            spans,
            schema_url: string(ss_obj, "schemaUrl", "schema_url", &at)?,
        });
    }
    Ok(otlp_trace::ResourceSpans {
        resource,
        scope_spans,
        schema_url: string(obj, "schemaUrl", "schema_url", at)?,
    })
}

const SPAN_KINDS: [&str; 6] = [
    "SPAN_KIND_UNSPECIFIED",
    "SPAN_KIND_INTERNAL",
    "SPAN_KIND_SERVER",
    "SPAN_KIND_CLIENT",
    "SPAN_KIND_PRODUCER",
    "SPAN_KIND_CONSUMER",
];
const STATUS_CODES: [&str; 3] = ["STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"];

fn json_span(json: &Json, at: &Path<'_>) -> Result<otlp_trace::Span, DecodeError> {
    let obj = object(json, at)?;
    let mut events = Vec::new();
    let list = Path::Key(at, "events");
    for (i, e) in array(obj, "events", "events", at)?.iter().enumerate() {
        let at = Path::Index(&list, i);
        let e = object(e, &at)?;
        events.push(otlp_trace::span::Event {
            time_unix_nano: uint64(e, "timeUnixNano", "time_unix_nano", &at)?,
            name: string(e, "name", "name", &at)?,
            attributes: json_attributes(e, &at)?,
            dropped_attributes_count: 0,
        });
    }
    let mut links = Vec::new();
    let list = Path::Key(at, "links");
    for (i, l) in array(obj, "links", "links", at)?.iter().enumerate() {
        let at = Path::Index(&list, i);
        let l = object(l, &at)?;
        links.push(otlp_trace::span::Link {
            trace_id: hex_id(l, "traceId", "trace_id", &at)?,
            span_id: hex_id(l, "spanId", "span_id", &at)?,
            trace_state: string(l, "traceState", "trace_state", &at)?,
            attributes: json_attributes(l, &at)?,
            dropped_attributes_count: 0,
            flags: uint32(l, "flags", "flags", &at)?,
        });
    }
    let status = match field(obj, "status", "status") {
        None => None,
        Some(s) => {
            let at = Path::Key(at, "status");
            let s = object(s, &at)?;
            Some(otlp_trace::Status {
                message: string(s, "message", "message", &at)?,
                code: enumeration(s, "code", "code", &STATUS_CODES, &at)?,
            })
        }
    };
    Ok(otlp_trace::Span {
        trace_id: hex_id(obj, "traceId", "trace_id", at)?,
        span_id: hex_id(obj, "spanId", "span_id", at)?,
        trace_state: string(obj, "traceState", "trace_state", at)?,
        parent_span_id: hex_id(obj, "parentSpanId", "parent_span_id", at)?,
        flags: uint32(obj, "flags", "flags", at)?,
        name: string(obj, "name", "name", at)?,
        kind: enumeration(obj, "kind", "kind", &SPAN_KINDS, at)?,
        start_time_unix_nano: uint64(obj, "startTimeUnixNano", "start_time_unix_nano", at)?,
        end_time_unix_nano: uint64(obj, "endTimeUnixNano", "end_time_unix_nano", at)?,
        attributes: json_attributes(obj, at)?,
        dropped_attributes_count: uint32(
            obj,
            "droppedAttributesCount",
            "dropped_attributes_count",
            at,
        )?,
        events,
        dropped_events_count: uint32(obj, "droppedEventsCount", "dropped_events_count", at)?,
        links,
        dropped_links_count: uint32(obj, "droppedLinksCount", "dropped_links_count", at)?,
        status,
    })
}

/// The `attributes` field of `obj`.
fn json_attributes(obj: &Obj, at: &Path<'_>) -> Result<Vec<otlp_common::KeyValue>, DecodeError> {
    let list = Path::Key(at, "attributes");
    json_key_values(array(obj, "attributes", "attributes", at)?, &list)
}

fn json_key_values(
    items: &[Json],
    list: &Path<'_>,
) -> Result<Vec<otlp_common::KeyValue>, DecodeError> {
    let mut out = Vec::with_capacity(items.len());
    for (i, kv) in items.iter().enumerate() {
        let at = Path::Index(list, i);
        let kv = object(kv, &at)?;
        let value = match field(kv, "value", "value") {
            None => None,
            Some(v) => Some(json_any_value(v, &Path::Key(&at, "value"))?),
        };
        out.push(otlp_common::KeyValue {
            key: string(kv, "key", "key", &at)?,
            value,
            ..Default::default()
        });
    }
    Ok(out)
}

fn json_any_value(json: &Json, at: &Path<'_>) -> Result<otlp_common::AnyValue, DecodeError> {
    use otlp_common::any_value::Value as V;
    let obj = object(json, at)?;
    let value = if let Some(s) = field(obj, "stringValue", "string_value") {
        let at = Path::Key(at, "stringValue");
        V::StringValue(
            s.as_str()
                .ok_or_else(|| at.error("expected a string"))?
                .to_owned(),
        )
    } else if let Some(b) = field(obj, "boolValue", "bool_value") {
        let at = Path::Key(at, "boolValue");
        V::BoolValue(b.as_bool().ok_or_else(|| at.error("expected a boolean"))?)
    } else if let Some(i) = field(obj, "intValue", "int_value") {
        let bad = || Path::Key(at, "intValue").error("expected an integer (string or number)");
        V::IntValue(match i {
            Json::String(s) => s.trim().parse().map_err(|_| bad())?,
            Json::Number(n) => n
                .as_i64()
                .or_else(|| n.as_f64().and_then(integral_i64))
                .ok_or_else(bad)?,
            _ => return Err(bad()),
        })
    } else if let Some(d) = field(obj, "doubleValue", "double_value") {
        let bad = || Path::Key(at, "doubleValue").error("expected a number");
        V::DoubleValue(match d {
            Json::Number(n) => n.as_f64().ok_or_else(bad)?,
            Json::String(s) => match s.as_str() {
                "NaN" => f64::NAN,
                "Infinity" => f64::INFINITY,
                "-Infinity" => f64::NEG_INFINITY,
                other => other.trim().parse().map_err(|_| bad())?,
            },
            _ => return Err(bad()),
        })
    } else if let Some(b) = field(obj, "bytesValue", "bytes_value") {
        let bad = || Path::Key(at, "bytesValue").error("expected base64");
        let text = b.as_str().ok_or_else(bad)?;
        V::BytesValue(
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(text))
                .map_err(|_| bad())?,
        )
    } else if let Some(a) = field(obj, "arrayValue", "array_value") {
        let at = Path::Key(at, "arrayValue");
        let a = object(a, &at)?;
        let list = Path::Key(&at, "values");
        let mut values = Vec::new();
        for (i, v) in array(a, "values", "values", &at)?.iter().enumerate() {
            values.push(json_any_value(v, &Path::Index(&list, i))?);
        }
        V::ArrayValue(otlp_common::ArrayValue { values })
    } else if let Some(l) = field(obj, "kvlistValue", "kvlist_value") {
        let at = Path::Key(at, "kvlistValue");
        let l = object(l, &at)?;
        let list = Path::Key(&at, "values");
        V::KvlistValue(otlp_common::KeyValueList {
            values: json_key_values(array(l, "values", "values", &at)?, &list)?,
        })
    } else {
        // `{}`: an empty AnyValue, which the specification allows.
        return Ok(otlp_common::AnyValue { value: None });
    };
    Ok(otlp_common::AnyValue { value: Some(value) })
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
        assert_eq!(
            err.to_string(),
            "not an OTLP/JSON ExportTraceServiceRequest: resourceSpans[0].scopeSpans[0].spans[0].startTimeUnixNano: expected an unsigned integer (string or number)"
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

    #[test]
    fn an_empty_request_is_an_empty_batch() {
        assert_eq!(decode_json(b"{}").unwrap(), Batch::default());
        assert_eq!(decode_protobuf(b"").unwrap(), Batch::default());
    }
}
