//! Scenario gRPC, both directions, against `tests/interop/python/grpc_peer.py` (plain `grpcio`
//! with NeMo Lens's `inject_context` / `extract_context` on the call's metadata):
//!
//! * Python to Rust: a Python CLIENT span injects into the metadata and calls, by path with JSON
//!   bytes, a tonic server behind lens-tonic's `ServerLayer`; the Rust handler reports what it
//!   saw.
//! * Rust to Python: a tonic client over `ClientLayer` (or with `ClientInterceptor`) calls a
//!   `grpcio` server whose handler runs `extract_context(dict(context.invocation_metadata()))`
//!   and starts its SERVER span under it.
//!
//! Each call is a unary or a server-streaming call and its own trace, started from a parent
//! context with a known trace id. One call each way is `grpc.health.v1.Health/Check` through
//! the server and client tonic-health generated from protobuf (protobuf bytes written by hand
//! on the Python side).

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use lens_core::W3cPropagator;
use lens_tonic::{ClientInterceptor, ClientLayer, JsonCodec, ServerLayer};
use opentelemetry::Context;
use opentelemetry::trace::{FutureExt as _, TraceContextExt, Tracer};
use opentelemetry_sdk::trace::SdkTracer;
use serde::Deserialize;
use serde_json::{Value, json};
use tonic::body::Body;
use tonic::codegen::http;
use tonic::server::{NamedService, ServerStreamingService, UnaryService};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Endpoint, Server};
use tonic::{Code, Request, Response, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};
use tower_layer::Layer;

use crate::check::Checks;
use crate::describe::{Seen, Spec, seen};
use crate::error::{Error, Result};
use crate::python::{PythonProcess, START_TIMEOUT};
use crate::spans::{self, Side, SpanRecord};

/// Who calls whom.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    PythonToRust,
    RustToPython,
}

const SERVICE: &str = "lens.interop.Relay";
const UNARY: &str = "/lens.interop.Relay/Unary";
const STREAM: &str = "/lens.interop.Relay/Stream";
const HEALTH_CHECK: &str = "/grpc.health.v1.Health/Check";
/// Where the Python health handler records what it saw (`grpc_peer.py`).
const SEEN_ATTRIBUTE: &str = "lens_interop.seen";
/// A `HealthCheckResponse` with status SERVING, as protobuf bytes in base64.
const SERVING_B64: &str = "CAE=";
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(15);
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

pub(crate) const BAGGAGE: &[(&str, &str)] = &[
    ("tenant", "acme corp"),
    ("list", "a,b,c"),
    ("eq", "k=v=w"),
    ("utf8", "naïve café ✓ 東京 🚀"),
    ("pct", "100% sure"),
];
pub(crate) const TRACESTATE: &[(&str, &str)] =
    &[("congo", "t61rcWkgMzE"), ("rojo", "00f067aa0ba902b7")];

/// How the Rust client sends its context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Via {
    /// `ClientLayer`: a CLIENT span, the parent of the Python SERVER span.
    Layer,
    /// `ClientInterceptor`: no span; the caller's span is the parent of the Python SERVER span.
    Interceptor,
}

/// The service a call goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// `lens.interop.Relay`: JSON messages that say what the handler saw.
    Relay,
    /// `grpc.health.v1.Health/Check`: on the Rust side the server and client tonic-health
    /// generated from protobuf; on the Python side protobuf bytes written by hand, the handler's
    /// view in its span's attribute [`SEEN_ATTRIBUTE`].
    Health,
}

/// One call: its parent context, unary or streaming (with how many messages and the final
/// status), and for Rust callers how the context is sent.
struct Case {
    name: &'static str,
    parent: Spec,
    streaming: bool,
    items: usize,
    code: Code,
    via: Via,
    /// The Rust caller starts a span of its own under `parent` (else `parent` is the parent).
    caller_span: bool,
    target: Target,
}

impl Case {
    fn method(&self) -> &'static str {
        match (self.target, self.streaming) {
            (Target::Health, _) => HEALTH_CHECK,
            (Target::Relay, false) => UNARY,
            (Target::Relay, true) => STREAM,
        }
    }

    fn trace_id(&self) -> &str {
        self.parent
            .span
            .as_ref()
            .map_or("", |s| s.trace_id.as_str())
    }

    fn flags(&self) -> u8 {
        self.parent.span.as_ref().map_or(0, |s| s.trace_flags)
    }
}

