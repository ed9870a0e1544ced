//! Scenario `http-stream`: streamed responses both ways, one trace each.
//!
//! * A FastAPI `StreamingResponse` (NeMo Lens's FastAPI instrumentation) read by lens-reqwest:
//!   the CLIENT span marks the first chunk when it arrived; the Python side put, in each event,
//!   the time it handed the event to its server (`sent_ns`). lens's mark is after Python's by the
//!   loopback's latency, a few milliseconds at most.
//! * A lens-axum SSE endpoint read by aiohttp in the NeMo Lens service: the SERVER span marks the
//!   first chunk when it left; Python answers when its first chunk arrived (`first_ns`), after
//!   lens's mark by the same latency.
//!
//! Both processes read the same wall clock. Each direction is one trace: the Python span's parent
//! is the Rust span, or the other way round.

use std::path::Path;
use std::time::Duration;

use axum::Router;
use axum::response::sse::{Event, Sse};
use axum::routing::get;
use lens_axum::ServerLayer;
use lens_reqwest::ClientMiddleware;
use opentelemetry::trace::SpanKind;
use opentelemetry_sdk::trace::SpanData;
use reqwest_middleware::ClientBuilder;
use serde_json::{Value, json};

use crate::check::Checks;
use crate::error::{Error, Result};
use crate::http::{PythonService, REQUEST_TIMEOUT, post_json, serve};
use crate::spans::{self, SpanRecord};

/// lens's mark and the peer's own measurement of the same first chunk are this close at most
/// (the loopback's latency and a scheduler's wake-up, both ways well under it).
const AGREEMENT: Duration = Duration::from_millis(25);
/// The Rust endpoint's events, the wait before the first and the gap between the others.
const TOKENS: usize = 5;
const FIRST_TOKEN: Duration = Duration::from_millis(30);
const TOKEN_GAP: Duration = Duration::from_millis(5);

/// `GET /tokens`: [`TOKENS`] server-sent events, the first after [`FIRST_TOKEN`].
async fn tokens()
-> Sse<impl futures_util::Stream<Item = std::result::Result<Event, std::convert::Infallible>>> {
    Sse::new(futures_util::stream::unfold(0usize, |i| async move {
        if i == TOKENS {
            return None;
        }
        tokio::time::sleep(if i == 0 { FIRST_TOKEN } else { TOKEN_GAP }).await;
        Some((Ok(Event::default().data(format!("token {i}"))), i + 1))
    }))
}

fn first_chunk(span: &SpanData) -> Option<u64> {
    let event = span
        .events
        .iter()
        .find(|e| e.name == lens_span_names::FIRST_CHUNK)?;
    Some(nanos(event.timestamp))
}

fn nanos(t: std::time::SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn attribute(span: &SpanData, key: &str) -> Option<opentelemetry::Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
}

/// The names lens-span's stream marks carry (docs/streaming.md).
mod lens_span_names {
    pub(super) const FIRST_CHUNK: &str = "lens.stream.first_chunk";
    pub(super) const CHUNKS: &str = "lens.stream.chunks";
    pub(super) const END: &str = "lens.stream.end";
}

/// Checks that `later` (ns) follows `earlier` (ns) by at most [`AGREEMENT`].
fn agree(checks: &mut Checks, name: &str, earlier: u64, later: u64) {
    let gap = i128::from(later) - i128::from(earlier);
    checks.check(
        name,
        (0..=AGREEMENT.as_nanos() as i128).contains(&gap),
        || format!("{:.3} ms apart", gap as f64 / 1e6),
    );
}

