//! Request metrics, as the semantic conventions 1.42 define them, recorded by the span
//! lifecycle: a call's duration is recorded when its span ends (end of the response body, an
//! error, a panic, or the call dropped), with the bounded subset of the span's attributes that
//! the conventions name for the instrument. Off by default: without a meter
//! ([`SpanOptions::set_meter`](crate::SpanOptions::set_meter)) nothing is built per request.
//!
//! | [`Instruments`] | instrument | attributes |
//! | --- | --- | --- |
//! | `HttpServer` | `http.server.request.duration` (s); opt-in `http.server.active_requests`, `http.server.{request,response}.body.size` (By) | `http.request.method` (`_OTHER` outside the known set), `url.scheme`, `http.route` (the matched route only), `network.protocol.version`, `http.response.status_code`, `error.type` |
//! | `HttpClient` | `http.client.request.duration` (s), per attempt; opt-in `http.client.{request,response}.body.size` (By) | `http.request.method`, `server.address`, `server.port`, `network.protocol.version`, `http.response.status_code`, `error.type` |
//! | `Messaging` | `messaging.client.operation.duration` (s) for send, receive and settle, `messaging.process.duration` (s) for process; counters `messaging.client.sent.messages` (send) and `messaging.client.consumed.messages` (receive, and process unless a receive counted its message) | `messaging.system`, `messaging.operation.name`, `messaging.operation.type`, `messaging.destination.name` (only where the adapter says destinations are low-cardinality, never a temporary one), `messaging.destination.template`, `messaging.consumer.group.name`, `messaging.destination.subscription.name`, `error.type`, `server.address`, `server.port` |
//! | `RpcServer` / `RpcClient` | `rpc.{server,client}.call.duration` (s) under `rpc` / `rpc/dup`, `rpc.{server,client}.duration` (ms) without the opt-in or under `rpc/dup` | the RPC attributes of the chosen conventions, `error.type`; clients `server.address`, `server.port`; on a server an `UNIMPLEMENTED` call's method is `_OTHER` |
//!
//! The attributes are taken from the adapter's own span attributes, never from the
//! request-attribute hook's, so a user's hook cannot grow the number of series. A call's metric
//! state lives inline in its span ([`crate::LiveSpan`]): recording allocates nothing per call.
//!
//! Body sizes count the bytes of the body's data frames as they go through, not
//! `Content-Length`: a server's response body through [`crate::TracedBody`], any other body
//! through [`crate::CountedBody`] with a [`BodyBytes`] from the span.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use opentelemetry::metrics::{Counter, Histogram, Meter, UpDownCounter};
use opentelemetry::{Key, KeyValue, StringValue, Value};
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
    /// `messaging.*` (the messaging lifecycle, [`crate::messaging`]; lens-nats).
    Messaging,
}

/// At most this many attributes per data point: the largest set (messaging) is 10.
const MAX_ATTRIBUTES: usize = 10;