fn cases(direction: Direction) -> Vec<Case> {
    // Trace ids 1a..., 1b... (python->rust) and 2a..., 2b... (rust->python): one per call.
    let (a, b, c, d, e, f, g) = match direction {
        Direction::PythonToRust => ("1a", "1b", "1c", "1d", "1e", "1f", "10"),
        Direction::RustToPython => ("2a", "2b", "2c", "2d", "2e", "2f", "20"),
    };
    let trace = |t: &str| format!("{t}f7651916cd43dd8448eb211c80319c");
    let parent = |t: &str, flags: u8| Spec::span(&trace(t), "b7ad6b7169203331", flags);
    let case = |name, parent, streaming, items, code, via, caller_span| Case {
        name,
        parent,
        streaming,
        items,
        code,
        via,
        caller_span,
        target: Target::Relay,
    };
    let mut out = vec![
        case(
            "unary, sampled, tracestate, baggage",
            parent(a, 0x01).tracestate(TRACESTATE).baggage(BAGGAGE),
            false,
            1,
            Code::Ok,
            Via::Layer,
            true,
        ),
        case(
            "unary, random flag (-03)",
            parent(b, 0x03).baggage(&[("job", "rl rollout")]),
            false,
            1,
            Code::Ok,
            Via::Layer,
            false,
        ),
        case(
            "server-streaming, 3 messages, OK",
            parent(c, 0x01).tracestate(TRACESTATE).baggage(BAGGAGE),
            true,
            3,
            Code::Ok,
            Via::Layer,
            true,
        ),
        case(
            "server-streaming, 2 messages, then UNAVAILABLE in the trailers",
            parent(d, 0x01).baggage(BAGGAGE),
            true,
            2,
            Code::Unavailable,
            Via::Layer,
            true,
        ),
        case(
            "server-streaming, no message, UNAVAILABLE (trailers-only)",
            parent(g, 0x01).baggage(BAGGAGE),
            true,
            0,
            Code::Unavailable,
            Via::Layer,
            true,
        ),
        Case {
            target: Target::Health,
            ..case(
                "tonic-health Check (generated from protobuf), tracestate, baggage",
                parent(f, 0x01).tracestate(TRACESTATE).baggage(BAGGAGE),
                false,
                1,
                Code::Ok,
                Via::Layer,
                true,
            )
        },
    ];
    if direction == Direction::RustToPython {
        out.push(case(
            "unary, ClientInterceptor, tracestate, baggage",
            parent(e, 0x01).tracestate(TRACESTATE).baggage(BAGGAGE),
            false,
            1,
            Code::Ok,
            Via::Interceptor,
            true,
        ));
    }
    out
}

/// The gRPC status name grpcio uses (`grpc.StatusCode[...]`).
fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Unavailable => "UNAVAILABLE",
        _ => "UNKNOWN",
    }
}

pub(crate) async fn run(
    python: &Path,
    scripts: &Path,
    out: &Path,
    direction: Direction,
    checks: &mut Checks,
) -> Result<()> {
    let spans::Recording {
        exporter,
        provider,
        tracer,
    } = spans::Recording::new();

    let mut peer = PythonProcess::spawn(
        python,
        &scripts.join("grpc_peer.py"),
        std::iter::empty::<&str>(),
    )?;
    let port = tokio::task::block_in_place(|| peer.read_tagged("LISTENING", START_TIMEOUT))?;
    let cases = cases(direction);
    let observed = match direction {
        Direction::PythonToRust => python_to_rust(&mut peer, &tracer, &cases, checks).await?,
        Direction::RustToPython => rust_to_python(&port, &tracer, &cases, checks).await?,
    };

    let spans_path = out.join("python-spans.json");
    let mut all = tokio::task::block_in_place(|| -> Result<Vec<SpanRecord>> {
        let answer = peer.request(&json!({"op": "finish", "spans": spans_path}))?;
        peer.finish()?;
        let spans = spans::read_python(&spans_path)?;
        checks.eq(
            "python reports the spans it wrote",
            &answer["spans"].as_u64(),
            &u64::try_from(spans.len()).ok(),
        );
        Ok(spans)
    })?;
    let _ignored = provider.force_flush();
    all.extend(spans::take_rust(&exporter, &out.join("rust-spans.json"))?);

    for (case, seen) in cases.iter().zip(&observed) {
        check_spans(checks, direction, case, seen, &all);
    }
    Ok(())
}

