//! Request metrics, as the semantic conventions 1.42 define them, recorded by the span
//! lifecycle: a call's duration is recorded when its span ends (end of the response body, an
//! error, a panic, or the call dropped), with the bounded subset of the span's attributes that
//! the conventions name for the instrument. Off by default: without a meter
//! ([`SpanOptions::set_meter`](crate::SpanOptions::set_meter)) nothing is built per request.
//!
//! | [`Instruments`] | instrument | attributes |
//! | --- | --- | --- |
//! | `HttpServer` | `http.server.request.duration` (s); opt-in `http.server.active_requests` | `http.request.method` (`_OTHER` outside the known set), `url.scheme`, `http.route` (the matched route only), `network.protocol.version`, `http.response.status_code`, `error.type` |
//! | `HttpClient` | `http.client.request.duration` (s), per attempt | `http.request.method`, `server.address`, `server.port`, `network.protocol.version`, `http.response.status_code`, `error.type` |
//! | `RpcServer` / `RpcClient` | `rpc.{server,client}.call.duration` (s) under `rpc` / `rpc/dup`, `rpc.{server,client}.duration` (ms) without the opt-in or under `rpc/dup` | the RPC attributes of the chosen conventions, `error.type`; clients `server.address`, `server.port`; on a server an `UNIMPLEMENTED` call's method is `_OTHER` |
//!
//! The attributes are taken from the adapter's own span attributes, never from the
//! request-attribute hook's, so a user's hook cannot grow the number of series.

use std::sync::Arc;
use std::time::Instant;

use opentelemetry::metrics::{Histogram, Meter, UpDownCounter};
use opentelemetry::{Key, KeyValue, Value};
use opentelemetry_semantic_conventions::attribute as attr;
use opentelemetry_semantic_conventions::metric as names;

use crate::rpc::RpcConventions;

/// The `ExplicitBucketBoundaries` advice of the semantic conventions for durations in seconds.
pub const DURATION_BUCKETS_S: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];

/// The same boundaries in milliseconds, for the RPC durations before the `rpc` opt-in.
const DURATION_BUCKETS_MS: [f64; 14] = [
    5.0, 10.0, 25.0, 50.0, 75.0, 100.0, 250.0, 500.0, 750.0, 1000.0, 2500.0, 5000.0, 7500.0,
    10000.0,
];

/// Which instruments an adapter records: its kind of call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Instruments {
    /// `http.server.*` (lens-axum).
    HttpServer,
    /// `http.client.*` (lens-reqwest).
    HttpClient,
    /// `rpc.server.*` under these conventions (lens-tonic's server layer).
    RpcServer(RpcConventions),
    /// `rpc.client.*` under these conventions (lens-tonic's client side).
    RpcClient(RpcConventions),
}

/// At most this many attributes per data point: the largest set (`rpc/dup` on a client) is 9.
const MAX_ATTRIBUTES: usize = 9;

#[allow(deprecated)] // the legacy RPC keys
impl Instruments {
    /// Whether the span attribute `key` is a metric attribute of this kind of call.
    fn keeps(self, key: &Key) -> bool {
        let key = key.as_str();
        match self {
            Instruments::HttpServer => matches!(
                key,
                attr::HTTP_REQUEST_METHOD
                    | attr::URL_SCHEME
                    | attr::HTTP_ROUTE
                    | attr::NETWORK_PROTOCOL_VERSION
                    | attr::HTTP_RESPONSE_STATUS_CODE
                    | attr::ERROR_TYPE
            ),
            Instruments::HttpClient => matches!(
                key,
                attr::HTTP_REQUEST_METHOD
                    | attr::SERVER_ADDRESS
                    | attr::SERVER_PORT
                    | attr::NETWORK_PROTOCOL_VERSION
                    | attr::HTTP_RESPONSE_STATUS_CODE
                    | attr::ERROR_TYPE
            ),
            Instruments::RpcServer(_) | Instruments::RpcClient(_) => {
                let client = matches!(self, Instruments::RpcClient(_));
                matches!(
                    key,
                    attr::RPC_SYSTEM
                        | attr::RPC_SERVICE
                        | attr::RPC_SYSTEM_NAME
                        | attr::RPC_METHOD
                        | attr::RPC_GRPC_STATUS_CODE
                        | attr::RPC_RESPONSE_STATUS_CODE
                        | attr::ERROR_TYPE
                ) || (client && matches!(key, attr::SERVER_ADDRESS | attr::SERVER_PORT))
            }
        }
    }

