//! Scenario HTTP, both directions, one trace each:
//!
//! * Python first: harness -> Python `POST /start` (FastAPI, `instrument_fastapi`; sets baggage)
//!   -> aiohttp (`instrument_aiohttp_client`) -> Rust `POST /relay` (axum + `ServerLayer`) -> reqwest
//!   + `ClientMiddleware` -> Python `POST /leaf`.
//! * Rust first: harness -> Rust `POST /start` (sets baggage) -> reqwest + `ClientMiddleware` ->
//!   Python `POST /relay` -> aiohttp -> Rust `POST /leaf`.
//!
//! The harness's own requests carry no trace context, so each trace starts in the first service.
//! Every handler answers with what it saw (`Seen`) and what the next hop answered.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Json, State};
use axum::http::StatusCode;
use axum::routing::post;
use lens_axum::{RequestContext, ServerLayer};
use lens_core::{LensContextExt, W3cPropagator};
use lens_reqwest::ClientMiddleware;
use opentelemetry::Context;
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::check::Checks;
use crate::describe::{Seen, pairs, seen};
use crate::error::{Error, Result};
use crate::python::{PythonProcess, START_TIMEOUT};
use crate::spans::{self, Side, SpanRecord};

/// Where the trace starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Direction {
    PythonFirst,
    RustFirst,
}

/// Baggage set by the first service and read, unchanged, by every later one.
const BAGGAGE: &[(&str, &str)] = &[
    ("tenant", "acme corp"),
    ("list", "a,b,c"),
    ("eq", "k=v=w"),
    ("semi", "x;y"),
    ("utf8", "naïve café ✓ 東京 🚀"),
    ("plus", "1+1=2"),
    ("pct", "100% sure"),
];

pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
const READY_TIMEOUT: Duration = Duration::from_secs(30);
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(15);

#[derive(Clone)]
struct AppState {
    client: ClientWithMiddleware,
    python_url: Arc<OnceLock<String>>,
}

#[derive(Deserialize)]
struct StartBody {
    baggage: Vec<(String, String)>,
}

type Answer = std::result::Result<Json<Value>, (StatusCode, String)>;

fn bad_gateway(e: impl std::fmt::Display) -> (StatusCode, String) {
    (StatusCode::BAD_GATEWAY, e.to_string())
}

/// POSTs `{}` to the Python service at `path` through the lens reqwest middleware, as a child of
/// `cx`; the answer's JSON.
async fn call_python(
    state: &AppState,
    path: &str,
    cx: Context,
) -> Result<Value, (StatusCode, String)> {
    let base = state
        .python_url
        .get()
        .ok_or_else(|| bad_gateway("python url not set"))?;
    let response = state
        .client
        .post(format!("{base}{path}"))
        .header("content-type", "application/json")
        .body("{}")
        .with_extension(cx)
        .send()
        .await
        .map_err(bad_gateway)?;
    if !response.status().is_success() {
        return Err(bad_gateway(format!("python {path}: {}", response.status())));
    }
    let body = response.bytes().await.map_err(bad_gateway)?;
    serde_json::from_slice(&body).map_err(bad_gateway)
}

/// Python first, middle hop: reports what it saw and calls Python `/leaf`.
async fn relay(State(state): State<AppState>, cx: RequestContext) -> Answer {
    let seen_here = seen(cx.context());
    let python = call_python(&state, "/leaf", cx.into_context()).await?;
    Ok(Json(json!({"rust_relay": seen_here, "python": python})))
}

/// Rust first, first hop: sets the baggage and calls Python `/relay`.
async fn start(
    State(state): State<AppState>,
    rc: RequestContext,
    Json(body): Json<StartBody>,
) -> Answer {
    let mut cx = rc.into_context();
    for (k, v) in &body.baggage {
        cx = cx
            .with_baggage_entry(k, v)
            .map_err(|e| (StatusCode::BAD_REQUEST, e.to_string()))?;
    }
    let seen_here = seen(&cx);
    let python = call_python(&state, "/relay", cx).await?;
    Ok(Json(json!({"rust_start": seen_here, "python": python})))
}