/// What a call showed: the caller's span (when it has one of its own) and the span each
/// message of the callee's handler ran in.
#[derive(Default)]
struct Observed {
    caller: Option<String>,
    handler: Option<String>,
}

fn label(direction: Direction, case: &Case, what: &str) -> String {
    let d = match direction {
        Direction::PythonToRust => "python->rust",
        Direction::RustToPython => "rust->python",
    };
    format!("{d} [{}] {what}", case.name)
}

/// What each message says its handler saw: the trace, the handler's own span, the baggage and
/// tracestate the caller sent. Returns the handler's span id.
fn check_handler(
    checks: &mut Checks,
    direction: Direction,
    case: &Case,
    answers: &[Seen],
) -> Option<String> {
    let label = |what: &str| label(direction, case, what);
    checks.eq(&label("messages received"), &answers.len(), &case.items);
    let first = answers.first()?.span.as_ref()?.span_id.clone();
    for (i, answer) in answers.iter().enumerate() {
        let span = answer.span.as_ref();
        checks.eq(
            &label(&format!(
                "message {i}: handler's trace id, flags, tracestate, one span"
            )),
            &span.map(|s| {
                (
                    s.trace_id.as_str(),
                    s.trace_flags,
                    s.tracestate.as_str(),
                    s.span_id.as_str(),
                )
            }),
            &Some((
                case.trace_id(),
                case.flags(),
                case.parent.tracestate_header().as_str(),
                first.as_str(),
            )),
        );
        checks.eq(
            &label(&format!("message {i}: baggage as the caller set it")),
            &answer.baggage,
            &case.parent.baggage,
        );
    }
    checks.contexts += 1;
    Some(first)
}

/// The Python peer calls the Rust server, one call per case.
async fn python_to_rust(
    peer: &mut PythonProcess,
    tracer: &SdkTracer,
    cases: &[Case],
    checks: &mut Checks,
) -> Result<Vec<Observed>> {
    // The Rust server receives from Python senders, which encode a space in baggage as `+`:
    // lens's opt-in for exactly that (docs/propagation-rules.md#baggage, `plus_as_space`).
    let layer = ServerLayer::new()
        .with_tracer(tracer.clone())
        .with_propagator(W3cPropagator::new().with_plus_as_space(true));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(Error::io("binding the rust gRPC server"))?;
    let addr: SocketAddr = listener
        .local_addr()
        .map_err(Error::io("rust gRPC server address"))?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    // Serves "" (the whole server) as SERVING.
    let (_reporter, health) = tonic_health::server::health_reporter();
    let server = tokio::spawn(async move {
        Server::builder()
            .layer(layer)
            .add_service(Relay)
            .add_service(health)
            .serve_with_incoming_shutdown(
                tokio_stream::wrappers::TcpListenerStream::new(listener),
                async {
                    let _ignored = stopped.await;
                },
            )
            .await
    });

    let mut observed = Vec::new();
    for case in cases {
        let label = |what: &str| label(Direction::PythonToRust, case, what);
        let mut request = json!({
            "op": "call",
            "target": addr.to_string(),
            "method": case.method(),
            "streaming": case.streaming,
            "parent": case.parent,
            "request": {"items": case.items, "code": case.code as i32},
        });
        if case.target == Target::Health {
            // An empty HealthCheckRequest (service "") is zero protobuf bytes.
            request["raw_b64"] = json!("");
        }
        let answer = tokio::task::block_in_place(|| peer.request(&request))?;
        let answer: CallAnswer =
            serde_json::from_value(answer).map_err(Error::json("grpc_peer call answer"))?;
        checks.eq(
            &label("python client: final status"),
            &answer.code.as_str(),
            &code_name(case.code),
        );
        let client = answer.client.span.as_ref();
        let traceparent =
            client.map(|s| format!("00-{}-{}-{:02x}", s.trace_id, s.span_id, case.flags()));
        checks.eq(
            &label("inject_context wrote the python CLIENT span into the metadata"),
            &answer.metadata.get("traceparent").and_then(Value::as_str),
            &traceparent.as_deref(),
        );
        let handler = match case.target {
            Target::Relay => {
                let seen: Vec<Seen> = answer
                    .answers
                    .iter()
                    .filter_map(|a| serde_json::from_value(a["rust_server"].clone()).ok())
                    .collect();
                check_handler(checks, Direction::PythonToRust, case, &seen)
            }
            Target::Health => {
                // tonic-health's handler says nothing of its Context: the spans show the hop.
                checks.eq(
                    &label("tonic-health answers SERVING"),
                    &answer.answers,
                    &vec![json!({"raw_b64": SERVING_B64})],
                );
                None
            }
        };
        observed.push(Observed {
            caller: None,
            handler,
        });
    }

    let _ignored = stop.send(());
    match tokio::time::timeout(SHUTDOWN_TIMEOUT, server).await {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(e))) => checks.fail("rust gRPC server", e),
        Ok(Err(e)) => checks.fail("rust gRPC server task", e),
        Err(_) => checks.fail("rust gRPC server", "did not shut down in time"),
    }
    Ok(observed)
}

