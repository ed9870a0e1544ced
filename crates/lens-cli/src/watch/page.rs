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
use lens_watch::model::{Span, TraceId};
use lens_watch::render;
use serde_json::{Value, json};

use super::Store;
use crate::view::{HOP_NAMES, status_line};

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

/// The root of a trace for the list: its first span without a parent in the trace.
fn root(spans: &[Span]) -> Option<&Span> {
    spans
        .iter()
        .filter(|s| {
            s.parent_span_id
                .is_none_or(|p| !spans.iter().any(|o| o.span_id == p))
        })
        .min_by_key(|s| s.start_unix_nano)
        .or_else(|| spans.first())
}

async fn list(State(store): State<Store>, Query(filter): Query<Filter>) -> Json<Value> {
    let assembler = store.lock();
    let name = filter.name.to_lowercase();
    let mut rows: Vec<(u64, u64, Value)> = Vec::new();
    let mut services: Vec<String> = Vec::new();
    for (id, entry) in assembler.traces() {
        let Some(root) = root(&entry.spans) else {
            continue;
        };
        let mut trace_services: Vec<&str> = Vec::new();
        for span in &entry.spans {
            if !trace_services.contains(&span.service()) {
                trace_services.push(span.service());
            }
        }
        for s in &trace_services {
            if !services.iter().any(|known| known == s) {
                services.push((*s).to_owned());
            }
        }
        if !filter.service.is_empty() && !trace_services.contains(&filter.service.as_str()) {
            continue;
        }
        if !name.is_empty()
            && !entry
                .spans
                .iter()
                .any(|s| s.name.to_lowercase().contains(&name))
        {
            continue;
        }
        let start = entry
            .spans
            .iter()
            .map(|s| s.start_unix_nano)
            .min()
            .unwrap_or(0);
        let end = entry
            .spans
            .iter()
            .map(|s| s.end_unix_nano)
            .max()
            .unwrap_or(start)
            .max(start);
        let errors = entry
            .spans
            .iter()
            .filter(|s| matches!(s.status, lens_watch::model::Status::Error(_)))
            .count();
        rows.push((
            start,
            end - start,
            json!({
                "trace_id": id.to_string(),
                "name": root.name,
                "service": root.service(),
                "services": trace_services,
                "spans": entry.spans.len(),
                "errors": errors,
                "start_unix_nano": start,
                "duration_ns": end - start,
                "complete": entry.complete,
                "partial": entry.is_partial(),
                "lost_spans": entry.lost_spans,
                "version": entry.spans.len() as u64 * 1000 + u64::from(entry.completions),
            }),
        ));
    }
    if filter.sort == "duration" {
        rows.sort_by_key(|r| std::cmp::Reverse(r.1));
    } else {
        rows.sort_by_key(|r| std::cmp::Reverse(r.0));
    }
    let matching = rows.len();
    rows.truncate(LIST_LIMIT);
    services.sort();
    Json(json!({
        "traces": rows.into_iter().map(|(_, _, v)| v).collect::<Vec<_>>(),
        "matching": matching,
        "services": services,
        "status": status_line(&assembler.stats()),
    }))
}

async fn trace(State(store): State<Store>, Path(id): Path<String>) -> Response {
    let Some(id) = TraceId::from_hex(&id) else {
        return (StatusCode::BAD_REQUEST, "not a trace id (32 hex digits)").into_response();
    };
    let assembler = store.lock();
    let Some(entry) = assembler.trace(&id) else {
        return (
            StatusCode::NOT_FOUND,
            "no such trace (not received, or evicted)",
        )
            .into_response();
    };
    let mut layout = render::layout(id, entry.spans.iter().collect());
    layout.lost_spans = entry.lost_spans;
    let index = render::index(&entry.spans);
    let mut out = String::new();
    render::html::section(&mut out, &layout, &index, HOP_NAMES);
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], out).into_response()
}

async fn findings(State(store): State<Store>) -> Response {
    let held = store.findings();
    let mut out = String::from("[");
    for (i, f) in held.iter().rev().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&f.to_json());
    }
    out.push(']');
    ([(header::CONTENT_TYPE, "application/json")], out).into_response()
}

async fn status(State(store): State<Store>) -> Json<Value> {
    let stats = store.lock().stats();
    Json(json!({
        "status": status_line(&stats),
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