/// The metric attributes of each kind of call, in the order every data point has them (the SDK
/// finds an existing series without allocating when the order is the same each time).
#[allow(deprecated)] // the legacy RPC keys
const HTTP_SERVER_KEYS: [&str; 6] = [
    attr::HTTP_REQUEST_METHOD,
    attr::URL_SCHEME,
    attr::HTTP_ROUTE,
    attr::NETWORK_PROTOCOL_VERSION,
    attr::HTTP_RESPONSE_STATUS_CODE,
    attr::ERROR_TYPE,
];
const HTTP_CLIENT_KEYS: [&str; 6] = [
    attr::HTTP_REQUEST_METHOD,
    attr::SERVER_ADDRESS,
    attr::SERVER_PORT,
    attr::NETWORK_PROTOCOL_VERSION,
    attr::HTTP_RESPONSE_STATUS_CODE,
    attr::ERROR_TYPE,
];
#[allow(deprecated)] // the legacy RPC keys
const RPC_KEYS: [&str; 9] = [
    attr::RPC_SYSTEM,
    attr::RPC_SERVICE,
    attr::RPC_SYSTEM_NAME,
    attr::RPC_METHOD,
    attr::RPC_GRPC_STATUS_CODE,
    attr::RPC_RESPONSE_STATUS_CODE,
    attr::ERROR_TYPE,
    // Clients only.
    attr::SERVER_ADDRESS,
    attr::SERVER_PORT,
];
const MESSAGING_KEYS: [&str; MAX_ATTRIBUTES] = [
    attr::MESSAGING_SYSTEM,
    attr::MESSAGING_OPERATION_NAME,
    attr::MESSAGING_OPERATION_TYPE,
    attr::MESSAGING_DESTINATION_NAME,
    attr::MESSAGING_DESTINATION_TEMPLATE,
    attr::MESSAGING_CONSUMER_GROUP_NAME,
    attr::MESSAGING_DESTINATION_SUBSCRIPTION_NAME,
    attr::ERROR_TYPE,
    attr::SERVER_ADDRESS,
    attr::SERVER_PORT,
];
/// The RPC keys of a server: all but `server.address` and `server.port`.
const RPC_SERVER_KEYS: usize = 7;

impl Instruments {
    /// The metric attributes of this kind of call, in order.
    fn keys(self) -> &'static [&'static str] {
        match self {
            Instruments::HttpServer => &HTTP_SERVER_KEYS,
            Instruments::HttpClient => &HTTP_CLIENT_KEYS,
            Instruments::RpcServer(_) => &RPC_KEYS[..RPC_SERVER_KEYS],
            Instruments::RpcClient(_) => &RPC_KEYS,
            Instruments::Messaging => &MESSAGING_KEYS,
        }
    }

    /// Where the span attribute `key` goes among this kind's metric attributes, if it is one.
    fn slot(self, key: &str) -> Option<usize> {
        self.keys().iter().position(|k| *k == key)
    }

    /// Whether the span attribute `key` is a metric attribute of this kind of call.
    #[cfg(test)]
    fn keeps(self, key: &Key) -> bool {
        self.slot(key.as_str()).is_some()
    }

    /// Whether `key` is an attribute of `http.server.active_requests`.
    fn keeps_active(key: &str) -> bool {
        matches!(key, attr::HTTP_REQUEST_METHOD | attr::URL_SCHEME)
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
    /// Bytes of request bodies (HTTP, opt-in).
    request_size: Option<Histogram<u64>>,
    /// Bytes of response bodies (HTTP, opt-in).
    response_size: Option<Histogram<u64>>,
    /// Messaging: `messaging.process.duration` (s).
    process_duration: Option<Histogram<f64>>,
    /// Messaging: `messaging.client.sent.messages`.
    sent: Option<Counter<u64>>,
    /// Messaging: `messaging.client.consumed.messages`.
    consumed: Option<Counter<u64>>,
    /// HTTP and RPC: the GenAI time to the first chunk and per chunk (s), for the calls the
    /// user says are GenAI operations ([`crate::genai`]).
    gen_ai: Option<(Histogram<f64>, Histogram<f64>)>,
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

fn bytes(meter: &Meter, name: &'static str, description: &'static str) -> Histogram<u64> {
    meter
        .u64_histogram(name)
        .with_unit("By")
        .with_description(description)
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
            Instruments::Messaging => (
                Some(seconds(
                    meter,
                    names::MESSAGING_CLIENT_OPERATION_DURATION,
                    "Duration of messaging operation initiated by a producer or consumer client.",
                )),
                None,
            ),
        };
        let messaging = kind == Instruments::Messaging;
        let process_duration = messaging.then(|| {
            seconds(
                meter,
                names::MESSAGING_PROCESS_DURATION,
                "Duration of processing operation.",
            )
        });
        let counter = |name: &'static str, description: &'static str| {
            messaging.then(|| {
                meter
                    .u64_counter(name)
                    .with_unit("{message}")
                    .with_description(description)
                    .build()
            })
        };
        let sent = counter(
            names::MESSAGING_CLIENT_SENT_MESSAGES,
            "Number of messages producer attempted to send to the broker.",
        );
        let consumed = counter(
            names::MESSAGING_CLIENT_CONSUMED_MESSAGES,
            "Number of messages that were delivered to the application.",
        );
        let (request_size, response_size) = match kind {
            Instruments::HttpServer if opt_in.body_sizes => (
                Some(bytes(
                    meter,
                    names::HTTP_SERVER_REQUEST_BODY_SIZE,
                    "Size of HTTP server request bodies.",
                )),
                Some(bytes(
                    meter,
                    names::HTTP_SERVER_RESPONSE_BODY_SIZE,
                    "Size of HTTP server response bodies.",
                )),
            ),
            Instruments::HttpClient if opt_in.body_sizes => (
                Some(bytes(
                    meter,
                    names::HTTP_CLIENT_REQUEST_BODY_SIZE,
                    "Size of HTTP client request bodies.",
                )),
                Some(bytes(
                    meter,
                    names::HTTP_CLIENT_RESPONSE_BODY_SIZE,
                    "Size of HTTP client response bodies.",
                )),
            ),
            _ => (None, None),
        };
        let active = (opt_in.active_requests && kind == Instruments::HttpServer).then(|| {
            meter
                .i64_up_down_counter(names::HTTP_SERVER_ACTIVE_REQUESTS)
                .with_unit("{request}")
                .with_description("Number of active HTTP server requests.")
                .build()
        });
        let gen_ai = gen_ai_instruments(kind, meter);
        Recorder {
            kind,
            duration,
            duration_ms,
            active,
            request_size,
            response_size,
            process_duration,
            sent,
            consumed,
            gen_ai,
        }
    }
}