#[derive(Deserialize)]
struct CallAnswer {
    client: Seen,
    metadata: serde_json::Map<String, Value>,
    answers: Vec<Value>,
    code: String,
}

/// The Rust client calls the Python peer's server, one call per case.
async fn rust_to_python(
    port: &str,
    tracer: &SdkTracer,
    cases: &[Case],
    checks: &mut Checks,
) -> Result<Vec<Observed>> {
    let channel = Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
        .map_err(Error::http("python gRPC endpoint"))?
        .timeout(CALL_TIMEOUT)
        .connect()
        .await
        .map_err(Error::http(format!("connecting to 127.0.0.1:{port}")))?;
    let layered_channel = ClientLayer::new()
        .with_tracer(tracer.clone())
        .layer(channel.clone());
    let mut health = HealthClient::new(layered_channel.clone());
    let mut layered = tonic::client::Grpc::new(layered_channel);
    let mut intercepted =
        tonic::client::Grpc::new(InterceptedService::new(channel, ClientInterceptor::new()));

    let mut observed = Vec::new();
    for case in cases {
        let label = |what: &str| label(Direction::RustToPython, case, what);
        let mut cx = case.parent.build()?;
        if case.caller_span {
            let span = tracer.start_with_context("rust.caller", &cx);
            cx = cx.with_span(span);
        }
        let request = json!({"items": case.items, "code": code_name(case.code)});
        let Answered {
            answers,
            status,
            in_headers,
        } = match (case.target, case.via) {
            (Target::Health, _) => {
                let check = health.check(HealthCheckRequest {
                    service: String::new(),
                });
                match check.with_context(cx.clone()).await {
                    Ok(r) => {
                        Answered::messages(vec![json!({"status": r.into_inner().status})], Ok(()))
                    }
                    Err(status) => Answered::before_any_message(status),
                }
            }
            (Target::Relay, Via::Layer) => {
                call(&mut layered, case, request)
                    .with_context(cx.clone())
                    .await
            }
            (Target::Relay, Via::Interceptor) => {
                call(&mut intercepted, case, request)
                    .with_context(cx.clone())
                    .await
            }
        };
        let caller = case
            .caller_span
            .then(|| cx.span().span_context().span_id().to_string());
        cx.span().end();
        checks.eq(
            &label("rust client: final status"),
            &status.as_ref().err().map_or(Code::Ok, Status::code),
            &case.code,
        );
        if case.streaming && case.code != Code::Ok {
            checks.eq(
                &label("the status came in the response headers (trailers-only)"),
                &in_headers,
                &(case.items == 0),
            );
        }
        let handler = match case.target {
            Target::Relay => {
                let seen: Vec<Seen> = answers
                    .iter()
                    .filter_map(|a| serde_json::from_value(a["python_server"].clone()).ok())
                    .collect();
                check_handler(checks, Direction::RustToPython, case, &seen)
            }
            Target::Health => {
                checks.eq(
                    &label("the generated client reads SERVING"),
                    &answers,
                    &vec![json!({"status": ServingStatus::Serving as i32})],
                );
                // What the handler saw is in its span, checked with the spans.
                None
            }
        };
        observed.push(Observed { caller, handler });
    }
    Ok(observed)
}

