//! The owned span model every source (OTLP receivers, OTLP/JSON files, an SDK's in-process
//! exporter) produces and every step after it (assembler, renderers) reads.
//!
//! It keeps what OTLP says and the OpenTelemetry API cannot: a three-valued "parent is remote"
//! (OTLP span flags bit `0x100` says whether bit `0x200` is known), the trace flags an exporter
//! reports in the span flags' low byte, and attribute values that are bytes, arrays or key-value
//! lists.

use std::fmt;
use std::sync::Arc;

/// A 16-byte trace id; never all zero once decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TraceId(pub [u8; 16]);

/// An 8-byte span id; never all zero once decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SpanId(pub [u8; 8]);

fn write_hex(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    for b in bytes {
        write!(f, "{b:02x}")?;
    }
    Ok(())
}

/// Hex digits (either case) to bytes; `None` unless `text` is exactly `2 * N` hex digits.
fn parse_hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let digits = text.as_bytes();
    if digits.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (byte, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        let hi = char::from(pair[0]).to_digit(16)?;
        let lo = char::from(pair[1]).to_digit(16)?;
        *byte = u8::try_from(hi * 16 + lo).ok()?;
    }
    Some(out)
}

impl TraceId {
    /// From 32 hex digits (either case); `None` when malformed or all zero.
    pub fn from_hex(text: &str) -> Option<Self> {
        parse_hex::<16>(text)
            .filter(|b| b.iter().any(|x| *x != 0))
            .map(TraceId)
    }

    /// From 16 bytes; `None` when the length is wrong or the id is all zero.
    pub fn from_slice(bytes: &[u8]) -> Option<Self> {
        <[u8; 16]>::try_from(bytes)
            .ok()
            .filter(|b| b.iter().any(|x| *x != 0))
            .map(TraceId)
    }
}

impl SpanId {
    /// From 16 hex digits (either case); `None` when malformed or all zero.
    pub fn from_hex(text: &str) -> Option<Self> {
        parse_hex::<8>(text)
            .filter(|b| b.iter().any(|x| *x != 0))
            .map(SpanId)
    }

    /// From 8 bytes; `None` when the length is wrong or the id is all zero.
    pub fn from_slice(bytes: &[u8]) -> Option<Self> {
        <[u8; 8]>::try_from(bytes)
            .ok()
            .filter(|b| b.iter().any(|x| *x != 0))
            .map(SpanId)
    }
}

impl fmt::Display for TraceId {
    /// 32 lowercase hex digits, as in a W3C traceparent.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_hex(f, &self.0)
    }
}

impl fmt::Display for SpanId {
    /// 16 lowercase hex digits, as in a W3C traceparent.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_hex(f, &self.0)
    }
}

/// The kind of a span (OTLP `SpanKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SpanKind {
    /// `SPAN_KIND_UNSPECIFIED` (0), or a value this version does not know.
    Unspecified,
    /// An operation inside a service.
    Internal,
    /// The server side of a remote call.
    Server,
    /// The client side of a remote call.
    Client,
    /// The sender of an asynchronous message.
    Producer,
    /// The receiver of an asynchronous message.
    Consumer,
}

impl SpanKind {
    /// From the OTLP enum value.
    pub fn from_otlp(value: i32) -> Self {
        match value {
            1 => SpanKind::Internal,
            2 => SpanKind::Server,
            3 => SpanKind::Client,
            4 => SpanKind::Producer,
            5 => SpanKind::Consumer,
            _ => SpanKind::Unspecified,
        }
    }

    /// The OTLP enum value.
    pub fn to_otlp(self) -> i32 {
        match self {
            SpanKind::Unspecified => 0,
            SpanKind::Internal => 1,
            SpanKind::Server => 2,
            SpanKind::Client => 3,
            SpanKind::Producer => 4,
            SpanKind::Consumer => 5,
        }
    }

    /// `SERVER`, `CLIENT`, ...
    pub fn name(self) -> &'static str {
        match self {
            SpanKind::Unspecified => "UNSPECIFIED",
            SpanKind::Internal => "INTERNAL",
            SpanKind::Server => "SERVER",
            SpanKind::Client => "CLIENT",
            SpanKind::Producer => "PRODUCER",
            SpanKind::Consumer => "CONSUMER",
        }
    }
}

