//! OTLP/JSON straight into the protobuf messages, streamed by serde (no intermediate JSON tree:
//! memory stays proportional to the spans, not to the text's nesting).
//!
//! What the specification and real exporters write: lowerCamelCase keys (and the proto field
//! names), 64-bit integers as strings or numbers, enums as integers or names, ids in hex (either
//! case; a malformed id becomes bytes of the wrong length, so that only its span is rejected),
//! `{}` as an empty AnyValue, `null` as an absent field, unknown fields ignored.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use base64::Engine as _;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1 as otlp_common;
use opentelemetry_proto::tonic::logs::v1 as otlp_logs;
use opentelemetry_proto::tonic::resource::v1 as otlp_resource;
use opentelemetry_proto::tonic::trace::v1 as otlp_trace;
use serde::Deserialize;
use serde::de::{self, DeserializeOwned, Deserializer, IgnoredAny, MapAccess, Visitor};

/// Parses `bytes` as an OTLP/JSON `ExportTraceServiceRequest`; the error with the path of the
/// field at fault (`.` for the top level).
pub(super) fn request(
    bytes: &[u8],
) -> Result<ExportTraceServiceRequest, (String, serde_json::Error)> {
    parse::<Request, _>(bytes)
}

/// Parses `bytes` as an OTLP/JSON `ExportLogsServiceRequest`, as [`request`] does.
pub(super) fn logs_request(
    bytes: &[u8],
) -> Result<ExportLogsServiceRequest, (String, serde_json::Error)> {
    parse::<LogsRequest, _>(bytes)
}

/// Parses `bytes` as the JSON object `R`, into its protobuf message `P`.
fn parse<R: DeserializeOwned + Into<P>, P>(bytes: &[u8]) -> Result<P, (String, serde_json::Error)> {
    // serde reads a struct from an array too; a request is an object.
    if let Some(first) = bytes.iter().find(|b| !b.is_ascii_whitespace())
        && *first != b'{'
        && matches!(first, b'[' | b'"' | b'0'..=b'9' | b'-' | b't' | b'f' | b'n')
    {
        return Err((".".to_owned(), de::Error::custom("expected an object")));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let request: R = serde_path_to_error::deserialize(&mut deserializer)
        .map_err(|e| (e.path().to_string(), e.into_inner()))?;
    deserializer.end().map_err(|e| (".".to_owned(), e))?;
    Ok(request.into())
}

/// `null` or absent: the default.
fn nullable<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Request {
    #[serde(default, alias = "resource_spans", deserialize_with = "nullable")]
    resource_spans: Vec<ResourceSpans>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogsRequest {
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

#[derive(Deserialize)]
struct KeyValue {
    #[serde(default, deserialize_with = "nullable")]
    key: String,
    #[serde(default)]
    value: Option<AnyValue>,
}

#[derive(Default, Deserialize)]
struct KeyValues {
    #[serde(default, deserialize_with = "nullable")]
    values: Vec<KeyValue>,
}

#[derive(Default, Deserialize)]
struct Values {
    #[serde(default, deserialize_with = "nullable")]
    values: Vec<AnyValue>,
}

/// An id in hex; anything else becomes one zero byte (a wrong length: the span is rejected).
#[derive(Default)]
struct HexId(Vec<u8>);

impl<'de> Deserialize<'de> for HexId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let Some(text) = Option::<Cow<'de, str>>::deserialize(deserializer)? else {
            return Ok(HexId::default());
        };
        if text.len() % 2 != 0 {
            return Ok(HexId(vec![0]));
        }
        let mut out = Vec::with_capacity(text.len() / 2);
        for pair in text.as_bytes().chunks_exact(2) {
            match (
                char::from(pair[0]).to_digit(16),
                char::from(pair[1]).to_digit(16),
            ) {
                (Some(hi), Some(lo)) => out.push(u8::try_from(hi * 16 + lo).unwrap_or(0)),
                _ => return Ok(HexId(vec![0])),
            }
        }
        Ok(HexId(out))
    }
}

/// An integer as a JSON number (a float with no fraction included) or a string.
#[derive(Default)]
struct Int<T>(T);

trait FromJsonInt: Sized + Copy + Default + TryFrom<u64> + TryFrom<i64> + std::str::FromStr {
    const WHAT: &'static str;
    fn from_f64(f: f64) -> Option<Self>;
}

