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
//!   and nothing else one, and the failure hook adds [`FAILURE_ATTRIBUTE`] = the `error.type`.

/// Sets the suite's knobs on an adapter (they have the same names in every adapter): the random
/// flag on new traces, `filter`, and as [`Setup`] says the span name, the attribute hooks, and
/// the classifier `classifier` with the failure hook.
///
/// ```text
/// let layer = lens_testkit::suite_knobs!(ServerLayer::new().with_tracer(t), setup, |req| ...,
///     |status: &StatusCode| ...);
/// ```
#[macro_export]
macro_rules! suite_knobs {
    ($adapter:expr, $setup:expr, $filter:expr, $classifier:expr) => {{
        let setup: $crate::suite::Setup = $setup;
        let mut adapter = $adapter
            .with_random_flag_on_new_traces(setup.random_flag_on_new_traces)
            .with_filter($filter);
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
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            decision: InboundDecision::Trust,
            random_flag_on_new_traces: true,
            named: false,
            hooks: false,
            classified: false,
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
        }
    }

    /// The value of [`RESPOND`] read back (`ok` for anything unknown).
    pub fn parse(value: &str) -> Respond {
        match value {
            "caller-error" => Respond::CallerError,
            "server-error" => Respond::ServerError,
            "panic" => Respond::Panic,
            "stream" => Respond::Stream,
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
    /// Whether it can produce `respond` (a client cannot make its peer panic).
    fn supports(&self, respond: Respond) -> bool;
    /// Builds the adapter as `setup` says, sends `call`, waits for `expect_spans` ended spans of
    /// the adapter's kind and reports.
    fn run(&self, setup: Setup, call: Call, expect_spans: usize) -> impl Future<Output = Observed>;
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

/// Runs every scenario of the suite that `harness` supports.
pub async fn run<H: Harness>(harness: &H) {
    let side = harness.side();
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
                ..Setup::default()
            };
            let seen = harness.run(setup, call, 1).await;
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

    // The filter: no span; servers give the handler no context, clients inject nothing.
    let scenario = "filtered out";
    let mut call = Call::new(vec![traceparent("01")]);
    call.skip = true;
    let seen = harness.run(Setup::default(), call, 0).await;
    assert!(seen.spans.is_empty(), "{scenario}: {:#?}", seen.spans);
    assert_eq!(seen.header(scenario, "traceparent"), None, "{scenario}");

    // Span name and attribute hooks.
    let scenario = "span name and attribute hooks";
    let setup = Setup {
        named: true,
        hooks: true,
        ..Setup::default()
    };
    let seen = harness
        .run(setup, Call::new(vec![traceparent("01")]), 1)
        .await;
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
        let seen = harness.run(Setup::default(), call, 1).await;
        seen.one(scenario);
        assert_eq!(seen.open_after_first_part, Some(true), "{scenario}");
    }
}