    /// Whether `key` is an attribute of `http.server.active_requests`.
    fn keeps_active(key: &Key) -> bool {
        matches!(key.as_str(), attr::HTTP_REQUEST_METHOD | attr::URL_SCHEME)
    }
}

/// The instruments of one adapter, built once from a meter.
pub(crate) struct Recorder {
    kind: Instruments,
    /// Seconds.
    duration: Option<Histogram<f64>>,
    /// Milliseconds (RPC before the opt-in).
    duration_ms: Option<Histogram<f64>>,
    active: Option<UpDownCounter<i64>>,
    /// Bytes of response bodies (servers, opt-in).
    response_size: Option<Histogram<u64>>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("kind", &self.kind)
            .field("active_requests", &self.active.is_some())
            .field("body_sizes", &self.response_size.is_some())
            .finish_non_exhaustive()
    }
}

fn seconds(meter: &Meter, name: &'static str, description: &'static str) -> Histogram<f64> {
    meter
        .f64_histogram(name)
        .with_unit("s")
        .with_description(description)
        .with_boundaries(DURATION_BUCKETS_S.to_vec())
        .build()
}

fn milliseconds(meter: &Meter, name: &'static str, description: &'static str) -> Histogram<f64> {
    meter
        .f64_histogram(name)
        .with_unit("ms")
        .with_description(description)
        .with_boundaries(DURATION_BUCKETS_MS.to_vec())
        .build()
}

#[allow(deprecated)] // the legacy RPC instruments
impl Recorder {
    pub(crate) fn new(kind: Instruments, meter: &Meter, opt_in: OptIn) -> Self {
        let (duration, duration_ms) = match kind {
            Instruments::HttpServer => (
                Some(seconds(
                    meter,
                    names::HTTP_SERVER_REQUEST_DURATION,
                    "Duration of HTTP server requests.",
                )),
                None,
            ),
            Instruments::HttpClient => (
                Some(seconds(
                    meter,
                    names::HTTP_CLIENT_REQUEST_DURATION,
                    "Duration of HTTP client requests.",
                )),
                None,
            ),
            Instruments::RpcServer(conv) => (
                conv.stable().then(|| {
                    seconds(
                        meter,
                        names::RPC_SERVER_CALL_DURATION,
                        "Measures the duration of inbound remote procedure calls (RPC).",
                    )
                }),
                conv.legacy().then(|| {
                    milliseconds(
                        meter,
                        names::RPC_SERVER_DURATION,
                        "Measures the duration of inbound RPC.",
                    )
                }),
            ),
            Instruments::RpcClient(conv) => (
                conv.stable().then(|| {
                    seconds(
                        meter,
                        names::RPC_CLIENT_CALL_DURATION,
                        "Measures the duration of outbound remote procedure calls (RPC).",
                    )
                }),
                conv.legacy().then(|| {
                    milliseconds(
                        meter,
                        names::RPC_CLIENT_DURATION,
                        "Measures the duration of outbound RPC.",
                    )
                }),
            ),
        };
        let server = kind == Instruments::HttpServer;
        let response_size = (opt_in.body_sizes && server).then(|| {
            meter
                .u64_histogram(names::HTTP_SERVER_RESPONSE_BODY_SIZE)
                .with_unit("By")
                .with_description("Size of HTTP server response bodies.")
                .build()
        });
        let active = (opt_in.active_requests && server).then(|| {
            meter
                .i64_up_down_counter(names::HTTP_SERVER_ACTIVE_REQUESTS)
                .with_unit("{request}")
                .with_description("Number of active HTTP server requests.")
                .build()
        });
        Recorder {
            kind,
            duration,
            duration_ms,
            active,
            response_size,
        }
    }
}

