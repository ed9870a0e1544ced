//! The instruments of one adapter, built once from a meter ([`Recorder`]), and the opt-ins.

use opentelemetry::metrics::{Counter, Histogram, Meter, UpDownCounter};
use opentelemetry_semantic_conventions::metric as names;

use super::kinds::{DURATION_BUCKETS_MS, DURATION_BUCKETS_S, Instruments};

/// The instruments of one adapter, built once from a meter.
pub(crate) struct Recorder {
    pub(super) kind: Instruments,
    /// Seconds.
    pub(super) duration: Option<Histogram<f64>>,
    /// Milliseconds (RPC before the opt-in).
    pub(super) duration_ms: Option<Histogram<f64>>,
    pub(super) active: Option<UpDownCounter<i64>>,
    /// Bytes of request bodies (HTTP, opt-in).
    pub(super) request_size: Option<Histogram<u64>>,
    /// Bytes of response bodies (HTTP, opt-in).
    pub(super) response_size: Option<Histogram<u64>>,
    /// Messaging: `messaging.process.duration` (s).
    pub(super) process_duration: Option<Histogram<f64>>,
    /// Messaging: `messaging.client.sent.messages`.
    pub(super) sent: Option<Counter<u64>>,
    /// Messaging: `messaging.client.consumed.messages`.
    pub(super) consumed: Option<Counter<u64>>,
    /// HTTP and RPC: the GenAI time to the first chunk and per chunk (s), for the calls the
    /// user says are GenAI operations ([`crate::genai`]).
    pub(super) gen_ai: Option<(Histogram<f64>, Histogram<f64>)>,
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

pub(super) fn seconds(
    meter: &Meter,
    name: &'static str,
    description: &'static str,
) -> Histogram<f64> {
    histogram(meter, name, description, "s", &DURATION_BUCKETS_S)
}

pub(super) fn milliseconds(
    meter: &Meter,
    name: &'static str,
    description: &'static str,
) -> Histogram<f64> {
    histogram(meter, name, description, "ms", &DURATION_BUCKETS_MS)
}

/// A duration histogram in `unit` with `buckets` as its boundaries.
fn histogram(
    meter: &Meter,
    name: &'static str,
    description: &'static str,
    unit: &'static str,
    buckets: &[f64],
) -> Histogram<f64> {
    meter
        .f64_histogram(name)
        .with_unit(unit)
        .with_description(description)
        .with_boundaries(buckets.to_vec())
        .build()
}

pub(super) fn bytes(
    meter: &Meter,
    name: &'static str,
    description: &'static str,
) -> Histogram<u64> {
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
pub(super) fn gen_ai_instruments(
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