/// The GenAI histograms of a kind of call: (time to the first chunk, time per chunk); built with
/// the meter, recorded only for calls the user says are GenAI operations.
fn gen_ai_instruments(
    kind: Instruments,
    meter: &Meter,
) -> Option<(Histogram<f64>, Histogram<f64>)> {
    use crate::genai as g;
    let (first, per, first_description, per_description) = match kind {
        Instruments::HttpClient | Instruments::RpcClient(_) => (
            g::CLIENT_TIME_TO_FIRST_CHUNK,
            g::CLIENT_TIME_PER_OUTPUT_CHUNK,
            "Time to receive the first chunk of a streamed GenAI response.",
            "Time per output chunk after the first chunk of a streamed GenAI response.",
        ),
        Instruments::HttpServer | Instruments::RpcServer(_) => (
            g::SERVER_TIME_TO_FIRST_TOKEN,
            g::SERVER_TIME_PER_OUTPUT_TOKEN,
            "Time to generate first token for successful responses.",
            "Time per output token generated after the first token for successful responses.",
        ),
        Instruments::Messaging => return None,
    };
    let histogram = |name: &'static str, description: &'static str, buckets: &[f64]| {
        meter
            .f64_histogram(name)
            .with_unit("s")
            .with_description(description)
            .with_boundaries(buckets.to_vec())
            .build()
    };
    Some((
        histogram(first, first_description, &g::TIME_TO_FIRST_BUCKETS_S),
        histogram(per, per_description, &g::TIME_PER_OUTPUT_BUCKETS_S),
    ))
}

/// The instruments the conventions make opt-in.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct OptIn {
    pub(crate) active_requests: bool,
    pub(crate) body_sizes: bool,
}

/// The value of one metric attribute, in 24 bytes (a `Value` takes 32, for arrays no metric
/// attribute has): text or an integer, the only kinds the conventions give these keys.
#[derive(Clone, Debug, PartialEq)]
enum Slot {
    Text(StringValue),
    Int(i64),
}