/// Rust first, last hop.
async fn leaf(cx: RequestContext) -> Json<Value> {
    Json(json!({"rust_leaf": seen(cx.context())}))
}

/// Where both sides also send their spans over OTLP (the `watch` scenario: a running
/// `lens watch`), each with its SDK's own OTLP exporter.
#[derive(Clone, Debug)]
pub(crate) struct OtlpTargets {
    /// The Python exporter: `grpc` or `http/protobuf`, and its endpoint.
    pub(crate) python: (&'static str, String),
    /// The Rust exporter (opentelemetry-otlp): gRPC or HTTP/protobuf, and its endpoint.
    pub(crate) rust: (opentelemetry_otlp::Protocol, String),
}

/// The Rust service's name in OTLP exports.
pub(crate) const RUST_SERVICE: &str = "lens-interop-rust";

/// Sends `spans` to `target` with opentelemetry-otlp, as service [`RUST_SERVICE`].
pub(crate) async fn export_rust(
    spans: Vec<opentelemetry_sdk::trace::SpanData>,
    target: &(opentelemetry_otlp::Protocol, String),
) -> Result<()> {
    let resource = opentelemetry_sdk::Resource::builder_empty()
        .with_service_name(RUST_SERVICE)
        .build();
    export_rust_as(spans, target, &resource).await
}

/// Sends `spans` to `target` with opentelemetry-otlp, under `resource`.
pub(crate) async fn export_rust_as(
    spans: Vec<opentelemetry_sdk::trace::SpanData>,
    target: &(opentelemetry_otlp::Protocol, String),
    resource: &opentelemetry_sdk::Resource,
) -> Result<()> {
    use opentelemetry_otlp::WithExportConfig as _;
    use opentelemetry_sdk::trace::SpanExporter as _;
    let failed = |e: &dyn std::fmt::Display| Error::Http {
        what: format!("OTLP export to {}", target.1),
        message: e.to_string(),
    };
    let builder = opentelemetry_otlp::SpanExporter::builder();
    let built = match target.0 {
        opentelemetry_otlp::Protocol::Grpc => {
            builder.with_tonic().with_endpoint(target.1.clone()).build()
        }
        protocol => builder
            .with_http()
            .with_protocol(protocol)
            .with_endpoint(target.1.clone())
            .build(),
    };
    let mut exporter = built.map_err(|e| failed(&e))?;
    exporter.set_resource(resource);
    exporter.export(spans).await.map_err(|e| failed(&e))?;
    let _ignored = exporter.shutdown();
    Ok(())
}

/// Runs the scenario; every span of both sides (and, with `otlp`, sends them there).
pub(crate) async fn run(
    python: &Path,
    scripts: &Path,
    out: &Path,
    direction: Direction,
    otlp: Option<&OtlpTargets>,
    checks: &mut Checks,
) -> Result<Vec<SpanRecord>> {
    let spans::Recording {
        exporter,
        provider,
        tracer,
    } = spans::Recording::new();

    let reqwest_client = reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(Error::http("reqwest client"))?;
    let state = AppState {
        client: ClientBuilder::new(reqwest_client.clone())
            .with(ClientMiddleware::new().with_tracer(tracer.clone()))
            .build(),
        python_url: Arc::new(OnceLock::new()),
    };
    // The Rust services receive baggage from Python senders, which encode a space as `+`:
    // lens's opt-in for exactly that (docs/propagation-rules.md#baggage, `plus_as_space`).
    let layer = ServerLayer::new()
        .with_tracer(tracer.clone())
        .with_propagator(W3cPropagator::new().with_plus_as_space(true));
    let router = Router::new()
        .route("/relay", post(relay))
        .route("/start", post(start))
        .route("/leaf", post(leaf))
        .with_state(state.clone())
        .layer(layer);
    let rust = serve(router).await?;
    let rust_url = rust.url.clone();
    let service =
        PythonService::start(python, scripts, &rust_url, out, otlp, &reqwest_client).await?;
    let python_url = service.url.clone();
    let _ignored = state.python_url.set(python_url.clone());

    let (first, path) = match direction {
        Direction::PythonFirst => (&python_url, "/start"),
        Direction::RustFirst => (&rust_url, "/start"),
    };
    let answer = post_json(
        &reqwest_client,
        &format!("{first}{path}"),
        &json!({"baggage": pairs(BAGGAGE)}),
        checks,
        "the first service answers 200",
    )
    .await?;
    drop(reqwest_client);

    // Stop both services: Python flushes its spans to the file, axum finishes its connections
    // (so every SERVER span has ended).
    let mut all = service.stop(checks)?;
    rust.stop(checks).await;
    all.extend(finish_rust(&provider, &exporter, otlp, out).await?);

    match direction {
        Direction::PythonFirst => check_python_first(checks, &answer, &all),
        Direction::RustFirst => check_rust_first(checks, &answer, &all),
    }
    Ok(all)
}

/// POSTs `body` to `url` as JSON; checks (as `check`) that the answer is a success; its JSON.
pub(crate) async fn post_json(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
    checks: &mut Checks,
    check: &str,
) -> Result<Value> {
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .map_err(Error::http(format!("POST {url}")))?;
    let status = response.status();
    let body = response
        .bytes()
        .await
        .map_err(Error::http("reading the answer"))?;
    checks.check(check, status.is_success(), || {
        format!("{status}: {}", String::from_utf8_lossy(&body))
    });
    serde_json::from_slice(&body).map_err(Error::json(format!("the answer of {url}")))
}

/// An axum router served on 127.0.0.1 (port 0) until [`Served::stop`].
pub(crate) struct Served {
    /// `http://127.0.0.1:PORT`.
    pub(crate) url: String,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

/// Serves `router` (with the peer address as connect info, for trust policies).
pub(crate) async fn serve(router: Router) -> Result<Served> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(Error::io("binding the rust service"))?;
    let addr = listener
        .local_addr()
        .map_err(Error::io("rust service address"))?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        axum::serve(
            listener,
            router.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .with_graceful_shutdown(async {
            let _ignored = stopped.await;
        })
        .await
    });
    Ok(Served {
        url: format!("http://{addr}"),
        stop,
        task,
    })
}