impl FromJsonInt for u64 {
    const WHAT: &'static str = "an unsigned integer (string or number)";
    fn from_f64(f: f64) -> Option<Self> {
        (f.fract() == 0.0 && (0.0..=u64::MAX as f64).contains(&f)).then_some(f as u64)
    }
}

impl FromJsonInt for u32 {
    const WHAT: &'static str = "a 32-bit unsigned integer";
    fn from_f64(f: f64) -> Option<Self> {
        (f.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&f)).then_some(f as u32)
    }
}

impl FromJsonInt for i64 {
    const WHAT: &'static str = "an integer (string or number)";
    fn from_f64(f: f64) -> Option<Self> {
        (f.fract() == 0.0 && (i64::MIN as f64..=i64::MAX as f64).contains(&f)).then_some(f as i64)
    }
}

struct IntVisitor<T>(PhantomData<T>);

impl<'de, T: FromJsonInt> Visitor<'de> for IntVisitor<T> {
    type Value = Int<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::WHAT)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        T::try_from(v)
            .map(Int)
            .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        T::try_from(v)
            .map(Int)
            .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        T::from_f64(v)
            .map(Int)
            .ok_or_else(|| E::invalid_value(de::Unexpected::Float(v), &self))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        v.trim()
            .parse()
            .map(Int)
            .map_err(|_| E::invalid_value(de::Unexpected::Str(v), &self))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Int(T::default()))
    }
}

impl<'de, T: FromJsonInt> Deserialize<'de> for Int<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(IntVisitor(PhantomData))
    }
}

/// The names of an enum's values, index = value.
trait Names {
    const NAMES: &'static [&'static str];
}

struct SpanKinds;

impl Names for SpanKinds {
    const NAMES: &'static [&'static str] = &[
        "SPAN_KIND_UNSPECIFIED",
        "SPAN_KIND_INTERNAL",
        "SPAN_KIND_SERVER",
        "SPAN_KIND_CLIENT",
        "SPAN_KIND_PRODUCER",
        "SPAN_KIND_CONSUMER",
    ];
}

struct StatusCodes;

struct SeverityNumbers;

impl Names for SeverityNumbers {
    const NAMES: &'static [&'static str] = &[
        "SEVERITY_NUMBER_UNSPECIFIED",
        "SEVERITY_NUMBER_TRACE",
        "SEVERITY_NUMBER_TRACE2",
        "SEVERITY_NUMBER_TRACE3",
        "SEVERITY_NUMBER_TRACE4",
        "SEVERITY_NUMBER_DEBUG",
        "SEVERITY_NUMBER_DEBUG2",
        "SEVERITY_NUMBER_DEBUG3",
        "SEVERITY_NUMBER_DEBUG4",
        "SEVERITY_NUMBER_INFO",
        "SEVERITY_NUMBER_INFO2",
        "SEVERITY_NUMBER_INFO3",
        "SEVERITY_NUMBER_INFO4",
        "SEVERITY_NUMBER_WARN",
        "SEVERITY_NUMBER_WARN2",
        "SEVERITY_NUMBER_WARN3",
        "SEVERITY_NUMBER_WARN4",
        "SEVERITY_NUMBER_ERROR",
        "SEVERITY_NUMBER_ERROR2",
        "SEVERITY_NUMBER_ERROR3",
        "SEVERITY_NUMBER_ERROR4",
        "SEVERITY_NUMBER_FATAL",
        "SEVERITY_NUMBER_FATAL2",
        "SEVERITY_NUMBER_FATAL3",
        "SEVERITY_NUMBER_FATAL4",
    ];
}

impl Names for StatusCodes {
    const NAMES: &'static [&'static str] =
        &["STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"];
}

/// An enum as its integer value or its name.
struct Enum<N>(i32, PhantomData<N>);

impl<N> Default for Enum<N> {
    fn default() -> Self {
        Enum(0, PhantomData)
    }
}

struct EnumVisitor<N>(PhantomData<N>);

