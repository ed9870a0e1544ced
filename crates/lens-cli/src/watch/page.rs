//! The live page on the HTTP port: `GET /` (one self-contained document: inline style and
//! script, no external asset), `GET /api/traces` (the list, filtered and sorted),
//! `GET /api/traces/{id}` (one trace's waterfall, lens-watch's HTML section, each span's log
//! records under it), `GET /api/logs?service=` (the log records of no span held, by service and
//! time),
//! `GET /api/traces/{id}/matches` (the spans of it that the list's filter finds),
//! `GET /api/traces/{id}/otlp` (its spans as one OTLP/JSON line, as `--save` writes, to download),
//! `GET /api/traces/{id}/paired` (whether it is complete, and the new roots the doctor paired
//! with its lost hops: what `lens probe --watch` reads),
//! `GET /api/status`, `GET /api/findings` (the doctor's latest findings, newest first, as
//! `lens check --json` prints them), `GET /api/map` (the service map of the traces held, as
//! lens-watch's JSON with its drawing, one SVG element, as `svg`). The page polls the list and
//! the findings once a second, and the map while it is shown.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use lens_watch::diagnose::{Rule, Severity};
use lens_watch::model::TraceId;
use lens_watch::render::map::MapBounds;
use lens_watch::session::{ListFilter, ListOrder};
use lens_watch::{encode, render};
use serde_json::{Value, json};

use super::store::Store;

/// The page (HTML, CSS and script in one document).
const PAGE: &str = include_str!("page.html");

/// The most traces one list answer carries.
const LIST_LIMIT: usize = 500;

/// The most log records one `/api/logs` answer carries (the newest).
const LOGS_LIMIT: usize = 1000;

pub(super) fn router(store: Store) -> axum::Router {
    axum::Router::new()
        .route("/", get(index))
        .route("/api/traces", get(list))
        .route("/api/traces/{id}", get(trace))
        .route("/api/traces/{id}/matches", get(matches))
        .route("/api/traces/{id}/otlp", get(otlp))
        .route("/api/traces/{id}/paired", get(paired))
        .route("/api/status", get(status))
        .route("/api/findings", get(findings))
        .route("/api/logs", get(logs))
        .route("/api/map", get(map))
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

/// `?trace_id=&service=&name=&attr=&errors=1&min_ms=&sort=newest|duration`.
#[derive(Debug, serde::Deserialize)]
pub(super) struct Filter {
    #[serde(default)]
    trace_id: String,
    #[serde(default)]
    service: String,
    #[serde(default)]
    name: String,
    /// `key=value` or `key` alone.
    #[serde(default)]
    attr: String,
    /// `1` (or `true`, `on`): traces with an error span only.
    #[serde(default)]
    errors: String,
    /// At least this many milliseconds (a decimal number).
    #[serde(default)]
    min_ms: String,
    #[serde(default)]
    sort: String,
}

fn bad_request(message: &'static str) -> Response {
    (StatusCode::BAD_REQUEST, message).into_response()
}

impl Filter {
    /// lens-watch's filter, or what is wrong with which parameter (a 400 answer).
    fn to_list_filter(&self) -> Result<ListFilter, &'static str> {
        let mut wanted = ListFilter::default();
        let id = self.trace_id.trim();
        if !id.is_empty() {
            wanted.trace_id =
                Some(TraceId::from_hex(id).ok_or("trace_id: not a trace id (32 hex digits)")?);
        }
        wanted.service = self.service.clone();
        wanted.name = self.name.clone();
        wanted.attribute = self.attr.clone();
        wanted.errors = matches!(self.errors.as_str(), "1" | "true" | "on");
        let min_ms = self.min_ms.trim();
        if !min_ms.is_empty() {
            let ms: f64 = min_ms
                .parse()
                .ok()
                .filter(|ms: &f64| ms.is_finite() && *ms >= 0.0)
                .ok_or("min_ms: not a number of milliseconds")?;
            // Saturates at u64::MAX for an absurd number.
            wanted.min_duration_ns = (ms * 1e6).round() as u64;
        }
        wanted.order = if self.sort == "duration" {
            ListOrder::Duration
        } else {
            ListOrder::Newest
        };
        Ok(wanted)
    }
}

async fn list(State(store): State<Store>, Query(filter): Query<Filter>) -> Response {
    let mut wanted = match filter.to_list_filter() {
        Ok(wanted) => wanted,
        Err(wrong) => return bad_request(wrong),
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
                "findings": t.findings.map(Severity::name),
            })
        })
        .collect();
    Json(json!({
        "traces": traces,
        "matching": list.matching,
        "services": list.services,
        "status": session.stats().to_string(),
    }))
    .into_response()
}

/// The trace id of a path, or what is wrong with it (a 400 answer).
fn trace_id(id: &str) -> Result<TraceId, &'static str> {
    TraceId::from_hex(id).ok_or("not a trace id (32 hex digits)")
}

fn not_held() -> Response {
    (
        StatusCode::NOT_FOUND,
        "no such trace (not received, or evicted)",
    )
        .into_response()
}