impl Served {
    /// Stops serving once the open connections finish (so every SERVER span has ended).
    pub(crate) async fn stop(self, checks: &mut Checks) {
        let _ignored = self.stop.send(());
        match tokio::time::timeout(SHUTDOWN_TIMEOUT, self.task).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => checks.fail("rust service", e),
            Ok(Err(e)) => checks.fail("rust service task", e),
            Err(_) => checks.fail("rust service", "did not shut down in time"),
        }
    }
}

/// tests/interop/python/service.py, running and ready; its spans go to `<out>/python-spans.json`.
pub(crate) struct PythonService {
    process: PythonProcess,
    /// `http://127.0.0.1:PORT`.
    pub(crate) url: String,
    spans: std::path::PathBuf,
}

impl PythonService {
    /// Starts service.py (calling the Rust service at `rust_url`; with `otlp`, also exporting
    /// there) and waits until it answers `GET /health`.
    pub(crate) async fn start(
        python: &Path,
        scripts: &Path,
        rust_url: &str,
        out: &Path,
        otlp: Option<&OtlpTargets>,
        client: &reqwest::Client,
    ) -> Result<Self> {
        Self::start_with(python, scripts, rust_url, out, otlp, client, &[]).await
    }

    /// [`PythonService::start`] with `extra` arguments for service.py.
    pub(crate) async fn start_with(
        python: &Path,
        scripts: &Path,
        rust_url: &str,
        out: &Path,
        otlp: Option<&OtlpTargets>,
        client: &reqwest::Client,
        extra: &[&str],
    ) -> Result<Self> {
        let spans = out.join("python-spans.json");
        let mut args = vec![
            "--rust-url".to_owned(),
            rust_url.to_owned(),
            "--spans".to_owned(),
            spans.to_string_lossy().into_owned(),
        ];
        if let Some(otlp) = otlp {
            args.extend([
                "--otlp-protocol".to_owned(),
                otlp.python.0.to_owned(),
                "--otlp-endpoint".to_owned(),
                otlp.python.1.clone(),
            ]);
        }
        args.extend(extra.iter().map(|a| (*a).to_owned()));
        let mut process = PythonProcess::spawn(python, &scripts.join("service.py"), args)?;
        let port = tokio::task::block_in_place(|| process.read_tagged("LISTENING", START_TIMEOUT))?;
        let url = format!("http://127.0.0.1:{port}");
        wait_ready(client, &url).await?;
        Ok(PythonService {
            process,
            url,
            spans,
        })
    }

