//! Scenario probe-bleed: `lens probe --repeat 20 --concurrency 4` through a Python service with a
//! context-bleed bug written as users write it (service.py's `POST /generate`: the request's
//! context kept in a module-level variable for the aiohttp client helper, read after an await,
//! when another request may have replaced it), then through the same service with the context
//! taken from the request (`POST /generate_fixed`):
//!
//! ```text
//! lens probe -> FastAPI POST /generate[_fixed] (NeMo Lens) -> aiohttp -> axum POST /leaf (lens)
//! ```
//!
//! The probe receives the spans itself (its receivers on free ports): the Python SDK's OTLP/HTTP
//! exporter sends to a relay here that forwards to the probe's receiver once the probe has said
//! where it listens; the Rust spans go there once the probe has its answers. Checked: with the bug
//! the probe reports `context-bleed` on the Python -> Rust hop, each bleed between two different
//! requests, and exits 1; without it, no bleed, nothing lost, exit 0.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::routing::post;
use lens_axum::ServerLayer;
use serde_json::{Value, json};

use crate::check::Checks;
use crate::error::{Error, Result};
use crate::http::{self, PythonService, REQUEST_TIMEOUT, RUST_SERVICE};
use crate::spans;
use crate::watch::{self, PYTHON_SERVICE};

/// The probe's requests, and how many are in flight at a time.
const REPEAT: usize = 20;
const CONCURRENCY: usize = 4;

/// Where the relay forwards: the probe's OTLP/HTTP base URL, once it has said it.
type Target = Arc<Mutex<Option<String>>>;

#[derive(Clone)]
struct Relay {
    client: reqwest::Client,
    to: Target,
}

/// Forwards an OTLP/HTTP export (any path: traces, logs) to the probe listening now.
async fn relay(State(r): State<Relay>, uri: Uri, headers: HeaderMap, body: Bytes) -> StatusCode {
    let deadline = Instant::now() + Duration::from_secs(10);
    let base = loop {
        let to = r.to.lock().ok().and_then(|t| t.clone());
        match to {
            Some(base) => break base,
            None if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            None => return StatusCode::SERVICE_UNAVAILABLE,
        }
    };
    let mut request = r.client.post(format!("{base}{}", uri.path())).body(body);
    if let Some(kind) = headers.get("content-type") {
        request = request.header("content-type", kind.clone());
    }
    match request.send().await {
        Ok(answer) => StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::OK),
        Err(_) => StatusCode::BAD_GATEWAY,
    }
}

async fn leaf() -> axum::Json<Value> {
    axum::Json(json!({"rust_leaf": true}))
}

