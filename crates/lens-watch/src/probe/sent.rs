//! What the probe sends with its request ([`Sent`]), and the probe's own CLIENT span.

use std::sync::Arc;

use crate::diagnose::{BAGGAGE_KEYS_ATTRIBUTE as BAGGAGE_KEYS, split_url};
use crate::model::{
    FLAG_HAS_IS_REMOTE, KeyValue, Resource, Scope, Span, SpanId, SpanKind, Status, TraceId, Value,
};

/// The service name of the probe's own CLIENT span.
pub const PROBE_SERVICE: &str = "lens probe";

/// What the probe sent with its request.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Sent {
    /// The probe's trace.
    pub trace_id: TraceId,
    /// The probe's span: the parent the first service should see.
    pub span_id: SpanId,
    /// The W3C trace flags sent (`03`: sampled and random).
    pub flags: u8,
    /// The `tracestate` header sent.
    pub trace_state: String,
    /// The keys of the `baggage` header sent.
    pub baggage_keys: Vec<String>,
}

impl Sent {
    /// A probe context: `trace_id` / `span_id`, flags `03`, `trace_state` as the header value,
    /// and the baggage keys.
    pub fn new<K: Into<String>>(
        trace_id: TraceId,
        span_id: SpanId,
        trace_state: &str,
        baggage_keys: impl IntoIterator<Item = K>,
    ) -> Self {
        Sent {
            trace_id,
            span_id,
            flags: 0x03,
            trace_state: trace_state.to_owned(),
            baggage_keys: baggage_keys.into_iter().map(Into::into).collect(),
        }
    }

    /// The same context unsampled: flags `02` (the random flag kept, the sampled flag off), for
    /// `lens probe --unsampled`: no hop should record a span of it.
    pub fn unsampled(mut self) -> Self {
        self.flags = 0x02;
        self
    }

    /// Whether the probe asked for its request to be sampled.
    pub fn sampled(&self) -> bool {
        self.flags & 0x01 != 0
    }

    /// The `traceparent` header value.
    pub fn traceparent(&self) -> String {
        format!("00-{}-{}-{:02x}", self.trace_id, self.span_id, self.flags)
    }

    /// The probe's own CLIENT span for a request to `url` with `method`, from `start` to `end`
    /// (nanoseconds since the Unix epoch): service [`PROBE_SERVICE`], the HTTP client
    /// conventions (`http.request.method`, `url.full`, `server.address`, `server.port`).
    pub fn client_span(&self, url: &str, method: &str, start: u64, end: u64) -> Span {
        self.span(
            SpanKind::Client,
            Sent::http_client_attributes(url, method),
            start,
            end,
        )
    }

    /// The HTTP client conventions' attributes of a request to `url` with `method`:
    /// `http.request.method`, `url.full`, `server.address`, `server.port`.
    pub fn http_client_attributes(url: &str, method: &str) -> Vec<KeyValue> {
        let mut attributes = vec![
            KeyValue::new("http.request.method", Value::String(method.to_owned())),
            KeyValue::new("url.full", Value::String(url.to_owned())),
        ];
        if let Some((host, port, _)) = split_url(url).filter(|(host, ..)| !host.is_empty()) {
            attributes.push(KeyValue::new("server.address", Value::String(host)));
            if let Some(port) = port {
                attributes.push(KeyValue::new("server.port", Value::Int(i64::from(port))));
            }
        }
        attributes
    }

    /// `lens.baggage.keys` of what the probe sent, as a lens client records it.
    fn baggage_keys_attribute(&self) -> KeyValue {
        KeyValue::new(
            BAGGAGE_KEYS,
            Value::Array(
                self.baggage_keys
                    .iter()
                    .map(|k| Value::String(k.clone()))
                    .collect(),
            ),
        )
    }

    /// The probe's own span of `kind` with `attributes` (a gRPC call, a published message).
    pub fn span(
        &self,
        kind: SpanKind,
        mut attributes: Vec<KeyValue>,
        start: u64,
        end: u64,
    ) -> Span {
        attributes.push(self.baggage_keys_attribute());
        Span {
            trace_id: self.trace_id,
            span_id: self.span_id,
            parent_span_id: None,
            trace_state: self.trace_state.clone(),
            flags: u32::from(self.flags) | FLAG_HAS_IS_REMOTE,
            name: "lens probe".to_owned(),
            kind,
            resource: Arc::new(Resource::for_service(PROBE_SERVICE)),
            scope: Arc::new(Scope {
                name: "lens-probe".into(),
                version: String::new(),
            }),
            start_unix_nano: start,
            end_unix_nano: end.max(start),
            attributes,
            events: Vec::new(),
            links: Vec::new(),
            status: Status::Unset,
        }
    }
}
