//! Scenario probe: `lens probe --watch` through a chain with Python on both ends, every span of
//! both languages exported to one running `lens watch` (Python by its SDK's OTLP exporter as each
//! span ends, Rust by opentelemetry-otlp once the probe has its answer):
//!
//! ```text
//! lens probe -> FastAPI POST /relay (NeMo Lens) -> aiohttp -> [proxy] -> axum POST /leaf (lens,
//!   with_baggage_keys) -> reqwest (lens) -> FastAPI POST /leaf
//! ```
//!
//! The Python service records the baggage keys that arrive (docs/probe.md's span processor), the
//! lens service its own (`with_baggage_keys(true)`). The proxy, written here, forwards as it
//! came, drops `tracestate`, puts a span of its own in `traceparent`, or drops every trace
//! header. Checked: the probe's report names the broken hop and what broke and nothing on the
//! healthy ones (the baggage seen on both Python hops through the span processor), the
//! healthy chain exits 0 and each broken one 1.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use lens_axum::{RequestContext, ServerLayer};
use lens_reqwest::ClientMiddleware;
use reqwest_middleware::ClientWithMiddleware;
use serde_json::{Value, json};

use crate::check::Checks;
use crate::error::{Error, Result};
use crate::http::{self, PythonService, REQUEST_TIMEOUT, RUST_SERVICE};
use crate::spans;
use crate::watch::{self, PYTHON_SERVICE};

/// What the proxy does to the trace headers of the Python -> Rust hop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Proxy {
    Pass,
    DropTracestate,
    Reparent,
    DropAll,
}

const PROXIES: [Proxy; 4] = [
    Proxy::Pass,
    Proxy::DropTracestate,
    Proxy::Reparent,
    Proxy::DropAll,
];

/// The span id the reparenting proxy puts in `traceparent` (never exported).
const PROXY_SPAN: &str = "eeeeeeeeeeeeeeee";