    /// Stops the service: it flushes every span (and exports them) and writes them; those spans.
    pub(crate) fn stop(mut self, checks: &mut Checks) -> Result<Vec<SpanRecord>> {
        tokio::task::block_in_place(|| {
            self.process.close_stdin();
            let count = self.process.read_tagged("SPANS", START_TIMEOUT)?;
            self.process.finish()?;
            let spans = spans::read_python(&self.spans)?;
            checks.eq(
                "python reports the spans it wrote",
                &count,
                &spans.len().to_string(),
            );
            Ok(spans)
        })
    }
}

/// The Rust side's finished spans (written to `<out>/rust-spans.json`); with `otlp`, also
/// exported there.
pub(crate) async fn finish_rust(
    provider: &opentelemetry_sdk::trace::SdkTracerProvider,
    exporter: &opentelemetry_sdk::trace::InMemorySpanExporter,
    otlp: Option<&OtlpTargets>,
    out: &Path,
) -> Result<Vec<SpanRecord>> {
    let _ignored = provider.force_flush();
    if let Some(otlp) = otlp {
        let finished = exporter.get_finished_spans().map_err(|e| Error::Http {
            what: "in-memory exporter".into(),
            message: e.to_string(),
        })?;
        export_rust(finished, &otlp.rust).await?;
    }
    spans::take_rust(exporter, &out.join("rust-spans.json"))
}

