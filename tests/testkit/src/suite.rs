//! The behaviour suite every lens adapter runs: one list of scenarios and checks, the same for
//! lens-axum, lens-reqwest and lens-tonic's layers, so that the adapters cannot drift apart.
//!
//! An adapter's test implements [`Harness`]: it builds its adapter as a [`Setup`] says (through
//! the knobs every adapter has), sends one [`Call`] through it, and reports what it saw as
//! [`Observed`]. [`run`] goes through every scenario and panics with the scenario's name on the
//! first failed check.
//!
//! The conventions a harness follows:
//! - servers: the handler answers as [`Call::respond`] says (header or message [`RESPOND`]) and
//!   reports the trace context it would send on ([`outgoing_of_current`]), the outgoing call made
//!   from the handler;
//! - clients: the caller's Context is what [`Call::headers`] describe (extracted with
//!   [`caller_context`]); the request carries [`Call::preset`] (a stale `traceparent`) before
//!   the adapter injects; the peer answers as [`Call::respond`] says and reports the propagation
//!   headers it received;
//! - the filter skips the requests that carry the header [`SKIP_HEADER`]; with [`Setup::named`]
//!   every span is named [`SPAN_NAME`]; with [`Setup::hooks`] the request hook adds
//!   [`REQUEST_ATTRIBUTE`] = `true` and the response hook [`RESPONSE_ATTRIBUTE`] = `true`;
//! - with [`Setup::classified`] the harness's classifier (the macro's last argument) calls the
//!   caller's error (HTTP 404, gRPC `NOT_FOUND`) a failure with `error.type` [`CLASSIFIED_ERROR`]
//!   and nothing else one, and the failure hook adds [`FAILURE_ATTRIBUTE`] = the `error.type`;
//! - with [`Setup::metrics`] the adapter records its metrics with a meter of the suite's
//!   [`Metrics`] (the macro's last argument, [`metrics_for`]) and every opt-in instrument it has
//!   on (HTTP: body sizes; HTTP servers: active requests); the harness reports what was
//!   collected once the call is over ([`Observed::metrics`]) and the bytes of the response body
//!   the caller received ([`Observed::response_bytes`], HTTP);
//! - [`Respond::Cancel`]: the peer sends a first part and then nothing; the caller reads the
//!   first part and goes away (drops the response or the stream).
//!
//! The metrics part checks the same things for every adapter: one duration per call whatever
//! the way out (response, error, panic, stream, cancel), in the conventions' unit and buckets;
//! its attributes exactly the span's attributes among the instrument's keys (so never a user's
//! hook's, never the path or the peer's address), `error.type` the span's, never an error's
//! message; HTTP servers' active requests back to 0; HTTP body sizes one per call, the response's
//! the bytes the caller received; nothing for a request the filter skipped.

/// Sets the suite's knobs on an adapter (they have the same names in every adapter): the random
/// flag on new traces, `filter`, and as [`Setup`] says the span name, the attribute hooks, the
/// classifier `classifier` with the failure hook, and a meter of `metrics` (an
/// `&Option<Metrics>`, [`metrics_for`]). The opt-in instruments are the harness's to turn on.
///
/// ```text
/// let metrics = lens_testkit::suite::metrics_for(&setup);
/// let layer = lens_testkit::suite_knobs!(ServerLayer::new().with_tracer(t), setup, |req| ...,
///     |status: &StatusCode| ..., &metrics);
/// ```
#[macro_export]
macro_rules! suite_knobs {
    ($adapter:expr, $setup:expr, $filter:expr, $classifier:expr, $metrics:expr) => {{
        let setup: $crate::suite::Setup = $setup;
        let metrics: &Option<$crate::metrics::Metrics> = $metrics;
        let mut adapter = $adapter
            .with_random_flag_on_new_traces(setup.random_flag_on_new_traces)
            .with_filter($filter);
        if let Some(metrics) = metrics {
            adapter = adapter.with_meter(metrics.meter("suite"));
        }
        if setup.named {
            adapter = adapter.with_span_name(|_| $crate::suite::SPAN_NAME.into());
        }
        if setup.hooks {
            adapter = adapter
                .with_request_attributes(|_, attributes| {
                    attributes.push($crate::__otel::KeyValue::new(
                        $crate::suite::REQUEST_ATTRIBUTE,
                        true,
                    ))
                })
                .with_response_attributes(|_, span| {
                    span.set_attribute($crate::__otel::KeyValue::new(
                        $crate::suite::RESPONSE_ATTRIBUTE,
                        true,
                    ))
                });
        }
        if setup.classified {
            adapter = adapter
                .with_classifier($classifier)
                .with_on_failure(|failure, span| {
                    span.set_attribute($crate::__otel::KeyValue::new(
                        $crate::suite::FAILURE_ATTRIBUTE,
                        failure.error_type.clone(),
                    ))
                });
        }
        adapter
    }};
}