async fn trace(State(store): State<Store>, Path(id): Path<String>) -> Response {
    let id = match trace_id(&id) {
        Ok(id) => id,
        Err(wrong) => return bad_request(wrong),
    };
    let session = store.lock();
    let Some(view) = session.view(&id) else {
        return not_held();
    };
    let mut out = String::new();
    render::html::trace(&session.with_logs(view), &mut out);
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], out).into_response()
}

/// `{"span_ids": [...]}`: the spans of the trace that meet the filter's span conditions.
async fn matches(
    State(store): State<Store>,
    Path(id): Path<String>,
    Query(filter): Query<Filter>,
) -> Response {
    let (id, wanted) = match (trace_id(&id), filter.to_list_filter()) {
        (Ok(id), Ok(wanted)) => (id, wanted),
        (Err(wrong), _) | (_, Err(wrong)) => return bad_request(wrong),
    };
    let Some(spans) = store.lock().matching_spans(&id, &wanted) else {
        return not_held();
    };
    let span_ids: Vec<String> = spans.iter().map(ToString::to_string).collect();
    Json(json!({ "span_ids": span_ids })).into_response()
}

/// The trace's spans as one OTLP/JSON line (`{"resourceSpans":[...]}` and a newline), as a file
/// `lens check` and `lens watch --load` read.
async fn otlp(State(store): State<Store>, Path(id): Path<String>) -> Response {
    let id = match trace_id(&id) {
        Ok(id) => id,
        Err(wrong) => return bad_request(wrong),
    };
    let mut line = {
        let session = store.lock();
        let Some(trace) = session.assembler().trace(&id) else {
            return not_held();
        };
        encode::to_json_line(&trace.spans)
    };
    line.push('\n');
    (
        [
            (header::CONTENT_TYPE, "application/json".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"lens-trace-{id}.json\""),
            ),
        ],
        line,
    )
        .into_response()
}

/// What `lens probe --watch` reads of a trace: whether it is held and complete, its span count,
/// and the traces the doctor paired with it as the new roots of its lost hops
/// (`lost-context` findings whose client side is in it), each with its own state and the
/// finding.
async fn paired(State(store): State<Store>, Path(id): Path<String>) -> Response {
    let id = match trace_id(&id) {
        Ok(id) => id,
        Err(wrong) => return bad_request(wrong),
    };
    let session = store.lock();
    let state = |id: &TraceId| {
        let trace = session.assembler().trace(id);
        json!({
            "trace_id": id.to_string(),
            "held": trace.is_some(),
            "complete": trace.is_some_and(|t| t.complete),
            "spans": trace.map_or(0, |t| t.spans.len()),
        })
    };
    let mut answer = state(&id);
    let paired: Vec<Value> = session
        .findings()
        .filter(|f| f.rule == Rule::LostContext && f.trace_ids.first() == Some(&id))
        .filter_map(|f| {
            let new_root = f.trace_ids.get(1)?;
            let mut entry = state(new_root);
            entry["finding"] = serde_json::from_str(&f.to_json()).unwrap_or(Value::Null);
            Some(entry)
        })
        .collect();
    answer["paired"] = Value::Array(paired);
    Json(answer).into_response()
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

/// The service map: lens-watch's JSON (services, hops, the findings on them) and `svg`, its
/// drawing.
async fn map(State(store): State<Store>) -> Json<Value> {
    let map = store.lock().service_map(MapBounds::default());
    let mut svg = String::new();
    map.svg(&mut svg);
    let mut json = map.to_json();
    json["svg"] = Value::String(svg);
    Json(json)
}

/// `?service=`.
#[derive(Debug, serde::Deserialize)]
pub(super) struct LogsQuery {
    #[serde(default)]
    service: String,
}

/// `{"logs": [...], "matching": N, "services": [...], "html": "..."}`: the log records of no
/// span held (no trace or span id, or ids of no span of a trace held), by service and time, up
/// to the newest [`LOGS_LIMIT`]; `html` is them as the page shows them.
async fn logs(State(store): State<Store>, Query(query): Query<LogsQuery>) -> Json<Value> {
    let session = store.lock();
    let list = session.unmatched_logs(&query.service, LOGS_LIMIT);
    let mut html = String::new();
    let mut by_service: Vec<&lens_watch::model::LogRecord> = Vec::new();
    for (i, log) in list.logs.iter().enumerate() {
        by_service.push(log);
        let last = list
            .logs
            .get(i + 1)
            .is_none_or(|next| next.service() != log.service());
        if last {
            html.push_str("<h3>");
            render::html::escape(&mut html, log.service());
            html.push_str("</h3>\n");
            render::html::logs(&by_service, None, &mut html);
            by_service.clear();
        }
    }
    Json(json!({
        "logs": list.logs.iter().map(|l| render::json::log(l)).collect::<Vec<_>>(),
        "matching": list.matching,
        "services": list.services,
        "html": html,
    }))
}

async fn status(State(store): State<Store>) -> Json<Value> {
    let all = store.lock().stats();
    let (stats, logs) = (&all.spans, all.logs);
    Json(json!({
        "status": all.to_string(),
        "logs_received": logs.received,
        "logs_rejected": logs.rejected,
        "logs_held": logs.held,
        "logs_dropped": logs.dropped,
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