impl Slot {
    fn of(value: &Value) -> Slot {
        match value {
            Value::String(text) => Slot::Text(text.clone()),
            Value::I64(n) => Slot::Int(*n),
            Value::Bool(b) => Slot::Text(StringValue::from(if *b { "true" } else { "false" })),
            // No metric attribute is one: kept as text rather than lost.
            other => Slot::Text(StringValue::from(other.to_string())),
        }
    }

    fn into_value(self) -> Value {
        match self {
            Slot::Text(text) => Value::String(text),
            Slot::Int(n) => Value::I64(n),
        }
    }
}

/// The metric attributes of one call, inline: the value of each of its kind's keys
/// ([`Instruments::keys`]) that is set. Recorded in the keys' order, the same for every call.
struct Attributes {
    kind: Instruments,
    values: [Option<Slot>; MAX_ATTRIBUTES],
}

impl Attributes {
    fn new(kind: Instruments) -> Self {
        Attributes {
            kind,
            values: [const { None }; MAX_ATTRIBUTES],
        }
    }

    /// Sets `key` to `value` when it is one of the kind's metric attributes (replaced when set
    /// again).
    fn set(&mut self, key: &str, value: &Value) {
        if let Some(i) = self.kind.slot(key) {
            self.values[i] = Some(Slot::of(value));
        }
    }

    fn remove(&mut self, key: &str) {
        if let Some(i) = self.kind.slot(key) {
            self.values[i] = None;
        }
    }

    fn get(&self, key: &str) -> Option<&Slot> {
        self.values[self.kind.slot(key)?].as_ref()
    }

    /// The set attributes as key-values, in the keys' order, cloned (a clone of a value of a
    /// span attribute shares its text: lens's values are static or reference-counted), with
    /// `keep` choosing among the keys.
    fn key_values(&self, keep: impl Fn(&str) -> bool) -> ([KeyValue; MAX_ATTRIBUTES], usize) {
        let mut kvs: [KeyValue; MAX_ATTRIBUTES] = std::array::from_fn(|_| placeholder());
        let mut n = 0;
        for (key, slot) in self.kind.keys().iter().zip(&self.values) {
            if let Some(slot) = slot
                && keep(key)
            {
                kvs[n] = KeyValue::new(Key::from_static_str(key), slot.clone().into_value());
                n += 1;
            }
        }
        (kvs, n)
    }

    /// The set attributes as key-values, in the keys' order, moved out (nothing cloned).
    fn take_key_values(&mut self) -> ([KeyValue; MAX_ATTRIBUTES], usize) {
        let mut kvs: [KeyValue; MAX_ATTRIBUTES] = std::array::from_fn(|_| placeholder());
        let mut n = 0;
        for (key, slot) in self.kind.keys().iter().zip(&mut self.values) {
            if let Some(slot) = slot.take() {
                kvs[n] = KeyValue::new(Key::from_static_str(key), slot.into_value());
                n += 1;
            }
        }
        (kvs, n)
    }
}

/// What a messaging operation records besides its duration.
#[derive(Clone, Copy, PartialEq, Eq)]
enum MessagingOperation {
    Send,
    Receive,
    Process,
    Other,
}

/// A key-value that fills an unused place of an array (nothing allocated).
fn placeholder() -> KeyValue {
    KeyValue::new(Key::from_static_str(""), Value::Bool(false))
}

/// The attributes of `http.server.active_requests` among `kvs` (the method and the scheme are
/// static text: nothing allocated).
fn active_attributes(kvs: &[KeyValue]) -> ([KeyValue; 2], usize) {
    let mut pair = [placeholder(), placeholder()];
    let mut n = 0;
    for kv in kvs {
        if Instruments::keeps_active(kv.key.as_str()) && n < pair.len() {
            pair[n] = kv.clone();
            n += 1;
        }
    }
    (pair, n)
}

/// The request body's size, as far as it is known.
enum RequestBytes {
    /// Not known (a client's streaming body without a length): not recorded.
    Unknown,
    /// Known when the call starts (a client's buffered body).
    Known(u64),
    /// Counted as the body is read ([`BodyBytes`]), read when the call ends.
    Counted(Arc<AtomicU64>),
}