/// One call of `case` through `grpc`: the messages, then the final status.
async fn call<T>(grpc: &mut tonic::client::Grpc<T>, case: &Case, request: Value) -> Answered
where
    T: tonic::client::GrpcService<Body>,
    T::ResponseBody: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    <T::ResponseBody as http_body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    T::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if let Err(e) = grpc.ready().await {
        return Answered::before_any_message(Status::unknown(e.into().to_string()));
    }
    let path = http::uri::PathAndQuery::from_static(case.method());
    let codec = JsonCodec::<Value, Value>::new();
    if !case.streaming {
        return match grpc.unary(Request::new(request), path, codec).await {
            Ok(r) => Answered::messages(vec![r.into_inner()], Ok(())),
            Err(status) => Answered::before_any_message(status),
        };
    }
    let mut stream = match grpc
        .server_streaming(Request::new(request), path, codec)
        .await
    {
        Ok(r) => r.into_inner(),
        Err(status) => return Answered::before_any_message(status),
    };
    let mut items = Vec::new();
    loop {
        match stream.message().await {
            Ok(Some(item)) => items.push(item),
            Ok(None) => return Answered::messages(items, Ok(())),
            Err(status) => return Answered::messages(items, Err(status)),
        }
    }
}

/// What a Rust call received: the messages, the final status, and whether that status came with
/// the response headers (a trailers-only response, or no response) rather than in trailers.
struct Answered {
    answers: Vec<Value>,
    status: std::result::Result<(), Status>,
    in_headers: bool,
}

impl Answered {
    fn messages(answers: Vec<Value>, status: std::result::Result<(), Status>) -> Self {
        Answered {
            answers,
            status,
            in_headers: false,
        }
    }

    fn before_any_message(status: Status) -> Self {
        Answered {
            answers: Vec::new(),
            status: Err(status),
            in_headers: true,
        }
    }
}

/// The spans both sides exported for `case`: one trace, the callee's SERVER span a child of
/// the caller's span across the language boundary, the status read from the trailers, and for a
/// stream the caller's span ending after the callee's.
fn check_spans(
    checks: &mut Checks,
    direction: Direction,
    case: &Case,
    observed: &Observed,
    all: &[SpanRecord],
) {
    let label = |what: &str| label(direction, case, what);
    let trace: Vec<SpanRecord> = all
        .iter()
        .filter(|s| s.trace_id == case.trace_id())
        .cloned()
        .collect();
    let name = case.method().trim_start_matches('/');
    let (caller_side, callee_side) = match direction {
        Direction::PythonToRust => (Side::Python, Side::Rust),
        Direction::RustToPython => (Side::Rust, Side::Python),
    };
    let callee = spans::one(checks, &trace, callee_side, "SERVER", name, |_| true);
    // With the interceptor no CLIENT span exists: the caller's span is injected.
    let client = match case.via {
        Via::Layer => spans::one(checks, &trace, caller_side, "CLIENT", name, |_| true),
        Via::Interceptor => None,
    };
    let caller = observed
        .caller
        .as_deref()
        .and_then(|id| trace.iter().find(|s| s.span_id == id));
    checks.eq(
        &label("spans of the trace (both sides)"),
        &trace.len(),
        &(2 + usize::from(direction == Direction::RustToPython && case.caller_span)
            - usize::from(case.via == Via::Interceptor)),
    );
    checks.spans += trace.len();

    // The callee's SERVER span: a child of the span that injected, across the boundary.
    match case.via {
        Via::Layer => {
            spans::parent_is(checks, callee, client, true);
            if direction == Direction::RustToPython && case.caller_span {
                spans::parent_is(checks, client, caller, false);
            }
            if !case.caller_span || direction == Direction::PythonToRust {
                let parent = case.parent.span.as_ref().map(|s| s.span_id.as_str());
                checks.eq(
                    &label("the CLIENT span's parent is the call's parent context"),
                    &client.and_then(|c| c.parent_span_id.as_deref()),
                    &parent,
                );
            }
        }
        Via::Interceptor => spans::parent_is(checks, callee, caller, true),
    }
    let handler = match (case.target, direction) {
        // No message: the handler said nothing.
        (Target::Relay, _) if case.items == 0 => None,
        (Target::Relay, _) => Some(observed.handler.clone()),
        (Target::Health, Direction::RustToPython) => {
            let seen: Option<Seen> = callee
                .and_then(|s| s.attribute(SEEN_ATTRIBUTE))
                .and_then(|text| serde_json::from_str(&text).ok());
            Some(check_handler(checks, direction, case, seen.as_slice()))
        }
        // tonic-health's handler says nothing of its Context.
        (Target::Health, Direction::PythonToRust) => None,
    };
    if let Some(handler) = handler {
        checks.eq(
            &label("the handler runs in its SERVER span"),
            &handler.as_deref(),
            &callee.map(|s| s.span_id.as_str()),
        );
    }
    for span in [caller, client, callee].into_iter().flatten() {
        checks.eq(
            &label(&format!("{:?} {} span: trace flags", span.side, span.kind)),
            &span.trace_flags,
            &case.flags(),
        );
    }

    // The lens span's status: read from the trailers (after the messages of a stream).
    let lens_span = match (direction, case.via) {
        (Direction::PythonToRust, _) => callee,
        (Direction::RustToPython, Via::Layer) => client,
        // No lens span: the interceptor only injects.
        (Direction::RustToPython, Via::Interceptor) => return,
    };
    let code = case.code as i32;
    let error = case.code != Code::Ok;
    checks.eq(
        &label("lens span: rpc.grpc.status_code, error.type, status"),
        &lens_span.map(|s| {
            (
                s.attribute("rpc.grpc.status_code"),
                s.attribute("error.type"),
                s.status.as_str(),
            )
        }),
        &Some((
            Some(code.to_string()),
            error.then(|| code_name(case.code).to_owned()),
            if error { "ERROR" } else { "UNSET" },
        )),
    );
    if case.streaming
        && let (Some(c), Some(s)) = (client, callee)
    {
        checks.check(
            &label("the CLIENT span ends after the SERVER span (at the stream's end)"),
            c.end_unix_nano >= s.end_unix_nano && s.end_unix_nano > 0,
            || {
                format!(
                    "client ended {}, server {}",
                    c.end_unix_nano, s.end_unix_nano
                )
            },
        );
    }
}