impl<'de, N: Names> Visitor<'de> for EnumVisitor<N> {
    type Value = Enum<N>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an enum value (an integer or its name)")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        i32::try_from(v)
            .map(|v| Enum(v, PhantomData))
            .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        i32::try_from(v)
            .map(|v| Enum(v, PhantomData))
            .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        N::NAMES
            .iter()
            .position(|name| *name == v)
            .and_then(|i| i32::try_from(i).ok())
            .or_else(|| v.parse().ok())
            .map(|v| Enum(v, PhantomData))
            .ok_or_else(|| E::invalid_value(de::Unexpected::Str(v), &self))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Enum::default())
    }
}

impl<'de, N: Names> Deserialize<'de> for Enum<N> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(EnumVisitor(PhantomData))
    }
}

/// A double as a number, or `"NaN"`, `"Infinity"`, `"-Infinity"` or a number in a string.
struct Double(f64);

struct DoubleVisitor;

impl Visitor<'_> for DoubleVisitor {
    type Value = Double;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number")
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Double, E> {
        Ok(Double(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Double, E> {
        Ok(Double(v as f64))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Double, E> {
        Ok(Double(v as f64))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Double, E> {
        match v {
            "NaN" => Ok(Double(f64::NAN)),
            "Infinity" => Ok(Double(f64::INFINITY)),
            "-Infinity" => Ok(Double(f64::NEG_INFINITY)),
            other => other
                .trim()
                .parse()
                .map(Double)
                .map_err(|_| E::invalid_value(de::Unexpected::Str(v), &self)),
        }
    }
}

impl<'de> Deserialize<'de> for Double {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(DoubleVisitor)
    }
}

/// Base64 bytes (standard or URL-safe alphabet).
struct Base64(Vec<u8>);

impl<'de> Deserialize<'de> for Base64 {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = Cow::<'de, str>::deserialize(deserializer)?;
        base64::engine::general_purpose::STANDARD
            .decode(text.as_bytes())
            .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(text.as_bytes()))
            .map(Base64)
            .map_err(|_| de::Error::invalid_value(de::Unexpected::Str(&text), &"base64"))
    }
}

/// An AnyValue: one of its `*Value` fields, or none (`{}`, an empty value).
struct AnyValue(Option<otlp_common::any_value::Value>);

struct AnyValueVisitor;

impl<'de> Visitor<'de> for AnyValueVisitor {
    type Value = AnyValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an AnyValue object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AnyValue, A::Error> {
        use otlp_common::any_value::Value as P;
        let mut value = None;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            let next = match &*key {
                "stringValue" | "string_value" => {
                    map.next_value::<Option<String>>()?.map(P::StringValue)
                }
                "boolValue" | "bool_value" => map.next_value::<Option<bool>>()?.map(P::BoolValue),
                "intValue" | "int_value" => map
                    .next_value::<Option<Int<i64>>>()?
                    .map(|i| P::IntValue(i.0)),
                "doubleValue" | "double_value" => map
                    .next_value::<Option<Double>>()?
                    .map(|d| P::DoubleValue(d.0)),
                "bytesValue" | "bytes_value" => map
                    .next_value::<Option<Base64>>()?
                    .map(|b| P::BytesValue(b.0)),
                "arrayValue" | "array_value" => map.next_value::<Option<Values>>()?.map(|a| {
                    P::ArrayValue(otlp_common::ArrayValue {
                        values: a.values.into_iter().map(Into::into).collect(),
                    })
                }),
                "kvlistValue" | "kvlist_value" => map.next_value::<Option<KeyValues>>()?.map(|l| {
                    P::KvlistValue(otlp_common::KeyValueList {
                        values: kvs(l.values),
                    })
                }),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    None
                }
            };
            if next.is_some() {
                value = next;
            }
        }
        Ok(AnyValue(value))
    }
}

impl<'de> Deserialize<'de> for AnyValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(AnyValueVisitor)
    }
}

// ---- into the protobuf messages ----

impl From<AnyValue> for otlp_common::AnyValue {
    fn from(v: AnyValue) -> Self {
        otlp_common::AnyValue { value: v.0 }
    }
}

impl From<KeyValue> for otlp_common::KeyValue {
    fn from(kv: KeyValue) -> Self {
        otlp_common::KeyValue {
            key: kv.key,
            value: kv.value.map(Into::into),
            ..Default::default()
        }
    }
}

fn kvs(list: Vec<KeyValue>) -> Vec<otlp_common::KeyValue> {
    list.into_iter().map(Into::into).collect()
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
