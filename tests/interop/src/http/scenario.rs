//! The scenario: both services, the chain in one direction, every span of both sides.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::routing::post;
use lens_axum::ServerLayer;
use lens_core::W3cPropagator;
use lens_reqwest::ClientMiddleware;
use reqwest_middleware::ClientBuilder;
use serde_json::json;

use super::checks::{check_python_first, check_rust_first};
use super::direction::{BAGGAGE, Direction};
use super::handlers::{AppState, leaf, relay, start};
use super::otlp_export::{OtlpTargets, finish_rust};
use super::python_service::PythonService;
use super::serve::{post_json, serve};
use super::timeouts::REQUEST_TIMEOUT;
use crate::check::Checks;
use crate::describe::pairs;
use crate::error::{Error, Result};
use crate::spans::{self, SpanRecord};

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