/// The instruments the conventions make opt-in.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct OptIn {
    pub(crate) active_requests: bool,
    pub(crate) body_sizes: bool,
}

/// The metric attributes of one call, kept inline (no allocation per call beyond the box that
/// holds the call's metrics).
struct Attributes {
    kvs: [KeyValue; MAX_ATTRIBUTES],
    len: usize,
}

impl Attributes {
    fn new() -> Self {
        Attributes {
            kvs: std::array::from_fn(|_| KeyValue::new("", false)),
            len: 0,
        }
    }

    fn as_slice(&self) -> &[KeyValue] {
        &self.kvs[..self.len]
    }

    /// Sets `key` to `value`: replaces it when present, else appends it (dropped when full).
    fn set(&mut self, key: &Key, value: &Value) {
        if let Some(kv) = self.kvs[..self.len].iter_mut().find(|kv| kv.key == *key) {
            kv.value = value.clone();
        } else if self.len < MAX_ATTRIBUTES {
            self.kvs[self.len] = KeyValue::new(key.clone(), value.clone());
            self.len += 1;
        }
    }

    fn get(&self, key: &str) -> Option<&Value> {
        self.as_slice()
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| &kv.value)
    }
}

/// The attributes of `http.server.active_requests` among `attributes` (no allocation: their
/// values are static text).
fn active_attributes(attributes: &Attributes) -> ([KeyValue; 2], usize) {
    let mut pair = [KeyValue::new("", false), KeyValue::new("", false)];
    let mut n = 0;
    for kv in attributes.as_slice() {
        if Instruments::keeps_active(&kv.key) && n < pair.len() {
            pair[n] = kv.clone();
            n += 1;
        }
    }
    (pair, n)
}

/// What one call records when its span ends.
pub(crate) struct CallMetrics {
    recorder: Arc<Recorder>,
    start: Instant,
    attributes: Attributes,
    /// Response body bytes sent so far.
    body_bytes: u64,
}

impl CallMetrics {
    /// A call starting now with the adapter's span `attributes` (before the user's hook).
    pub(crate) fn start(recorder: &Arc<Recorder>, attributes: &[KeyValue]) -> Box<Self> {
        let mut kept = Attributes::new();
        for kv in attributes {
            if recorder.kind.keeps(&kv.key) {
                kept.set(&kv.key, &kv.value);
            }
        }
        if let Some(counter) = &recorder.active {
            let (pair, n) = active_attributes(&kept);
            counter.add(1, &pair[..n]);
        }
        Box::new(CallMetrics {
            recorder: Arc::clone(recorder),
            start: Instant::now(),
            attributes: kept,
            body_bytes: 0,
        })
    }

    /// An attribute set on the span after it started (a status code, `error.type`).
    pub(crate) fn set(&mut self, kv: &KeyValue) {
        if self.recorder.kind.keeps(&kv.key) {
            self.attributes.set(&kv.key, &kv.value);
        }
    }

    /// `n` more bytes of the response body went out.
    pub(crate) fn add_body_bytes(&mut self, n: usize) {
        if self.recorder.response_size.is_some() {
            self.body_bytes = self.body_bytes.saturating_add(n as u64);
        }
    }