/// What one call records when its span ends. Kept inline in the span ([`crate::LiveSpan`]):
/// nothing is allocated per call to record its metrics.
pub(crate) struct CallMetrics {
    recorder: Arc<Recorder>,
    start: Instant,
    attributes: Attributes,
    /// Response body bytes sent so far (servers).
    response_bytes: u64,
    /// Whether the response body is counted by a [`BodyBytes`] of its own (clients).
    response_detached: bool,
    request_bytes: RequestBytes,
    /// Messaging: how many messages the operation sent or delivered (counted when it ends).
    messages: u64,
}

impl CallMetrics {
    /// A call starting now with the adapter's span `attributes` (before the user's hook).
    pub(crate) fn start(recorder: &Arc<Recorder>, attributes: &[KeyValue]) -> Self {
        let mut kept = Attributes::new(recorder.kind);
        for kv in attributes {
            kept.set(kv.key.as_str(), &kv.value);
        }
        if let Some(counter) = &recorder.active {
            let (kvs, n) = kept.key_values(Instruments::keeps_active);
            counter.add(1, &kvs[..n]);
        }
        CallMetrics {
            recorder: Arc::clone(recorder),
            start: Instant::now(),
            attributes: kept,
            response_bytes: 0,
            response_detached: false,
            request_bytes: RequestBytes::Unknown,
            messages: 1,
        }
    }

    /// Messaging: the operation sent or delivered `n` messages (1 unless set; 0 for a process
    /// span whose message a receive span counted).
    pub(crate) fn set_messages(&mut self, n: u64) {
        self.messages = n;
    }

    /// An attribute set on the span after it started (a status code, `error.type`).
    pub(crate) fn set(&mut self, kv: &KeyValue) {
        self.attributes.set(kv.key.as_str(), &kv.value);
    }

    /// `n` more bytes of the response body went out.
    pub(crate) fn add_body_bytes(&mut self, n: usize) {
        if self.recorder.response_size.is_some() {
            self.response_bytes = self.response_bytes.saturating_add(n as u64);
        }
    }

    /// The request body has `n` bytes (known before it is sent).
    pub(crate) fn set_request_body_size(&mut self, n: u64) {
        if self.recorder.request_size.is_some() {
            self.request_bytes = RequestBytes::Known(n);
        }
    }

    /// A counter of the request body's bytes as they are read, when its size is recorded.
    pub(crate) fn count_request_body(&mut self) -> Option<BodyBytes> {
        self.recorder.request_size.as_ref()?;
        let counter = Arc::new(AtomicU64::new(0));
        self.request_bytes = RequestBytes::Counted(Arc::clone(&counter));
        Some(BodyBytes(Sink::Shared(counter)))
    }

    /// The response body's size recorded by a counter of its own, when its body ends (a
    /// client's response outlives its span), with the call's attributes as they are now.
    pub(crate) fn count_response_body(&mut self) -> Option<BodyBytes> {
        let histogram = self.recorder.response_size.clone()?;
        self.response_detached = true;
        let (kvs, n) = self.attributes.key_values(|_| true);
        Some(BodyBytes(Sink::Record {
            histogram,
            attributes: kvs,
            len: n,
            bytes: 0,
            done: false,
        }))
    }

    /// The GenAI attributes of a data point: the operation's, then the call's `server.address`
    /// and `server.port` (clients).
    fn gen_ai_attributes(&self, gen_ai: &crate::genai::GenAi) -> Vec<KeyValue> {
        let mut attributes = Vec::with_capacity(5);
        gen_ai.push_attributes(&mut attributes);
        for key in [attr::SERVER_ADDRESS, attr::SERVER_PORT] {
            if let Some(slot) = self.attributes.get(key) {
                attributes.push(KeyValue::new(key, slot.clone().into_value()));
            }
        }
        attributes
    }