/// The status of a span (OTLP `Status`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Status {
    /// No status set (`STATUS_CODE_UNSET`, or an unknown code).
    #[default]
    Unset,
    /// `STATUS_CODE_OK`.
    Ok,
    /// `STATUS_CODE_ERROR`, with its message (possibly empty).
    Error(String),
}

impl Status {
    /// From the OTLP code and message (the message is kept for errors only).
    pub fn from_otlp(code: i32, message: String) -> Self {
        match code {
            1 => Status::Ok,
            2 => Status::Error(message),
            _ => Status::Unset,
        }
    }

    /// `UNSET`, `OK` or `ERROR`.
    pub fn name(&self) -> &'static str {
        match self {
            Status::Unset => "UNSET",
            Status::Ok => "OK",
            Status::Error(_) => "ERROR",
        }
    }
}

/// An attribute value (OTLP `AnyValue`).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A string.
    String(String),
    /// A boolean.
    Bool(bool),
    /// A 64-bit signed integer.
    Int(i64),
    /// A double.
    Double(f64),
    /// Bytes.
    Bytes(Vec<u8>),
    /// An array of values.
    Array(Vec<Value>),
    /// A list of key-value pairs.
    KvList(Vec<KeyValue>),
    /// No value (an empty `AnyValue`).
    Empty,
}

impl Value {
    /// The string, when this is a string value.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    /// As the OpenTelemetry API displays its values: strings bare, arrays as `[a,b]` with their
    /// strings quoted; bytes in base64, key-value lists as `{k: v, ...}`, empty as nothing.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::String(s) => f.write_str(s),
            Value::Bool(b) => b.fmt(f),
            Value::Int(i) => i.fmt(f),
            Value::Double(d) => d.fmt(f),
            Value::Bytes(b) => {
                use base64::Engine as _;
                f.write_str(&base64::engine::general_purpose::STANDARD.encode(b))
            }
            Value::Array(values) => {
                f.write_str("[")?;
                for (i, v) in values.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    match v {
                        Value::String(s) => write!(f, "\"{s}\"")?,
                        other => other.fmt(f)?,
                    }
                }
                f.write_str("]")
            }
            Value::KvList(kvs) => {
                f.write_str("{")?;
                for (i, kv) in kvs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}: {}", kv.key, kv.value)?;
                }
                f.write_str("}")
            }
            Value::Empty => Ok(()),
        }
    }
}

/// An attribute.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyValue {
    /// The key; shared by the attributes of one request that have the same key (the decoders
    /// intern keys: a stored span does not pay for its keys' text).
    pub key: Arc<str>,
    /// The value.
    pub value: Value,
}

impl KeyValue {
    /// An attribute `key = value`.
    pub fn new(key: impl Into<Arc<str>>, value: Value) -> Self {
        KeyValue {
            key: key.into(),
            value,
        }
    }
}

/// The first value of `key` among `attributes`.
pub fn attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a Value> {
    attributes
        .iter()
        .find(|kv| &*kv.key == key)
        .map(|kv| &kv.value)
}

/// The resource (the service) that produced spans; shared by every span of one export.
#[derive(Clone, Debug, PartialEq)]
pub struct Resource {
    /// `service.name`, or `unknown_service` when the resource has none (as the SDKs default).
    pub service: Arc<str>,
    /// Every resource attribute, `service.name` included.
    pub attributes: Vec<KeyValue>,
}

impl Resource {
    /// The service name given to a resource without `service.name`.
    pub const UNKNOWN_SERVICE: &'static str = "unknown_service";

    /// The instance of the service this resource names, for findings and reports that say
    /// which replica answered: `service.instance.id`, else its host (`host.name`, `host.id`,
    /// `k8s.pod.name`); `None` when it names none.
    pub(crate) fn instance(&self) -> Option<&str> {
        [
            "service.instance.id",
            "host.name",
            "host.id",
            "k8s.pod.name",
        ]
        .iter()
        .find_map(|k| attribute(&self.attributes, k).and_then(Value::as_str))
        .filter(|s| !s.is_empty())
    }