/// The Rust relay: `Unary` answers `{"rust_server": what the handler saw}`; `Stream` sends
/// `items` such messages, then the status `code` (a number; without messages, a trailers-only
/// response).
#[derive(Clone)]
struct Relay;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;
type ItemStream = Pin<Box<dyn tokio_stream::Stream<Item = Result<Value, Status>> + Send>>;

fn rust_server_seen() -> Value {
    json!({"rust_server": seen(&Context::current())})
}

impl UnaryService<Value> for Relay {
    type Response = Value;
    type Future = BoxFuture<Result<Response<Value>, Status>>;

    fn call(&mut self, _request: Request<Value>) -> Self::Future {
        let answer = rust_server_seen();
        Box::pin(async move { Ok(Response::new(answer)) })
    }
}

impl ServerStreamingService<Value> for Relay {
    type Response = Value;
    type ResponseStream = ItemStream;
    type Future = BoxFuture<Result<Response<ItemStream>, Status>>;

    fn call(&mut self, request: Request<Value>) -> Self::Future {
        let request = request.into_inner();
        let items = request["items"].as_u64().unwrap_or(0);
        let code = request["code"]
            .as_i64()
            .and_then(|c| i32::try_from(c).ok())
            .map_or(Code::Unknown, Code::from_i32);
        if items == 0 && code != Code::Ok {
            // Before any message: a trailers-only response.
            return Box::pin(async move { Err(Status::new(code, "as asked")) });
        }
        let mut out: Vec<Result<Value, Status>> =
            (0..items).map(|_| Ok(rust_server_seen())).collect();
        if code != Code::Ok {
            out.push(Err(Status::new(code, "as asked")));
        }
        let stream: ItemStream = Box::pin(tokio_stream::iter(out));
        Box::pin(async move { Ok(Response::new(stream)) })
    }
}

impl NamedService for Relay {
    const NAME: &'static str = SERVICE;
}

impl tower_service::Service<http::Request<Body>> for Relay {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<http::Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let codec = JsonCodec::<Value, Value>::new();
        match request.uri().path() {
            UNARY => {
                Box::pin(
                    async move { Ok(tonic::server::Grpc::new(codec).unary(Relay, request).await) },
                )
            }
            STREAM => Box::pin(async move {
                Ok(tonic::server::Grpc::new(codec)
                    .server_streaming(Relay, request)
                    .await)
            }),
            _ => Box::pin(async move { Ok(Status::unimplemented("no such method").into_http()) }),
        }
    }
}