/// A JSON answer (what the Python side's `response.json()` reads).
type Answer = (
    StatusCode,
    [(axum::http::HeaderName, &'static str); 1],
    String,
);

fn answer(status: StatusCode, json: String) -> Answer {
    (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        json,
    )
}

/// The answer of a request relayed further: its status and body, or 502 with why.
async fn relayed<E: ToString>(sent: std::result::Result<reqwest::Response, E>) -> Answer {
    match sent {
        Ok(r) => answer(
            StatusCode::from_u16(r.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY),
            r.text().await.unwrap_or_default(),
        ),
        Err(e) => answer(StatusCode::BAD_GATEWAY, json!(e.to_string()).to_string()),
    }
}

#[derive(Clone)]
struct Forward {
    client: reqwest::Client,
    to: String,
    mode: Arc<AtomicU8>,
}

async fn forward(State(f): State<Forward>, headers: HeaderMap, body: String) -> Answer {
    let mode = PROXIES[usize::from(f.mode.load(Ordering::SeqCst))];
    let mut out = reqwest::header::HeaderMap::new();
    for (name, value) in &headers {
        let dropped = match mode {
            Proxy::Pass | Proxy::Reparent => false,
            Proxy::DropTracestate => name == "tracestate",
            Proxy::DropAll => ["traceparent", "tracestate", "baggage"].contains(&name.as_str()),
        };
        if !dropped && name != "content-length" {
            out.append(name.clone(), value.clone());
        }
    }
    if mode == Proxy::Reparent
        && let Some(tp) = headers.get("traceparent").and_then(|v| v.to_str().ok())
        && tp.len() == 55
        && let Ok(value) = format!("{}{PROXY_SPAN}{}", &tp[..36], &tp[52..]).parse()
    {
        out.insert("traceparent", value);
    }
    relayed(f.client.post(&f.to).headers(out).body(body).send().await).await
}

#[derive(Clone)]
struct Leaf {
    client: ClientWithMiddleware,
    /// The Python service's `/leaf`, once it listens.
    python: Arc<OnceLock<String>>,
}

async fn leaf(State(l): State<Leaf>, cx: RequestContext) -> Answer {
    let Some(url) = l.python.get() else {
        return answer(StatusCode::SERVICE_UNAVAILABLE, "\"no python yet\"".into());
    };
    let sent = l
        .client
        .post(url)
        .header("content-type", "application/json")
        .body("{}")
        .with_extension(cx.into_context())
        .send()
        .await
        .map_err(|e| e.to_string());
    relayed(sent).await
}

/// `lens probe --json --watch WATCH -d {} URL`: once it has its answer, the Rust spans (`rust`
/// of them ended) go to `lens watch`. The exit code and the route.
async fn probe(
    lens: &Path,
    watch_base: &str,
    url: &str,
    recording: &spans::Recording,
    rust: usize,
    otlp_rust: &(opentelemetry_otlp::Protocol, String),
) -> Result<(Option<i32>, Value)> {
    let mut child = Command::new(lens)
        .args(["probe", "--json", "--watch", watch_base, "--quiet-for", "3"])
        .args([
            "--wait",
            "60",
            "-X",
            "POST",
            "-H",
            "content-type: application/json",
        ])
        .args(["-d", "{}", url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(Error::io("starting lens probe"))?;
    let stderr = child.stderr.take().ok_or_else(|| {
        Error::io("lens probe's standard error")(std::io::Error::other("no pipe"))
    })?;
    let lines = watch::lines(stderr);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut said = Vec::new();
    loop {
        let line = tokio::task::block_in_place(|| lines.recv_timeout(Duration::from_secs(60)))
            .map_err(|_| Error::Timeout {
                what: format!("lens probe's answer line ({said:?})"),
                after: Duration::from_secs(60),
            })?;
        said.push(line.clone());
        if line.contains(" answered ") {
            break;
        }
    }
    // The Rust spans end as their responses go.
    let finished = loop {
        let finished = recording.exporter.get_finished_spans().unwrap_or_default();
        if finished.len() >= rust || Instant::now() >= deadline {
            break finished;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    recording.exporter.reset();
    http::export_rust(finished, otlp_rust).await?;
    let output = tokio::task::block_in_place(|| child.wait_with_output())
        .map_err(Error::io("waiting for lens probe"))?;
    let route = serde_json::from_slice(&output.stdout).map_err(Error::json("lens probe --json"))?;
    Ok((output.status.code(), route))
}

/// The hop of `route` from `from` to `to`.
fn hop<'a>(route: &'a Value, from: &str, to: &str) -> Option<&'a Value> {
    route["hops"]
        .as_array()?
        .iter()
        .find(|h| h["from"] == from && h["to"] == to)
}

pub(crate) async fn run(
    lens: &Path,
    python: &Path,
    scripts: &Path,
    out: &Path,
    checks: &mut Checks,
) -> Result<()> {
    let watch = watch::start(lens, &out.join("probe.jsonl"))?;
    let watch_base = format!("http://{}", watch.http_addr());
    let otlp_rust = (opentelemetry_otlp::Protocol::HttpBinary, watch.http_url());
    let recording = spans::Recording::new();
    let mode = Arc::new(AtomicU8::new(0));
    let python_leaf = Arc::new(OnceLock::new());

    let client = reqwest_middleware::ClientBuilder::new(
        reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(Error::http("reqwest client"))?,
    )
    .with(
        ClientMiddleware::new()
            .with_tracer(recording.tracer.clone())
            .with_baggage_keys(true),
    )
    .build();
    let rust = http::serve(
        Router::new()
            .route("/leaf", post(leaf))
            .with_state(Leaf {
                client,
                python: Arc::clone(&python_leaf),
            })
            .layer(
                ServerLayer::new()
                    .with_tracer(recording.tracer.clone())
                    .with_baggage_keys(true),
            ),
    )
    .await?;
    let proxy = http::serve(
        Router::new()
            .route("/leaf", post(forward))
            .with_state(Forward {
                client: reqwest::Client::new(),
                to: format!("{}/leaf", rust.url),
                mode: Arc::clone(&mode),
            }),
    )
    .await?;
    let plain = reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(Error::http("reqwest client"))?;
    let otlp = http::OtlpTargets {
        python: ("grpc", watch.grpc_url()),
        rust: otlp_rust.clone(),
    };
    let service = PythonService::start_with(
        python,
        scripts,
        &proxy.url,
        out,
        Some(&otlp),
        &plain,
        &["--baggage-keys"],
    )
    .await?;
    let _ = python_leaf.set(format!("{}/leaf", service.url));
    let url = format!("{}/relay", service.url);

    for proxy_mode in PROXIES {
        mode.store(proxy_mode as u8, Ordering::SeqCst);
        // Rust: the SERVER span of /leaf and the CLIENT span of its call (or both in the new
        // trace when the context is lost).
        let (code, route) = probe(lens, &watch_base, &url, &recording, 2, &otlp_rust).await?;
        let label = |what: &str| format!("probe [{proxy_mode:?}]: {what}");
        let broken = |h: Option<&Value>| h.map(|h| h["broken"].clone());
        let first = hop(&route, "lens probe", PYTHON_SERVICE);
        let middle = hop(&route, PYTHON_SERVICE, RUST_SERVICE);
        let last = hop(&route, RUST_SERVICE, PYTHON_SERVICE);
        checks.eq(
            &label("lens probe -> python kept everything"),
            &broken(first),
            &Some(json!([])),
        );
        checks.eq(
            &label("rust -> python kept everything"),
            &broken(last),
            &Some(json!([])),
        );
        // After a lost hop the probe's baggage is not judged: it never reached that trace.
        let last_baggage = if proxy_mode == Proxy::DropAll {
            Value::Null
        } else {
            json!("kept")
        };
        for (name, h, baggage) in [
            ("probe -> python", first, json!("kept")),
            ("rust -> python", last, last_baggage),
        ] {
            checks.eq(
                &label(&format!("{name}: the baggage (the processor's keys)")),
                &h.map(|h| h["baggage"].clone()),
                &Some(baggage),
            );
        }
        let expected = match proxy_mode {
            Proxy::Pass => json!([]),
            Proxy::DropTracestate => json!(["tracestate-dropped"]),
            Proxy::Reparent => json!(["missing-parent"]),
            Proxy::DropAll => json!(["lost-context"]),
        };
        checks.eq(
            &label("python -> rust: what broke"),
            &broken(middle),
            &Some(expected),
        );
        checks.eq(
            &label("exit status"),
            &code,
            &Some(if proxy_mode == Proxy::Pass { 0 } else { 1 }),
        );
        let Some(middle) = middle else {
            checks.fail(&label("the python -> rust hop"), format!("{route:#}"));
            continue;
        };
        match proxy_mode {
            Proxy::Reparent => {
                checks.eq(
                    &label("python -> rust: re-parented to the proxy's span"),
                    &middle["parent"]["reparented"],
                    &json!(PROXY_SPAN),
                );
            }
            Proxy::DropAll => {
                checks.eq(
                    &label("python -> rust: the new trace says why"),
                    &middle["trace"]["lost"]["cause"],
                    &json!("none"),
                );
                checks.eq(
                    &label("rust -> python is followed into the new trace"),
                    &last.map(|h| h["in_probe_trace"].clone()),
                    &Some(json!(false)),
                );
            }
            Proxy::Pass | Proxy::DropTracestate => {
                checks.eq(
                    &label("python -> rust: the baggage arrived"),
                    &middle["baggage"],
                    &json!("kept"),
                );
            }
        }
        checks.contexts += 1;
    }
    let python_spans = service.stop(checks)?;
    checks.spans += python_spans.len();
    rust.stop(checks).await;
    proxy.stop(checks).await;
    drop(watch);
    Ok(())
}