    /// A resource for `service` with no other attribute.
    pub fn for_service(service: &str) -> Self {
        Resource {
            service: Arc::from(service),
            attributes: vec![KeyValue::new(
                "service.name",
                Value::String(service.to_owned()),
            )],
        }
    }
}

/// The instrumentation scope (library) that produced spans.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scope {
    /// The scope's name (empty when not given).
    pub name: String,
    /// The scope's version (empty when not given).
    pub version: String,
}

/// A span event.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// When it happened, in nanoseconds since the Unix epoch.
    pub time_unix_nano: u64,
    /// Its name.
    pub name: String,
    /// Its attributes.
    pub attributes: Vec<KeyValue>,
}

/// A span link.
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    /// The linked span's trace.
    pub trace_id: TraceId,
    /// The linked span.
    pub span_id: SpanId,
    /// The linked context's W3C tracestate (empty when none).
    pub trace_state: String,
    /// The link's attributes.
    pub attributes: Vec<KeyValue>,
    /// OTLP span flags of the link (see [`Span::flags`]).
    pub flags: u32,
}

/// OTLP span flags bit: whether [`FLAG_PARENT_IS_REMOTE`] is known.
pub const FLAG_HAS_IS_REMOTE: u32 = 0x100;
/// OTLP span flags bit: the parent (or linked) context came from another process.
pub const FLAG_PARENT_IS_REMOTE: u32 = 0x200;

/// One finished span, owned.
#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    /// The trace it belongs to.
    pub trace_id: TraceId,
    /// Its id.
    pub span_id: SpanId,
    /// Its parent, `None` for a root.
    pub parent_span_id: Option<SpanId>,
    /// The W3C tracestate of its context (empty when none).
    pub trace_state: String,
    /// OTLP span flags: bits 0-7 the W3C trace flags (where the exporter reports them: the
    /// Rust SDK does, Python's does not), bit 8 ([`FLAG_HAS_IS_REMOTE`]) whether bit 9
    /// ([`FLAG_PARENT_IS_REMOTE`]) is known.
    pub flags: u32,
    /// Its name.
    pub name: String,
    /// Its kind.
    pub kind: SpanKind,
    /// The resource (service) that produced it.
    pub resource: Arc<Resource>,
    /// The instrumentation scope that produced it.
    pub scope: Arc<Scope>,
    /// Start, in nanoseconds since the Unix epoch.
    pub start_unix_nano: u64,
    /// End, in nanoseconds since the Unix epoch.
    pub end_unix_nano: u64,
    /// Its attributes.
    pub attributes: Vec<KeyValue>,
    /// Its events.
    pub events: Vec<Event>,
    /// Its links.
    pub links: Vec<Link>,
    /// Its status.
    pub status: Status,
}

impl Span {
    /// The service that produced the span (`service.name` of its resource).
    pub fn service(&self) -> &str {
        &self.resource.service
    }

    /// Whether the parent context came from another process: `None` when the exporter did not
    /// say (OTLP span flags without bit `0x100`).
    pub fn parent_is_remote(&self) -> Option<bool> {
        (self.flags & FLAG_HAS_IS_REMOTE != 0).then_some(self.flags & FLAG_PARENT_IS_REMOTE != 0)
    }

    /// The span's duration in nanoseconds (0 when it ends before it starts).
    pub fn duration_nanos(&self) -> u64 {
        self.end_unix_nano.saturating_sub(self.start_unix_nano)
    }

    /// The first value of attribute `key`.
    pub fn attribute(&self, key: &str) -> Option<&Value> {
        attribute(&self.attributes, key)
    }
}

