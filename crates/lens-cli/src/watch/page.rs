//! The live page on the HTTP port: `GET /` (one self-contained document: inline style and
//! script, no external asset), `GET /api/traces` (the list, filtered and sorted),
//! `GET /api/traces/{id}` (one trace's waterfall, lens-watch's HTML section), `GET /api/status`,
//! `GET /api/findings` (the doctor's latest findings, newest first, as `lens check --json` prints
//! them). The page polls the list and the findings once a second.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use lens_watch::model::TraceId;
use lens_watch::render;
use lens_watch::session::{ListFilter, ListOrder};
use serde_json::{Value, json};

use super::Store;

/// The page (HTML, CSS and script in one document).
const PAGE: &str = include_str!("page.html");

/// The most traces one list answer carries.
const LIST_LIMIT: usize = 500;

pub(super) fn router(store: Store) -> axum::Router {
    axum::Router::new()
        .route("/", get(index))
        .route("/api/traces", get(list))
        .route("/api/traces/{id}", get(trace))
        .route("/api/status", get(status))
        .route("/api/findings", get(findings))
        .with_state(store)
}

async fn index() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        PAGE.replace("/*STYLE*/", render::html::STYLE),
    )
        .into_response()
}

/// `?service=&name=&sort=newest|duration`.
#[derive(Debug, serde::Deserialize)]
pub(super) struct Filter {
    #[serde(default)]
    service: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    sort: String,
}

async fn list(State(store): State<Store>, Query(filter): Query<Filter>) -> Json<Value> {
    let mut wanted = ListFilter::default();
    wanted.service = filter.service;
    wanted.name = filter.name;
    wanted.order = if filter.sort == "duration" {
        ListOrder::Duration
    } else {
        ListOrder::Newest
    };
    wanted.limit = LIST_LIMIT;
    let session = store.lock();
    let list = session.list(&wanted);
    let traces: Vec<Value> = list
        .traces
        .iter()
        .map(|t| {
            json!({
                "trace_id": t.trace_id.to_string(),
                "name": t.name,
                "service": t.service,
                "services": t.services,
                "spans": t.spans,
                "errors": t.errors,
                "start_unix_nano": t.start_unix_nano,
                "duration_ns": t.duration_ns,
                "complete": t.complete,
                "partial": t.lost_spans > 0,
                "lost_spans": t.lost_spans,
                "version": t.version,
            })
        })
        .collect();
    Json(json!({
        "traces": traces,
        "matching": list.matching,
        "services": list.services,
        "status": session.stats().spans.to_string(),
    }))
}

async fn trace(State(store): State<Store>, Path(id): Path<String>) -> Response {
    let Some(id) = TraceId::from_hex(&id) else {
        return (StatusCode::BAD_REQUEST, "not a trace id (32 hex digits)").into_response();
    };
    let session = store.lock();
    let Some(view) = session.view(&id) else {
        return (
            StatusCode::NOT_FOUND,
            "no such trace (not received, or evicted)",
        )
            .into_response();
    };
    let mut out = String::new();
    render::html::trace(&view, &mut out);
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], out).into_response()
}

async fn findings(State(store): State<Store>) -> Response {
    let session = store.lock();
    let mut out = String::from("[");
    for (i, f) in session.findings().rev().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&f.to_json());
    }
    out.push(']');
    ([(header::CONTENT_TYPE, "application/json")], out).into_response()
}

async fn status(State(store): State<Store>) -> Json<Value> {
    let stats = store.lock().stats().spans;
    Json(json!({
        "status": stats.to_string(),
        "spans_received": stats.spans_received,
        "spans_rejected": stats.spans_rejected,
        "traces": stats.traces,
        "services": stats.services,
        "evicted_traces": stats.evicted_traces,
        "evicted_spans": stats.evicted_spans,
        "dropped_spans": stats.dropped_spans,
        "spans_shown": stats.spans_shown,
        "spans_open": stats.spans_open,
        "evicted_open_traces": stats.evicted_open_traces,
        "dropped_evicted": stats.dropped_evicted,
        "dropped_late": stats.dropped_late,
        "evicted_ids": stats.evicted_ids,
        "evicted_ids_forgotten": stats.evicted_ids_forgotten,
    }))
}