use std::collections::BTreeMap;
use std::future::Future;

use lens_core::Carrier;
use lens_core::policy::InboundDecision;
use opentelemetry::Context;
use opentelemetry::trace::{SpanId, SpanKind, Status, TraceId};
use opentelemetry_sdk::trace::SpanData;

use crate::metrics::{DURATION_BUCKETS_S, Metrics, Point};

/// The header (or gRPC metadata key) that tells the peer how to answer.
pub const RESPOND: &str = "x-suite-respond";
/// Requests carrying this header are skipped by the filter.
pub const SKIP_HEADER: &str = "x-suite-skip";
/// The span name [`Setup::named`] asks for.
pub const SPAN_NAME: &str = "suite-span";
/// The attribute the request hook adds.
pub const REQUEST_ATTRIBUTE: &str = "suite.request";
/// The attribute the response hook adds.
pub const RESPONSE_ATTRIBUTE: &str = "suite.response";
/// The `error.type` the classifier of [`Setup::classified`] gives the caller's error.
pub const CLASSIFIED_ERROR: &str = "suite-classified";
/// The attribute the failure hook of [`Setup::classified`] adds: the failure's `error.type`.
pub const FAILURE_ATTRIBUTE: &str = "suite.failure";

/// The W3C example trace.
pub const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
/// The W3C example parent span.
pub const PARENT_ID: &str = "00f067aa0ba902b7";

/// Which conventions the adapter's metrics follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// `http.server.*` / `http.client.*`.
    Http,
    /// `rpc.server.*` / `rpc.client.*` (either or both of the RPC conventions).
    Grpc,
}

/// Which side of a call the adapter is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// A SERVER span per request; `Setup::decision` applies.
    Server,
    /// A CLIENT span per call; injects into the request.
    Client,
}

/// How the adapter is built for one scenario.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    /// Servers: the inbound policy's decision for every request.
    pub decision: InboundDecision,
    /// The random flag on new traces knob.
    pub random_flag_on_new_traces: bool,
    /// Name every span [`SPAN_NAME`].
    pub named: bool,
    /// Install the request and response attribute hooks.
    pub hooks: bool,
    /// Install the suite's classifier (the caller's error is the only failure) and failure hook.
    pub classified: bool,
    /// Record metrics (with every opt-in instrument the adapter has).
    pub metrics: bool,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            decision: InboundDecision::Trust,
            random_flag_on_new_traces: true,
            named: false,
            hooks: false,
            classified: false,
            metrics: false,
        }
    }
}

/// How the peer (the handler, for servers; the server, for clients) answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Respond {
    /// Success.
    Ok,
    /// The caller's fault: HTTP 404, gRPC `NOT_FOUND`.
    CallerError,
    /// The server's fault: HTTP 500, gRPC `UNAVAILABLE`.
    ServerError,
    /// The handler panics (servers).
    Panic,
    /// A streaming response whose span must outlast its first part.
    Stream,
    /// A first part, then nothing: the caller goes away after it (the call cancelled).
    Cancel,
}