/// Runs the scenario; every span of both sides.
pub(crate) async fn run(
    python: &Path,
    scripts: &Path,
    out: &Path,
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
    let client = ClientBuilder::new(reqwest_client.clone())
        .with(ClientMiddleware::new().with_tracer(tracer.clone()))
        .build();
    let router = Router::new()
        .route("/tokens", get(tokens))
        .layer(ServerLayer::new().with_tracer(tracer));
    let rust = serve(router).await?;
    let service =
        PythonService::start(python, scripts, &rust.url, out, None, &reqwest_client).await?;

    // lens-reqwest reads FastAPI's StreamingResponse.
    let mut response = client
        .get(format!("{}/tokens", service.url))
        .send()
        .await
        .map_err(|e| Error::Http {
            what: "GET python /tokens".into(),
            message: e.to_string(),
        })?;
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(Error::http("reading python /tokens"))?
    {
        body.extend_from_slice(&chunk);
    }
    drop(response);
    let text = String::from_utf8_lossy(&body).into_owned();
    let events: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|e| serde_json::from_str(e).ok())
        .collect();
    checks.eq(
        "lens-reqwest reads every event of FastAPI's stream",
        &events.len(),
        &5,
    );
    let python_sent = events
        .first()
        .and_then(|e| e["sent_ns"].as_u64())
        .unwrap_or(0);

    // aiohttp (NeMo Lens) reads lens-axum's SSE.
    let read = post_json(
        &reqwest_client,
        &format!("{}/read_stream", service.url),
        &json!({"url": format!("{}/tokens", rust.url)}),
        checks,
        "python reads the rust stream",
    )
    .await?;
    drop(reqwest_client);
    let python_spans = service.stop(checks)?;
    rust.stop(checks).await;
    let _ignored = provider.force_flush();
    let rust_spans = exporter.get_finished_spans().map_err(|e| Error::Http {
        what: "in-memory exporter".into(),
        message: e.to_string(),
    })?;

    // Python → Rust: the CLIENT span's first chunk after Python sent it.
    match rust_spans.iter().find(|s| s.span_kind == SpanKind::Client) {
        Some(client_span) => {
            let first = first_chunk(client_span).unwrap_or(0);
            agree(
                checks,
                "lens-reqwest's first chunk follows FastAPI's first event",
                python_sent,
                first,
            );
            checks.eq(
                "the CLIENT span counts FastAPI's events as chunks",
                &attribute(client_span, lens_span_names::CHUNKS),
                &Some(opentelemetry::Value::I64(5)),
            );
            checks.eq(
                "the CLIENT span's stream is complete",
                &attribute(client_span, lens_span_names::END).map(|v| v.to_string()),
                &Some("complete".to_owned()),
            );
            let trace = client_span.span_context.trace_id().to_string();
            let id = client_span.span_context.span_id().to_string();
            let server = python_spans
                .iter()
                .find(|s| s.kind == "SERVER" && s.name.contains("/tokens"));
            checks.check(
                "FastAPI's SERVER span is the CLIENT span's child (one trace)",
                server.is_some_and(|s| {
                    s.trace_id == trace && s.parent_span_id.as_deref() == Some(id.as_str())
                }),
                || format!("{server:?}"),
            );
        }
        None => checks.fail("lens-reqwest's CLIENT span", "not recorded"),
    }

    // Rust → Python: aiohttp's first chunk after lens-axum sent it.
    match rust_spans.iter().find(|s| s.span_kind == SpanKind::Server) {
        Some(server_span) => {
            let sent = first_chunk(server_span).unwrap_or(0);
            let arrived = read["first_ns"].as_u64().unwrap_or(0);
            agree(
                checks,
                "aiohttp's first chunk follows lens-axum's mark",
                sent,
                arrived,
            );
            checks.check(
                "aiohttp reads the stream in more than one chunk",
                read["chunks"].as_u64().unwrap_or(0) >= 2,
                || read.to_string(),
            );
            checks.eq(
                "aiohttp reads every event",
                &read["events"].as_u64(),
                &Some(TOKENS as u64),
            );
            let trace = server_span.span_context.trace_id().to_string();
            let parent = server_span.parent_span_id.to_string();
            let client = python_spans.iter().find(|s| s.kind == "CLIENT");
            checks.check(
                "lens-axum's SERVER span is aiohttp's CLIENT span's child (one trace)",
                client.is_some_and(|c| c.trace_id == trace && c.span_id == parent),
                || format!("{client:?}"),
            );
        }
        None => checks.fail("lens-axum's SERVER span", "not recorded"),
    }

    let mut all = python_spans;
    all.extend(spans::take_rust(&exporter, &out.join("rust-spans.json"))?);
    checks.spans += all.len();
    Ok(all)
}