/// `lens probe --repeat 20 --concurrency 4 --json` (its own receivers on free ports) against
/// `url`; the relay pointed at it, the `rust` ended Rust spans sent to it after the answers.
/// The exit code and the tally.
async fn probe(
    lens: &Path,
    url: &str,
    to: &Target,
    recording: &spans::Recording,
) -> Result<(Option<i32>, Value)> {
    let mut child = Command::new(lens)
        .args([
            "probe",
            "--json",
            "--grpc",
            "127.0.0.1:0",
            "--http",
            "127.0.0.1:0",
        ])
        .args(["--repeat", &REPEAT.to_string()])
        .args(["--concurrency", &CONCURRENCY.to_string()])
        .args(["--quiet-for", "3", "--wait", "60", "-X", "POST"])
        .args(["-H", "content-type: application/json", "-d", "{}", url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(Error::io("starting lens probe"))?;
    let stderr = child.stderr.take().ok_or_else(|| {
        Error::io("lens probe's standard error")(std::io::Error::other("no pipe"))
    })?;
    let lines = watch::lines(stderr);
    let mut said = Vec::new();
    let mut endpoint = None;
    loop {
        let line = tokio::task::block_in_place(|| lines.recv_timeout(Duration::from_secs(60)))
            .map_err(|_| Error::Timeout {
                what: format!("lens probe's answer line ({said:?})"),
                after: Duration::from_secs(60),
            })?;
        said.push(line.clone());
        if let Some(rest) = line.split_once("receiving OTLP on ").map(|(_, r)| r) {
            let base = rest
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned();
            if let Ok(mut t) = to.lock() {
                *t = Some(base.clone());
            }
            endpoint = Some(base);
        }
        if line.contains(" answered ") {
            break;
        }
    }
    let endpoint = endpoint.ok_or_else(|| Error::Http {
        what: "lens probe".into(),
        message: format!("never said where it receives OTLP ({said:?})"),
    })?;
    // One SERVER span per request, ended as its response went.
    let deadline = Instant::now() + Duration::from_secs(30);
    let finished = loop {
        let finished = recording.exporter.get_finished_spans().unwrap_or_default();
        if finished.len() >= REPEAT || Instant::now() >= deadline {
            break finished;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    recording.exporter.reset();
    let target = (
        opentelemetry_otlp::Protocol::HttpBinary,
        format!("{endpoint}/v1/traces"),
    );
    http::export_rust(finished, &target).await?;
    let output = tokio::task::block_in_place(|| child.wait_with_output())
        .map_err(Error::io("waiting for lens probe"))?;
    if let Ok(mut t) = to.lock() {
        *t = None;
    }
    let tally = serde_json::from_slice(&output.stdout).map_err(Error::json("lens probe --json"))?;
    Ok((output.status.code(), tally))
}

pub(crate) async fn run(
    lens: &Path,
    python: &Path,
    scripts: &Path,
    out: &Path,
    checks: &mut Checks,
) -> Result<()> {
    let recording = spans::Recording::new();
    let to: Target = Arc::new(Mutex::new(None));
    let rust = http::serve(
        Router::new()
            .route("/leaf", post(leaf))
            .layer(ServerLayer::new().with_tracer(recording.tracer.clone())),
    )
    .await?;
    let plain = reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(Error::http("reqwest client"))?;
    let relay = http::serve(Router::new().fallback(relay).with_state(Relay {
        client: plain.clone(),
        to: Arc::clone(&to),
    }))
    .await?;
    let otlp = http::OtlpTargets {
        python: ("http/protobuf", format!("{}/v1/traces", relay.url)),
        rust: (opentelemetry_otlp::Protocol::HttpBinary, String::new()),
    };
    let service =
        PythonService::start(python, scripts, &rust.url, out, Some(&otlp), &plain).await?;

    for (path, bug) in [("/generate", true), ("/generate_fixed", false)] {
        let url = format!("{}{path}", service.url);
        let (code, tally) = probe(lens, &url, &to, &recording).await?;
        let saved = out.join(format!("tally-{}.json", path.trim_start_matches('/')));
        std::fs::write(&saved, format!("{tally:#}")).map_err(Error::io("writing the tally"))?;
        let label = |what: &str| format!("probe-bleed [{path}]: {what}");
        checks.eq(&label("requests"), &tally["requests"], &json!(REPEAT));
        let bleeds = tally["bleeds"].as_array().cloned().unwrap_or_default();
        let hop = tally["hops"].as_array().and_then(|hops| {
            hops.iter()
                .find(|h| h["from"] == PYTHON_SERVICE && h["to"] == RUST_SERVICE)
                .cloned()
        });
        if bug {
            checks.check(&label("context-bleed found"), !bleeds.is_empty(), || {
                format!("{tally:#}")
            });
            let astray: Vec<&Value> = bleeds
                .iter()
                .filter(|b| {
                    b["from"] != PYTHON_SERVICE
                        || b["to"] != RUST_SERVICE
                        || b["request"] == b["into"]
                })
                .collect();
            checks.check(
                &label("every bleed: python -> rust, into another request's trace"),
                astray.is_empty(),
                || format!("{astray:#?}"),
            );
            checks.eq(
                &label("python -> rust: context-bleed counted"),
                &hop.as_ref().map(|h| h["rules"]["context-bleed"].clone()),
                &Some(json!(bleeds.len())),
            );
            checks.eq(&label("exit status"), &code, &Some(1));
        } else {
            checks.eq(&label("no context-bleed"), &bleeds, &Vec::new());
            checks.eq(&label("nothing lost"), &tally["lost"], &json!(0));
            checks.check(&label("python -> rust seen"), hop.is_some(), || {
                format!("{tally:#}")
            });
            checks.eq(&label("exit status"), &code, &Some(0));
        }
        checks.contexts += REPEAT;
    }
    let python_spans = service.stop(checks)?;
    checks.spans += python_spans.len();
    rust.stop(checks).await;
    relay.stop(checks).await;
    Ok(())
}