impl Respond {
    /// The value of [`RESPOND`].
    pub fn as_str(self) -> &'static str {
        match self {
            Respond::Ok => "ok",
            Respond::CallerError => "caller-error",
            Respond::ServerError => "server-error",
            Respond::Panic => "panic",
            Respond::Stream => "stream",
            Respond::Cancel => "cancel",
        }
    }

    /// The value of [`RESPOND`] read back (`ok` for anything unknown).
    pub fn parse(value: &str) -> Respond {
        match value {
            "caller-error" => Respond::CallerError,
            "server-error" => Respond::ServerError,
            "panic" => Respond::Panic,
            "stream" => Respond::Stream,
            "cancel" => Respond::Cancel,
            _ => Respond::Ok,
        }
    }
}

/// One call through the adapter.
#[derive(Clone, Debug)]
pub struct Call {
    /// Servers: the request's propagation headers. Clients: the caller's context, as headers.
    pub headers: Vec<(&'static str, String)>,
    /// Clients: headers already on the request before the adapter injects.
    pub preset: Vec<(&'static str, String)>,
    /// How the peer answers.
    pub respond: Respond,
    /// Carry [`SKIP_HEADER`].
    pub skip: bool,
}

impl Call {
    fn new(headers: Vec<(&'static str, String)>) -> Self {
        Call {
            headers,
            preset: Vec::new(),
            respond: Respond::Ok,
            skip: false,
        }
    }
}

/// What the harness saw of one call.
#[derive(Clone, Debug, Default)]
pub struct Observed {
    /// The adapter's spans (SERVER or CLIENT) that ended.
    pub spans: Vec<SpanData>,
    /// The propagation headers of the outgoing call (servers: sent from the handler; clients:
    /// received by the peer), every line of each.
    pub outgoing: BTreeMap<String, Vec<String>>,
    /// [`Respond::Stream`]: whether the span was still open once the first part had arrived.
    pub open_after_first_part: Option<bool>,
    /// With [`Setup::metrics`]: every series collected once the call was over.
    pub metrics: Vec<Point>,
    /// HTTP: the bytes of the response body the caller received.
    pub response_bytes: Option<u64>,
}

impl Observed {
    fn one(&self, scenario: &str) -> &SpanData {
        assert_eq!(
            self.spans.len(),
            1,
            "{scenario}: expected one span, got {:#?}",
            self.spans
        );
        &self.spans[0]
    }

    fn header(&self, scenario: &str, name: &str) -> Option<&str> {
        let lines = self.outgoing.get(name)?;
        assert_eq!(lines.len(), 1, "{scenario}: {name} lines {lines:?}");
        lines.first().map(String::as_str)
    }
}

/// An adapter under test.
pub trait Harness {
    /// Which side it is on.
    fn side(&self) -> Side;
    /// Which conventions its metrics follow.
    fn protocol(&self) -> Protocol;
    /// Whether it can produce `respond` (a client cannot make its peer panic).
    fn supports(&self, respond: Respond) -> bool;
    /// Builds the adapter as `setup` says, sends `call`, waits for `expect_spans` ended spans of
    /// the adapter's kind and reports.
    fn run(&self, setup: Setup, call: Call, expect_spans: usize) -> impl Future<Output = Observed>;
}

/// A meter provider for one call when `setup` asks for metrics (the suite's last knob).
pub fn metrics_for(setup: &Setup) -> Option<Metrics> {
    setup.metrics.then(Metrics::new)
}

/// What `metrics` collected (nothing without metrics): [`Observed::metrics`].
pub fn collected(metrics: &Option<Metrics>) -> Vec<Point> {
    metrics.as_ref().map(Metrics::collect).unwrap_or_default()
}

/// The trace context the current Context would send on: what a handler reports.
pub fn outgoing_of_current() -> Carrier {
    let mut carrier = Carrier::new();
    lens_core::inject_context(&mut carrier);
    carrier
}

/// The caller's Context a client harness makes its call in: `headers` extracted with lens.
pub fn caller_context(headers: &[(&'static str, String)]) -> Context {
    let mut carrier = Carrier::new();
    for (k, v) in headers {
        carrier.insert(*k, v.clone());
    }
    lens_core::extract_context(&carrier)
}

/// The propagation lines of a header map, for [`Observed::outgoing`].
pub fn propagation_lines(headers: &http::HeaderMap) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for name in ["traceparent", "tracestate", "baggage"] {
        let lines: Vec<String> = headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_owned))
            .collect();
        if !lines.is_empty() {
            out.insert(name.to_owned(), lines);
        }
    }
    out
}

/// A [`Carrier`] (a handler's report) as [`Observed::outgoing`].
pub fn carrier_lines(carrier: &Carrier) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for name in ["traceparent", "tracestate", "baggage"] {
        if let Some(v) = carrier.get(name) {
            out.insert(name.to_owned(), vec![v.to_owned()]);
        }
    }
    out
}

fn traceparent(flags: &str) -> (&'static str, String) {
    ("traceparent", format!("00-{TRACE_ID}-{PARENT_ID}-{flags}"))
}

fn attr<'a>(span: &'a SpanData, key: &str) -> Option<&'a opentelemetry::Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