    /// A GenAI call's first chunk passed `seconds` after it started.
    pub(crate) fn record_time_to_first_chunk(&self, gen_ai: &crate::genai::GenAi, seconds: f64) {
        if let Some((first, _)) = &self.recorder.gen_ai {
            first.record(seconds, &self.gen_ai_attributes(gen_ai));
        }
    }

    /// A GenAI call's stream ended complete, `seconds` per chunk after the first.
    pub(crate) fn record_time_per_chunk(&self, gen_ai: &crate::genai::GenAi, seconds: f64) {
        if let Some((_, per)) = &self.recorder.gen_ai {
            per.record(seconds, &self.gen_ai_attributes(gen_ai));
        }
    }

    /// The call ended: record its duration (and one request fewer active).
    pub(crate) fn end(mut self) {
        let elapsed = self.start.elapsed().as_secs_f64();
        if let Instruments::RpcServer(_) = self.recorder.kind {
            self.bound_rpc_method();
        }
        let recorder = &*self.recorder;
        // Messaging: which instruments the operation's type selects (read before the values
        // are moved out).
        let operation = match self.attributes.get(attr::MESSAGING_OPERATION_TYPE) {
            Some(Slot::Text(t)) => match t.as_str() {
                "process" => MessagingOperation::Process,
                "send" | "create" => MessagingOperation::Send,
                "receive" => MessagingOperation::Receive,
                _ => MessagingOperation::Other,
            },
            _ => MessagingOperation::Other,
        };
        let (kvs, n) = self.attributes.take_key_values();
        let attributes = &kvs[..n];
        match (&recorder.process_duration, operation) {
            (Some(histogram), MessagingOperation::Process) => histogram.record(elapsed, attributes),
            _ => {
                if let Some(histogram) = &recorder.duration {
                    histogram.record(elapsed, attributes);
                }
            }
        }
        let counter = match operation {
            MessagingOperation::Send => recorder.sent.as_ref(),
            MessagingOperation::Receive | MessagingOperation::Process => recorder.consumed.as_ref(),
            MessagingOperation::Other => None,
        };
        if let Some(counter) = counter
            && self.messages > 0
        {
            counter.add(self.messages, attributes);
        }
        if let Some(histogram) = &recorder.duration_ms {
            histogram.record(elapsed * 1000.0, attributes);
        }
        if let Some(histogram) = &recorder.request_size {
            let size = match &self.request_bytes {
                RequestBytes::Unknown => None,
                RequestBytes::Known(n) => Some(*n),
                RequestBytes::Counted(counter) => Some(counter.load(Ordering::Relaxed)),
            };
            if let Some(size) = size {
                histogram.record(size, attributes);
            }
        }
        if let Some(histogram) = &recorder.response_size
            && !self.response_detached
            && matches!(
                recorder.kind,
                Instruments::HttpServer | Instruments::HttpClient
            )
        {
            histogram.record(self.response_bytes, attributes);
        }
        if let Some(counter) = &recorder.active {
            // The method and the scheme are set when the call starts and never change: the
            // same series as the increment.
            let (pair, n) = active_attributes(attributes);
            counter.add(-1, &pair[..n]);
        }
    }

    /// A server answers a method it does not serve with `UNIMPLEMENTED`: its name is the
    /// caller's text, recorded as `_OTHER` (and without `rpc.service`) so that callers cannot
    /// grow the number of series.
    #[allow(deprecated)]
    fn bound_rpc_method(&mut self) {
        let unimplemented = self.attributes.get(attr::RPC_GRPC_STATUS_CODE) == Some(&Slot::Int(12))
            || matches!(
                self.attributes.get(attr::RPC_RESPONSE_STATUS_CODE),
                Some(Slot::Text(code)) if code.as_str() == "UNIMPLEMENTED"
            );
        if !unimplemented {
            return;
        }
        if self.attributes.get(attr::RPC_METHOD).is_some() {
            self.attributes
                .set(attr::RPC_METHOD, &Value::from("_OTHER"));
        }
        self.attributes.remove(attr::RPC_SERVICE);
    }
}

