//! `lens demo --stream`: the trainer asks the rollout worker to generate and reads the tokens
//! as server-sent events, through a streaming hop in front of an inference engine:
//!
//! ```text
//! trainer ──HTTP, SSE (reqwest)──▶ rollout-worker POST /generate (axum)
//!   rollout-worker ──HTTP, SSE (reqwest)──▶ inference-engine POST /v1/completions (axum)
//! ```
//!
//! The engine waits before its first token (its prefill), then sends one token an event; the
//! rollout worker forwards each chunk as it arrives. Every span on the way marks its first chunk
//! (docs/streaming.md), and each call is a GenAI operation (`text_completion`), so the waterfall
//! shows the marks and the "time to first chunk by hop" table.

use std::net::SocketAddr;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::IntoResponse;
use axum::routing::post;
use axum::{Extension, Router};
use lens_axum::{GenAi, RequestContext, ServerLayer};
use lens_reqwest::ClientMiddleware;
use opentelemetry::Context;
use reqwest_middleware::ClientWithMiddleware;

use super::collect::Service;
use super::error::DemoError;
use super::web::serve_http;

/// Tokens the engine generates per request.
pub(super) const TOKENS: usize = 8;
/// The engine's time to its first token (its prefill).
const PREFILL: Duration = Duration::from_millis(6);
/// The engine's time per token after the first.
const PER_TOKEN: Duration = Duration::from_millis(1);

/// The GenAI operation of every call of the streaming hop.
fn operation() -> GenAi {
    GenAi::new("text_completion", "lens-demo").with_model("demo-7b")
}

/// The trainer's end of the streaming hop: its client and the rollout worker's URL.
#[derive(Clone)]
pub(crate) struct StreamGenerate {
    client: ClientWithMiddleware,
    url: String,
}

/// The rollout worker's state: its client to the engine.
#[derive(Clone)]
struct Worker {
    client: ClientWithMiddleware,
    engine_url: String,
}

/// `service`'s streaming client: lens-reqwest's spans and metrics, a GenAI operation.
fn client(service: &Service) -> ClientWithMiddleware {
    reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(
            ClientMiddleware::new()
                .with_tracer(service.tracer("lens-reqwest"))
                .with_meter(service.meter("lens-reqwest"))
                .with_gen_ai(operation()),
        )
        .build()
}

fn server_layer(service: &Service) -> ServerLayer {
    ServerLayer::new()
        .with_tracer(service.tracer("lens-axum"))
        .with_meter(service.meter("lens-axum"))
}

impl StreamGenerate {
    /// Starts the engine and the rollout worker's `/generate` on 127.0.0.1; the trainer calls
    /// them through [`StreamGenerate::generate`].
    pub(crate) async fn start(
        trainer: &Service,
        worker: &Service,
        engine: &Service,
    ) -> Result<StreamGenerate, DemoError> {
        let engine_app = Router::new()
            .route("/v1/completions", post(complete))
            .layer(server_layer(engine));
        let engine_addr: SocketAddr = serve_http(engine_app).await?;
        let worker_app = Router::new()
            .route("/generate", post(generate))
            .with_state(Worker {
                client: client(worker),
                engine_url: format!("http://{engine_addr}/v1/completions"),
            })
            .layer(server_layer(worker));
        let worker_addr = serve_http(worker_app).await?;
        Ok(StreamGenerate {
            client: client(trainer),
            url: format!("http://{worker_addr}/generate"),
        })
    }

    /// Asks the rollout worker to generate for `prompt` under `cx` and reads the events as they
    /// come; returns how many tokens arrived.
    pub(crate) async fn generate(&self, cx: &Context, prompt: &str) -> Result<usize, String> {
        let mut response = self
            .client
            .post(&self.url)
            .body(prompt.to_owned())
            .with_extension(cx.clone())
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let mut events = 0;
        while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
            events += chunk.windows(6).filter(|w| w == b"data: ").count();
        }
        Ok(events)
    }
}

/// The engine's `POST /v1/completions`: [`TOKENS`] events, the first after [`PREFILL`].
async fn complete() -> impl IntoResponse {
    let tokens = futures_util::stream::unfold(0usize, |n| async move {
        if n == TOKENS {
            return None;
        }
        tokio::time::sleep(if n == 0 { PREFILL } else { PER_TOKEN }).await;
        let event = Bytes::from(format!("data: token {n}\n\n"));
        Some((Ok::<_, std::convert::Infallible>(event), n + 1))
    });
    (
        Extension(operation()),
        [(http::header::CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(tokens),
    )
}

/// The rollout worker's `POST /generate`: calls the engine and forwards each chunk as it
/// arrives (a gateway that streams).
async fn generate(
    State(worker): State<Worker>,
    request: RequestContext,
    prompt: String,
) -> Result<impl IntoResponse, (http::StatusCode, String)> {
    let failed = |e: String| (http::StatusCode::BAD_GATEWAY, e);
    let response = worker
        .client
        .post(&worker.engine_url)
        .body(prompt)
        .with_extension(request.into_context())
        .send()
        .await
        .map_err(|e| failed(e.to_string()))?;
    let chunks = futures_util::stream::unfold(Some(response), |response| async move {
        let mut response = response?;
        match response.chunk().await {
            Ok(Some(chunk)) => Some((Ok(chunk), Some(response))),
            Ok(None) => None,
            Err(e) => Some((Err(e), None)),
        }
    });
    Ok((
        Extension(operation()),
        [(http::header::CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(chunks),
    ))
}