fn parts(scenario: &str, traceparent: Option<&str>) -> (String, String, String) {
    let tp = traceparent.unwrap_or_else(|| panic!("{scenario}: no outgoing traceparent"));
    let fields: Vec<&str> = tp.split('-').collect();
    assert_eq!(fields.len(), 4, "{scenario}: traceparent {tp}");
    (
        fields[1].to_owned(),
        fields[2].to_owned(),
        fields[3].to_owned(),
    )
}

/// The durations of a kind of call, with their units: HTTP has one, RPC one or both of the
/// conventions' (as `OTEL_SEMCONV_STABILITY_OPT_IN` says).
fn durations(side: Side, protocol: Protocol) -> &'static [(&'static str, &'static str)] {
    match (protocol, side) {
        (Protocol::Http, Side::Server) => &[("http.server.request.duration", "s")],
        (Protocol::Http, Side::Client) => &[("http.client.request.duration", "s")],
        (Protocol::Grpc, Side::Server) => &[
            ("rpc.server.call.duration", "s"),
            ("rpc.server.duration", "ms"),
        ],
        (Protocol::Grpc, Side::Client) => &[
            ("rpc.client.call.duration", "s"),
            ("rpc.client.duration", "ms"),
        ],
    }
}

/// The attributes the conventions give a kind of call's metrics (1.42): the keys a data point
/// may have, and those it must have.
fn metric_keys(side: Side, protocol: Protocol) -> (Vec<&'static str>, Vec<&'static str>) {
    match (protocol, side) {
        (Protocol::Http, Side::Server) => (
            vec![
                "http.request.method",
                "url.scheme",
                "http.route",
                "network.protocol.version",
                "http.response.status_code",
                "error.type",
            ],
            vec!["http.request.method", "url.scheme"],
        ),
        (Protocol::Http, Side::Client) => (
            vec![
                "http.request.method",
                "server.address",
                "server.port",
                "network.protocol.version",
                "http.response.status_code",
                "error.type",
            ],
            vec!["http.request.method", "server.address", "server.port"],
        ),
        (Protocol::Grpc, side) => {
            let mut keys = vec![
                "rpc.system",
                "rpc.service",
                "rpc.method",
                "rpc.grpc.status_code",
                "rpc.system.name",
                "rpc.response.status_code",
                "error.type",
            ];
            if side == Side::Client {
                keys.extend(["server.address", "server.port"]);
            }
            (keys, vec!["rpc.method"])
        }
    }
}