    /// The call ended: record its duration (and one request fewer active).
    pub(crate) fn end(mut self: Box<Self>) {
        let elapsed = self.start.elapsed().as_secs_f64();
        if let Instruments::RpcServer(_) = self.recorder.kind {
            self.bound_rpc_method();
        }
        let attributes = self.attributes.as_slice();
        if let Some(histogram) = &self.recorder.duration {
            histogram.record(elapsed, attributes);
        }
        if let Some(histogram) = &self.recorder.duration_ms {
            histogram.record(elapsed * 1000.0, attributes);
        }
        if let Some(histogram) = &self.recorder.response_size {
            histogram.record(self.body_bytes, attributes);
        }
        if let Some(counter) = &self.recorder.active {
            // The method and the scheme are set when the call starts and never change: the
            // same series as the increment.
            let (pair, n) = active_attributes(&self.attributes);
            counter.add(-1, &pair[..n]);
        }
    }

    /// A server answers a method it does not serve with `UNIMPLEMENTED`: its name is the
    /// caller's text, recorded as `_OTHER` (and without `rpc.service`) so that callers cannot
    /// grow the number of series.
    #[allow(deprecated)]
    fn bound_rpc_method(&mut self) {
        let unimplemented = self
            .attributes
            .get(attr::RPC_GRPC_STATUS_CODE)
            .is_some_and(|v| *v == Value::I64(12))
            || self
                .attributes
                .get(attr::RPC_RESPONSE_STATUS_CODE)
                .is_some_and(|v| v.as_str() == "UNIMPLEMENTED");
        if !unimplemented {
            return;
        }
        let other = Value::from("_OTHER");
        if self.attributes.get(attr::RPC_METHOD).is_some() {
            self.attributes
                .set(&Key::from_static_str(attr::RPC_METHOD), &other);
        }
        let len = self.attributes.len;
        let kvs = &mut self.attributes.kvs[..len];
        if let Some(i) = kvs
            .iter()
            .position(|kv| kv.key.as_str() == attr::RPC_SERVICE)
        {
            kvs[i..].rotate_left(1);
            self.attributes.len -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_set_again_is_replaced_and_the_set_stays_bounded() {
        let mut attributes = Attributes::new();
        let key = Key::from_static_str(attr::HTTP_RESPONSE_STATUS_CODE);
        attributes.set(&key, &Value::I64(200));
        attributes.set(&key, &Value::I64(503));
        assert_eq!(attributes.as_slice().len(), 1);
        assert_eq!(
            attributes.get(attr::HTTP_RESPONSE_STATUS_CODE),
            Some(&Value::I64(503))
        );
        for i in 0..2 * MAX_ATTRIBUTES {
            attributes.set(&Key::new(format!("k{i}")), &Value::I64(0));
        }
        assert_eq!(attributes.as_slice().len(), MAX_ATTRIBUTES);
    }

    #[test]
    fn each_kind_keeps_its_conventions_keys_only() {
        let keeps = |kind: Instruments, key: &'static str| kind.keeps(&Key::from_static_str(key));
        let rpc = RpcConventions::DUPLICATE;
        for key in [
            attr::URL_PATH,
            attr::URL_FULL,
            attr::URL_QUERY,
            attr::CLIENT_ADDRESS,
            attr::USER_AGENT_ORIGINAL,
            attr::HTTP_REQUEST_METHOD_ORIGINAL,
        ] {
            for kind in [
                Instruments::HttpServer,
                Instruments::HttpClient,
                Instruments::RpcServer(rpc),
                Instruments::RpcClient(rpc),
            ] {
                assert!(!keeps(kind, key), "{kind:?} {key}");
            }
        }
        assert!(keeps(Instruments::HttpServer, attr::HTTP_ROUTE));
        assert!(!keeps(Instruments::HttpServer, attr::SERVER_ADDRESS));
        assert!(keeps(Instruments::HttpClient, attr::SERVER_ADDRESS));
        assert!(!keeps(Instruments::RpcServer(rpc), attr::SERVER_PORT));
        assert!(keeps(Instruments::RpcClient(rpc), attr::SERVER_PORT));
        assert!(keeps(Instruments::RpcServer(rpc), attr::ERROR_TYPE));
    }
}