/// Counts the bytes of a body for the body-size metrics ([`CountedBody`](crate::CountedBody)
/// calls [`BodyBytes::add`] for every data frame). Made by the span lifecycle when body sizes
/// are on: [`LiveSpan::count_request_body`](crate::LiveSpan::count_request_body) (read when
/// the span ends), [`LiveSpan::count_response_body`](crate::LiveSpan::count_response_body)
/// (recorded when the body ends or is dropped).
pub struct BodyBytes(Sink);

/// Inline, both: a `BodyBytes` lives in the box a framework makes for the body it counts
/// (axum's `Body::new`, reqwest's `Body::wrap`), so the record's attributes cost no allocation
/// of their own; a request body's box is the larger for it.
#[allow(clippy::large_enum_variant)]
enum Sink {
    /// A request body: its span reads the count when it ends.
    Shared(Arc<AtomicU64>),
    /// A response body that outlives its span: recorded once, at its end or drop.
    Record {
        histogram: Histogram<u64>,
        attributes: [KeyValue; MAX_ATTRIBUTES],
        len: usize,
        bytes: u64,
        done: bool,
    },
}

impl std::fmt::Debug for BodyBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let bytes = match &self.0 {
            Sink::Shared(counter) => counter.load(Ordering::Relaxed),
            Sink::Record { bytes, .. } => *bytes,
        };
        f.debug_struct("BodyBytes").field("bytes", &bytes).finish()
    }
}

impl BodyBytes {
    /// `n` more bytes of the body were read.
    #[inline]
    pub fn add(&mut self, n: usize) {
        let n = n as u64;
        match &mut self.0 {
            // One writer (the body) and one reader (its span, when it ends): relaxed is enough.
            Sink::Shared(counter) => {
                counter.fetch_add(n, Ordering::Relaxed);
            }
            Sink::Record { bytes, .. } => *bytes = bytes.saturating_add(n),
        }
    }

    /// The body ended (its last frame, an error): a response body's size is recorded now,
    /// once. Dropping the body does the same.
    pub fn finish(&mut self) {
        if let Sink::Record {
            histogram,
            attributes,
            len,
            bytes,
            done,
        } = &mut self.0
            && !*done
        {
            *done = true;
            histogram.record(*bytes, &attributes[..*len]);
        }
    }
}

impl Drop for BodyBytes {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_set_again_is_replaced_and_others_are_not_kept() {
        let mut attributes = Attributes::new(Instruments::HttpServer);
        attributes.set(attr::HTTP_RESPONSE_STATUS_CODE, &Value::I64(200));
        attributes.set(attr::HTTP_RESPONSE_STATUS_CODE, &Value::I64(503));
        attributes.set(attr::URL_PATH, &Value::from("/users/1"));
        attributes.set(attr::HTTP_REQUEST_METHOD, &Value::from("GET"));
        assert_eq!(
            attributes.get(attr::HTTP_RESPONSE_STATUS_CODE),
            Some(&Slot::Int(503))
        );
        // In the keys' order, whatever the order they were set in.
        let (kvs, n) = attributes.take_key_values();
        let keys: Vec<&str> = kvs[..n].iter().map(|kv| kv.key.as_str()).collect();
        assert_eq!(
            keys,
            [attr::HTTP_REQUEST_METHOD, attr::HTTP_RESPONSE_STATUS_CODE]
        );
        assert_eq!(attributes.get(attr::HTTP_REQUEST_METHOD), None);
    }

    #[test]
    fn every_kind_fits_the_inline_attributes() {
        let rpc = RpcConventions::DUPLICATE;
        for kind in [
            Instruments::HttpServer,
            Instruments::HttpClient,
            Instruments::RpcServer(rpc),
            Instruments::RpcClient(rpc),
            Instruments::Messaging,
        ] {
            assert!(kind.keys().len() <= MAX_ATTRIBUTES, "{kind:?}");
        }
        assert_eq!(Instruments::Messaging.keys().len(), MAX_ATTRIBUTES);
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