/// The metrics part: what one call with [`Setup::metrics`] recorded (see the module's docs).
fn check_metrics(scenario: &str, side: Side, protocol: Protocol, seen: &Observed) {
    let span = seen.one(scenario);
    let points = &seen.metrics;
    let (allowed, required) = metric_keys(side, protocol);
    let text = |key: &str| attr(span, key).map(|v| v.as_str().into_owned());
    // The attributes every data point of the call has: the span's, among the conventions' keys.
    let expected: BTreeMap<String, String> = allowed
        .iter()
        .filter_map(|key| Some(((*key).to_owned(), text(key)?)))
        .collect();
    for key in &required {
        assert!(
            expected.contains_key(*key),
            "{scenario}: the span has no {key}: {:?}",
            span.attributes
        );
    }
    let description = match &span.status {
        Status::Error { description } => Some(description.to_string()),
        _ => None,
    };
    let same_attributes = |p: &Point| {
        assert_eq!(
            p.attributes, expected,
            "{scenario}: {} has not the span's attributes among the conventions' keys",
            p.name
        );
        if let (Some(error_type), Some(description)) = (p.get("error.type"), &description)
            && !description.is_empty()
        {
            assert_ne!(
                error_type, description,
                "{scenario}: error.type is the error's message"
            );
        }
    };

    let mut recorded = 0;
    for (name, unit) in durations(side, protocol) {
        let series: Vec<&Point> = points.iter().filter(|p| p.name == *name).collect();
        if series.is_empty() {
            continue;
        }
        recorded += 1;
        assert_eq!(series.len(), 1, "{scenario}: {series:#?}");
        let p = series[0];
        assert_eq!(p.value, 1.0, "{scenario}: one {name} per call");
        assert_eq!(p.unit, *unit, "{scenario}: {name}");
        let scale = if *unit == "ms" { 1000.0 } else { 1.0 };
        let bounds: Vec<f64> = DURATION_BUCKETS_S.iter().map(|b| b * scale).collect();
        assert_eq!(p.bounds, bounds, "{scenario}: {name}");
        same_attributes(p);
    }
    assert!(recorded > 0, "{scenario}: no duration in {points:#?}");

    if protocol == Protocol::Http {
        let prefix = match side {
            Side::Server => "http.server",
            Side::Client => "http.client",
        };
        for body in ["request", "response"] {
            let name = format!("{prefix}.{body}.body.size");
            let series: Vec<&Point> = points.iter().filter(|p| p.name == name).collect();
            assert_eq!(series.len(), 1, "{scenario}: {name} in {points:#?}");
            let p = series[0];
            assert_eq!(
                (p.value, p.unit.as_str()),
                (1.0, "By"),
                "{scenario}: {name}"
            );
            same_attributes(p);
            // The suite's requests have no body.
            let bytes = match body {
                "request" => Some(0),
                _ => seen.response_bytes,
            };
            if let Some(bytes) = bytes {
                assert_eq!(p.sum, bytes as f64, "{scenario}: {name}");
            }
        }
        if side == Side::Server {
            let active: Vec<&Point> = points
                .iter()
                .filter(|p| p.name == "http.server.active_requests")
                .collect();
            assert_eq!(active.len(), 1, "{scenario}: {points:#?}");
            let p = active[0];
            assert_eq!(p.unit, "{request}", "{scenario}");
            assert_eq!(p.value, 0.0, "{scenario}: active requests not back to 0");
            let keys: Vec<&str> = p.attributes.keys().map(String::as_str).collect();
            assert_eq!(keys, ["http.request.method", "url.scheme"], "{scenario}");
        }
    }
}