/// One OTLP log record, owned; [`LogRecord::trace_id`] and [`LogRecord::span_id`] tie it to
/// the span it was emitted in, when it was.
#[derive(Clone, Debug, PartialEq)]
pub struct LogRecord {
    /// When the event happened, in nanoseconds since the Unix epoch (0 when not given).
    pub time_unix_nano: u64,
    /// When the SDK observed it, in nanoseconds since the Unix epoch (0 when not given).
    pub observed_time_unix_nano: u64,
    /// The OTLP severity number (1-24: TRACE to FATAL4; 0 unspecified).
    pub severity_number: i32,
    /// The severity as the source wrote it (`WARNING`, `warn`; empty when not given).
    pub severity_text: String,
    /// The body: the message (usually a string).
    pub body: Value,
    /// Its attributes.
    pub attributes: Vec<KeyValue>,
    /// The trace it was emitted in, `None` when none (absent or all zero).
    pub trace_id: Option<TraceId>,
    /// The span it was emitted in, `None` when none (absent or all zero).
    pub span_id: Option<SpanId>,
    /// The resource (service) that produced it.
    pub resource: Arc<Resource>,
    /// The instrumentation scope (logger) that produced it.
    pub scope: Arc<Scope>,
}

impl LogRecord {
    /// The service that produced the record (`service.name` of its resource).
    pub fn service(&self) -> &str {
        &self.resource.service
    }

    /// When it happened: its time, or when observed if it has none.
    pub fn time(&self) -> u64 {
        if self.time_unix_nano == 0 {
            self.observed_time_unix_nano
        } else {
            self.time_unix_nano
        }
    }

    /// The severity to show: the text the source gave, else the name of the number's range
    /// (`TRACE`, `DEBUG`, `INFO`, `WARN`, `ERROR`, `FATAL`), else empty.
    pub fn severity(&self) -> &str {
        if !self.severity_text.is_empty() {
            return &self.severity_text;
        }
        match self.severity_number {
            1..=4 => "TRACE",
            5..=8 => "DEBUG",
            9..=12 => "INFO",
            13..=16 => "WARN",
            17..=20 => "ERROR",
            21..=24 => "FATAL",
            _ => "",
        }
    }

    /// The span it belongs to, when it has both ids.
    pub fn span(&self) -> Option<(TraceId, SpanId)> {
        Some((self.trace_id?, self.span_id?))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn ids_parse_either_case_and_refuse_zero_and_bad_lengths() {
        let id = TraceId::from_hex("4BF92F3577B34DA6a3ce929d0e0e4736").unwrap();
        assert_eq!(id.to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert!(TraceId::from_hex(&"0".repeat(32)).is_none());
        assert!(TraceId::from_hex("4bf92f").is_none());
        assert!(TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e473g").is_none());
        assert!(SpanId::from_hex("00f067aa0ba902b7").is_some());
        assert!(SpanId::from_hex("+0f067aa0ba902b7").is_none());
        assert!(SpanId::from_slice(&[0; 8]).is_none());
        assert!(SpanId::from_slice(&[1; 7]).is_none());
        assert_eq!(SpanId::from_slice(&[1; 8]), Some(SpanId([1; 8])));
    }

    #[test]
    fn values_display_as_the_api_does() {
        let v = Value::Array(vec![Value::String("a".into()), Value::Int(2)]);
        assert_eq!(v.to_string(), "[\"a\",2]");
        assert_eq!(Value::Bytes(vec![1, 2]).to_string(), "AQI=");
        let kv = Value::KvList(vec![KeyValue::new("k", Value::Bool(true))]);
        assert_eq!(kv.to_string(), "{k: true}");
        assert_eq!(Value::Empty.to_string(), "");
    }

    #[test]
    fn parent_is_remote_is_three_valued() {
        let mut span = crate::testing::span(1, 2, Some(1));
        span.flags = 0x01;
        assert_eq!(span.parent_is_remote(), None);
        span.flags = 0x101;
        assert_eq!(span.parent_is_remote(), Some(false));
        span.flags = 0x301;
        assert_eq!(span.parent_is_remote(), Some(true));
    }

    #[test]
    fn a_log_record_names_its_severity_and_time() {
        let mut log = crate::testing::log(None, "hello");
        assert_eq!((log.severity(), log.time()), ("INFO", 5));
        log.severity_text = "warning".into();
        log.time_unix_nano = 0;
        log.observed_time_unix_nano = 7;
        assert_eq!((log.severity(), log.time()), ("warning", 7));
        log.severity_text.clear();
        log.severity_number = 0;
        assert_eq!(log.severity(), "");
        assert_eq!(log.span(), None);
    }
}