/// Polls `GET /health` until it answers 200 (bounded).
async fn wait_ready(client: &reqwest::Client, base: &str) -> Result<()> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        let ok = client
            .get(format!("{base}/health"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success());
        if ok {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(Error::Timeout {
                what: format!("{base}/health"),
                after: READY_TIMEOUT,
            });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn seen_at(checks: &mut Checks, answer: &Value, path: &[&str]) -> Option<Seen> {
    let mut value = answer;
    for key in path {
        value = &value[*key];
    }
    match serde_json::from_value::<Seen>(value.clone()) {
        Ok(seen) => Some(seen),
        Err(e) => {
            checks.fail(&format!("answer has {}", path.join(".")), e);
            None
        }
    }
}

/// The trace id a handler saw, and that it saw `BAGGAGE` unchanged.
fn check_hop(checks: &mut Checks, hop: &str, seen: Option<&Seen>, trace_id: &str, crossed: bool) {
    let Some(seen) = seen else { return };
    checks.eq(
        &format!("{hop} handler: trace id"),
        &seen.span.as_ref().map(|s| s.trace_id.as_str()),
        &Some(trace_id),
    );
    checks.eq(
        &format!("{hop} handler: baggage unchanged"),
        &seen.baggage,
        &pairs(BAGGAGE),
    );
    if crossed {
        checks.contexts += 1;
    }
}

fn route(name: &'static str) -> impl Fn(&SpanRecord) -> bool {
    move |s: &SpanRecord| s.name == name
}

fn any(_: &SpanRecord) -> bool {
    true
}

fn check_python_first(checks: &mut Checks, answer: &Value, all: &[SpanRecord]) {
    let start = seen_at(checks, answer, &["python_start"]);
    let relay = seen_at(checks, answer, &["rust", "rust_relay"]);
    let leaf = seen_at(checks, answer, &["rust", "python", "python_leaf"]);
    let Some(trace_id) = start
        .as_ref()
        .and_then(|s| s.span.as_ref())
        .map(|s| s.trace_id.clone())
    else {
        checks.fail("python /start", "no span in the first handler");
        return;
    };
    check_hop(checks, "python /start", start.as_ref(), &trace_id, false);
    check_hop(checks, "rust /relay", relay.as_ref(), &trace_id, true);
    check_hop(checks, "python /leaf", leaf.as_ref(), &trace_id, true);

    spans::same_trace(checks, all, &trace_id);
    let py_start = spans::one(
        checks,
        all,
        Side::Python,
        "SERVER",
        "POST /start",
        route("POST /start"),
    );
    let py_client = spans::one(checks, all, Side::Python, "CLIENT", "aiohttp", any);
    let rs_relay = spans::one(
        checks,
        all,
        Side::Rust,
        "SERVER",
        "POST /relay",
        route("POST /relay"),
    );
    let rs_client = spans::one(checks, all, Side::Rust, "CLIENT", "reqwest", any);
    let py_leaf = spans::one(
        checks,
        all,
        Side::Python,
        "SERVER",
        "POST /leaf",
        route("POST /leaf"),
    );
    checks.eq(
        "python /start is the root",
        &py_start.map(|s| s.parent_span_id.is_none()),
        &Some(true),
    );
    spans::parent_is(checks, py_client, py_start, false);
    spans::parent_is(checks, rs_relay, py_client, true);
    spans::parent_is(checks, rs_client, rs_relay, false);
    spans::parent_is(checks, py_leaf, rs_client, true);
    handler_span(checks, "rust /relay", relay.as_ref(), rs_relay);
    handler_span(checks, "python /leaf", leaf.as_ref(), py_leaf);
}

fn check_rust_first(checks: &mut Checks, answer: &Value, all: &[SpanRecord]) {
    let start = seen_at(checks, answer, &["rust_start"]);
    let relay = seen_at(checks, answer, &["python", "python_relay"]);
    let leaf = seen_at(checks, answer, &["python", "rust", "rust_leaf"]);
    let Some(trace_id) = start
        .as_ref()
        .and_then(|s| s.span.as_ref())
        .map(|s| s.trace_id.clone())
    else {
        checks.fail("rust /start", "no span in the first handler");
        return;
    };
    check_hop(checks, "rust /start", start.as_ref(), &trace_id, false);
    check_hop(checks, "python /relay", relay.as_ref(), &trace_id, true);
    check_hop(checks, "rust /leaf", leaf.as_ref(), &trace_id, true);

    spans::same_trace(checks, all, &trace_id);
    let rs_start = spans::one(
        checks,
        all,
        Side::Rust,
        "SERVER",
        "POST /start",
        route("POST /start"),
    );
    let rs_client = spans::one(checks, all, Side::Rust, "CLIENT", "reqwest", any);
    let py_relay = spans::one(
        checks,
        all,
        Side::Python,
        "SERVER",
        "POST /relay",
        route("POST /relay"),
    );
    let py_client = spans::one(checks, all, Side::Python, "CLIENT", "aiohttp", any);
    let rs_leaf = spans::one(
        checks,
        all,
        Side::Rust,
        "SERVER",
        "POST /leaf",
        route("POST /leaf"),
    );
    checks.eq(
        "rust /start is the root",
        &rs_start.map(|s| s.parent_span_id.is_none()),
        &Some(true),
    );
    spans::parent_is(checks, rs_client, rs_start, false);
    spans::parent_is(checks, py_relay, rs_client, true);
    spans::parent_is(checks, py_client, py_relay, false);
    spans::parent_is(checks, rs_leaf, py_client, true);
    handler_span(checks, "python /relay", relay.as_ref(), py_relay);
    handler_span(checks, "rust /leaf", leaf.as_ref(), rs_leaf);
}

/// The span a handler saw as current is its SERVER span.
fn handler_span(checks: &mut Checks, hop: &str, seen: Option<&Seen>, server: Option<&SpanRecord>) {
    checks.eq(
        &format!("{hop} handler runs in its SERVER span"),
        &seen
            .and_then(|s| s.span.as_ref())
            .map(|s| s.span_id.as_str()),
        &server.map(|s| s.span_id.as_str()),
    );
}
