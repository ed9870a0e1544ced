//! The Rust service's handlers, each a hop of the chain.

use std::sync::{Arc, OnceLock};

use axum::extract::{Json, State};
use axum::http::StatusCode;
use lens_axum::RequestContext;
use lens_core::LensContextExt;
use opentelemetry::Context;
use reqwest_middleware::ClientWithMiddleware;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::describe::seen;
use crate::error::Result;

#[derive(Clone)]
pub(super) struct AppState {
    pub(super) client: ClientWithMiddleware,
    pub(super) python_url: Arc<OnceLock<String>>,
}

#[derive(Deserialize)]
pub(super) struct StartBody {
    pub(super) baggage: Vec<(String, String)>,
}

pub(super) type Answer = std::result::Result<Json<Value>, (StatusCode, String)>;

pub(super) fn bad_gateway(e: impl std::fmt::Display) -> (StatusCode, String) {
    (StatusCode::BAD_GATEWAY, e.to_string())
}

/// POSTs `{}` to the Python service at `path` through the lens reqwest middleware, as a child of
/// `cx`; the answer's JSON.
pub(super) async fn call_python(
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
pub(super) async fn relay(State(state): State<AppState>, cx: RequestContext) -> Answer {
    let seen_here = seen(cx.context());
    let python = call_python(&state, "/leaf", cx.into_context()).await?;
    Ok(Json(json!({"rust_relay": seen_here, "python": python})))
}

/// Rust first, first hop: sets the baggage and calls Python `/relay`.
pub(super) async fn start(
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
pub(super) async fn leaf(cx: RequestContext) -> Json<Value> {
    Json(json!({"rust_leaf": seen(cx.context())}))
}