/// Runs every scenario of the suite that `harness` supports.
pub async fn run<H: Harness>(harness: &H) {
    let side = harness.side();
    let protocol = harness.protocol();
    let baggage = ("baggage", "tenant=acme,user=alice%20smith".to_owned());

    // Parent and child across the hop, the trace id kept, trusted baggage kept.
    let scenario = "trust: parent/child and trace id across the hop";
    let seen = harness
        .run(
            Setup::default(),
            Call::new(vec![traceparent("01"), baggage.clone()]),
            1,
        )
        .await;
    let span = seen.one(scenario);
    assert_eq!(
        span.span_context.trace_id().to_string(),
        TRACE_ID,
        "{scenario}"
    );
    assert_eq!(span.parent_span_id.to_string(), PARENT_ID, "{scenario}");
    let (trace, parent, flags) = parts(scenario, seen.header(scenario, "traceparent"));
    assert_eq!(trace, TRACE_ID, "{scenario}");
    assert_eq!(
        parent,
        span.span_context.span_id().to_string(),
        "{scenario}"
    );
    assert_eq!(
        flags, "01",
        "{scenario}: no random flag is invented for a remote trace"
    );
    assert_eq!(
        seen.header(scenario, "baggage"),
        Some(baggage.1.as_str()),
        "{scenario}"
    );
    assert_eq!(
        span.span_kind,
        match side {
            Side::Server => SpanKind::Server,
            Side::Client => SpanKind::Client,
        },
        "{scenario}"
    );

    // The random flag kept across the hop.
    let scenario = "an incoming -03 goes on as -03";
    let seen = harness
        .run(Setup::default(), Call::new(vec![traceparent("03")]), 1)
        .await;
    let (trace, _, flags) = parts(scenario, seen.header(scenario, "traceparent"));
    assert_eq!(
        (trace.as_str(), flags.as_str()),
        (TRACE_ID, "03"),
        "{scenario}"
    );

    // The random flag set on new traces, unless turned off.
    for (random, want) in [(true, "03"), (false, "01")] {
        let scenario = format!("a new trace (random flag on new traces: {random})");
        let setup = Setup {
            random_flag_on_new_traces: random,
            ..Setup::default()
        };
        let seen = harness.run(setup, Call::new(Vec::new()), 1).await;
        let span = seen.one(&scenario);
        assert_eq!(span.parent_span_id, SpanId::INVALID, "{scenario}");
        let (trace, parent, flags) = parts(&scenario, seen.header(&scenario, "traceparent"));
        assert_eq!(
            trace,
            span.span_context.trace_id().to_string(),
            "{scenario}"
        );
        assert_eq!(
            parent,
            span.span_context.span_id().to_string(),
            "{scenario}"
        );
        assert_eq!(flags, want, "{scenario}");
    }

    if side == Side::Server {
        // Link and Ignore: a new trace; baggage of an untrusted caller dropped.
        for decision in [InboundDecision::Link, InboundDecision::Ignore] {
            let scenario = format!("{decision:?}: a new trace, baggage dropped");
            let setup = Setup {
                decision,
                ..Setup::default()
            };
            let seen = harness
                .run(
                    setup,
                    Call::new(vec![traceparent("01"), baggage.clone()]),
                    1,
                )
                .await;
            let span = seen.one(&scenario);
            assert_ne!(
                span.span_context.trace_id().to_string(),
                TRACE_ID,
                "{scenario}"
            );
            assert_ne!(span.span_context.trace_id(), TraceId::INVALID, "{scenario}");
            assert_eq!(span.parent_span_id, SpanId::INVALID, "{scenario}");
            let links: Vec<String> = span
                .links
                .iter()
                .map(|l| l.span_context.span_id().to_string())
                .collect();
            match decision {
                InboundDecision::Link => assert_eq!(links, [PARENT_ID], "{scenario}"),
                _ => assert!(links.is_empty(), "{scenario}: {links:?}"),
            }
            assert_eq!(seen.header(&scenario, "baggage"), None, "{scenario}");
        }
    } else {
        // A stale traceparent on the request is replaced, not sent beside the new one.
        let scenario = "a stale traceparent is replaced";
        let mut call = Call::new(vec![traceparent("01")]);
        call.preset = vec![
            (
                "traceparent",
                "00-11111111111111111111111111111111-2222222222222222-01".to_owned(),
            ),
            ("tracestate", "stale=1".to_owned()),
        ];
        let seen = harness.run(Setup::default(), call, 1).await;
        let span = seen.one(scenario);
        let (trace, parent, _) = parts(scenario, seen.header(scenario, "traceparent"));
        assert_eq!(trace, TRACE_ID, "{scenario}");
        assert_eq!(
            parent,
            span.span_context.span_id().to_string(),
            "{scenario}"
        );
        assert_eq!(seen.header(scenario, "tracestate"), None, "{scenario}");
    }

    // Error classification: the adapter's default classifier, then a classifier of the user's
    // (the caller's error is the only failure, under its own `error.type`) with a failure hook,
    // which runs on every failure, a panic's too.
    for classified in [false, true] {
        for respond in [
            Respond::Ok,
            Respond::CallerError,
            Respond::ServerError,
            Respond::Panic,
        ] {
            if !harness.supports(respond) {
                continue;
            }
            let scenario =
                format!("classification of {respond:?} (user's classifier: {classified})");
            let mut call = Call::new(vec![traceparent("01")]);
            call.respond = respond;
            let setup = Setup {
                classified,
                metrics: true,
                ..Setup::default()
            };
            let seen = harness.run(setup, call, 1).await;
            check_metrics(&scenario, side, protocol, &seen);
            let span = seen.one(&scenario);
            let text = |key: &str| attr(span, key).map(|v| v.as_str().into_owned());
            let error = match (respond, classified) {
                (Respond::Ok, _) => false,
                (Respond::Panic, _) => true,
                (Respond::CallerError, true) => true,
                (Respond::CallerError, false) => side == Side::Client,
                (_, classified) => !classified,
            };
            assert_eq!(
                matches!(span.status, Status::Error { .. }),
                error,
                "{scenario}: status {:?}",
                span.status
            );
            assert_eq!(
                text("error.type").is_some(),
                error,
                "{scenario}: {:?}",
                span.attributes
            );
            let named = match respond {
                Respond::Panic => Some("panic"),
                Respond::CallerError if classified => Some(CLASSIFIED_ERROR),
                _ => None,
            };
            if let Some(named) = named {
                assert_eq!(text("error.type").as_deref(), Some(named), "{scenario}");
            }
            if classified {
                assert_eq!(
                    text(FAILURE_ATTRIBUTE),
                    text("error.type"),
                    "{scenario}: {:?}",
                    span.attributes
                );
            }
        }
    }

    // The filter: no span and no metrics; servers give the handler no context, clients inject
    // nothing.
    let scenario = "filtered out";
    let mut call = Call::new(vec![traceparent("01")]);
    call.skip = true;
    let setup = Setup {
        metrics: true,
        ..Setup::default()
    };
    let seen = harness.run(setup, call, 0).await;
    assert!(seen.spans.is_empty(), "{scenario}: {:#?}", seen.spans);
    assert!(seen.metrics.is_empty(), "{scenario}: {:#?}", seen.metrics);
    assert_eq!(seen.header(scenario, "traceparent"), None, "{scenario}");

    // Span name and attribute hooks.
    // The metrics keep the adapter's attributes only (checked by `check_metrics`).
    let scenario = "span name and attribute hooks";
    let setup = Setup {
        named: true,
        hooks: true,
        metrics: true,
        ..Setup::default()
    };
    let seen = harness
        .run(setup, Call::new(vec![traceparent("01")]), 1)
        .await;
    check_metrics(scenario, side, protocol, &seen);
    let span = seen.one(scenario);
    assert_eq!(span.name, SPAN_NAME, "{scenario}");
    for key in [REQUEST_ATTRIBUTE, RESPONSE_ATTRIBUTE] {
        assert_eq!(
            attr(span, key),
            Some(&opentelemetry::Value::Bool(true)),
            "{scenario}: {key} in {:?}",
            span.attributes
        );
    }

    // The span ends after a streaming body, not before.
    if harness.supports(Respond::Stream) {
        let scenario = "the span outlasts the first part of a stream";
        let mut call = Call::new(vec![traceparent("01")]);
        call.respond = Respond::Stream;
        let setup = Setup {
            metrics: true,
            ..Setup::default()
        };
        let seen = harness.run(setup, call, 1).await;
        seen.one(scenario);
        assert_eq!(seen.open_after_first_part, Some(true), "{scenario}");
        check_metrics(scenario, side, protocol, &seen);
    }

    // A call the caller abandons after the first part: the span ends, its duration is recorded
    // once, the active requests go back to 0.
    if harness.supports(Respond::Cancel) {
        let scenario = "the caller goes away after the first part";
        let mut call = Call::new(vec![traceparent("01")]);
        call.respond = Respond::Cancel;
        let setup = Setup {
            metrics: true,
            ..Setup::default()
        };
        let seen = harness.run(setup, call, 1).await;
        seen.one(scenario);
        check_metrics(scenario, side, protocol, &seen);
    }
}
