//! The checks of what each hop saw and of the spans both sides exported.

use serde_json::Value;

use super::direction::BAGGAGE;
use crate::check::Checks;
use crate::describe::{Seen, pairs};
use crate::spans::{self, Side, SpanRecord};

pub(super) fn seen_at(checks: &mut Checks, answer: &Value, path: &[&str]) -> Option<Seen> {
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
pub(super) fn check_hop(
    checks: &mut Checks,
    hop: &str,
    seen: Option<&Seen>,
    trace_id: &str,
    crossed: bool,
) {
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

pub(super) fn route(name: &'static str) -> impl Fn(&SpanRecord) -> bool {
    move |s: &SpanRecord| s.name == name
}

pub(super) fn any(_: &SpanRecord) -> bool {
    true
}

pub(super) fn check_python_first(checks: &mut Checks, answer: &Value, all: &[SpanRecord]) {
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

pub(super) fn check_rust_first(checks: &mut Checks, answer: &Value, all: &[SpanRecord]) {
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
pub(super) fn handler_span(
    checks: &mut Checks,
    hop: &str,
    seen: Option<&Seen>,
    server: Option<&SpanRecord>,
) {
    checks.eq(
        &format!("{hop} handler runs in its SERVER span"),
        &seen
            .and_then(|s| s.span.as_ref())
            .map(|s| s.span_id.as_str()),
        &server.map(|s| s.span_id.as_str()),
    );
}
