//! The metrics part of the suite: what one call with metrics recorded (see the module's docs).

use std::collections::BTreeMap;

use opentelemetry::trace::Status;

use super::call::Observed;
use super::setup::{Protocol, Side};
use super::span_attribute::attr;
use crate::metrics::{DURATION_BUCKETS_S, Point};

/// The durations of a kind of call, with their units: HTTP has one, RPC one or both of the
/// conventions' (as `OTEL_SEMCONV_STABILITY_OPT_IN` says).
fn durations(side: Side, protocol: Protocol) -> &'static [(&'static str, &'static str)] {
    match (protocol, side) {
        (Protocol::Http, Side::Server) => &[("http.server.request.duration", "s")],
        (Protocol::Http, Side::Client) => &[("http.client.request.duration", "s")],
        (Protocol::Grpc, Side::Server) => &[
            ("rpc.server.call.duration", "s"),
            ("rpc.server.duration", "ms"),
        ],
        (Protocol::Grpc, Side::Client) => &[
            ("rpc.client.call.duration", "s"),
            ("rpc.client.duration", "ms"),
        ],
    }
}

/// The attributes the conventions give a kind of call's metrics (1.42): the keys a data point
/// may have, and those it must have.
fn metric_keys(side: Side, protocol: Protocol) -> (Vec<&'static str>, Vec<&'static str>) {
    match (protocol, side) {
        (Protocol::Http, Side::Server) => (
            vec![
                "http.request.method",
                "url.scheme",
                "http.route",
                "network.protocol.version",
                "http.response.status_code",
                "error.type",
            ],
            vec!["http.request.method", "url.scheme"],
        ),
        (Protocol::Http, Side::Client) => (
            vec![
                "http.request.method",
                "server.address",
                "server.port",
                "network.protocol.version",
                "http.response.status_code",
                "error.type",
            ],
            vec!["http.request.method", "server.address", "server.port"],
        ),
        (Protocol::Grpc, side) => {
            let mut keys = vec![
                "rpc.system",
                "rpc.service",
                "rpc.method",
                "rpc.grpc.status_code",
                "rpc.system.name",
                "rpc.response.status_code",
                "error.type",
            ];
            if side == Side::Client {
                keys.extend(["server.address", "server.port"]);
            }
            (keys, vec!["rpc.method"])
        }
    }
}

/// The metrics part: what one call with [`Setup::metrics`](super::Setup::metrics) recorded (see the module's docs).
pub(super) fn check_metrics(scenario: &str, side: Side, protocol: Protocol, seen: &Observed) {
    let span = seen.one(scenario);
    let points = &seen.metrics;
    let (allowed, required) = metric_keys(side, protocol);
    let text = |key: &str| attr(span, key).map(|v| v.as_str().into_owned());
    // The attributes every data point of the call has: the span's, among the conventions' keys.
    let expected: BTreeMap<String, String> = allowed
        .iter()
        .filter_map(|key| Some(((*key).to_owned(), text(key)?)))
        .collect();
    for key in &required {
        assert!(
            expected.contains_key(*key),
            "{scenario}: the span has no {key}: {:?}",
            span.attributes
        );
    }
    let description = match &span.status {
        Status::Error { description } => Some(description.to_string()),
        _ => None,
    };
    let same_attributes = |p: &Point| {
        assert_eq!(
            p.attributes, expected,
            "{scenario}: {} has not the span's attributes among the conventions' keys",
            p.name
        );
        if let (Some(error_type), Some(description)) = (p.get("error.type"), &description)
            && !description.is_empty()
        {
            assert_ne!(
                error_type, description,
                "{scenario}: error.type is the error's message"
            );
        }
    };

    let mut recorded = 0;
    for (name, unit) in durations(side, protocol) {
        let series: Vec<&Point> = points.iter().filter(|p| p.name == *name).collect();
        if series.is_empty() {
            continue;
        }
        recorded += 1;
        assert_eq!(series.len(), 1, "{scenario}: {series:#?}");
        let p = series[0];
        assert_eq!(p.value, 1.0, "{scenario}: one {name} per call");
        assert_eq!(p.unit, *unit, "{scenario}: {name}");
        let scale = if *unit == "ms" { 1000.0 } else { 1.0 };
        let bounds: Vec<f64> = DURATION_BUCKETS_S.iter().map(|b| b * scale).collect();
        assert_eq!(p.bounds, bounds, "{scenario}: {name}");
        same_attributes(p);
    }
    assert!(recorded > 0, "{scenario}: no duration in {points:#?}");

    if protocol == Protocol::Http {
        let prefix = match side {
            Side::Server => "http.server",
            Side::Client => "http.client",
        };
        for body in ["request", "response"] {
            let name = format!("{prefix}.{body}.body.size");
            let series: Vec<&Point> = points.iter().filter(|p| p.name == name).collect();
            assert_eq!(series.len(), 1, "{scenario}: {name} in {points:#?}");
            let p = series[0];
            assert_eq!(
                (p.value, p.unit.as_str()),
                (1.0, "By"),
                "{scenario}: {name}"
            );
            same_attributes(p);
            // The suite's requests have no body.
            let bytes = match body {
                "request" => Some(0),
                _ => seen.response_bytes,
            };
            if let Some(bytes) = bytes {
                assert_eq!(p.sum, bytes as f64, "{scenario}: {name}");
            }
        }
        if side == Side::Server {
            let active: Vec<&Point> = points
                .iter()
                .filter(|p| p.name == "http.server.active_requests")
                .collect();
            assert_eq!(active.len(), 1, "{scenario}: {points:#?}");
            let p = active[0];
            assert_eq!(p.unit, "{request}", "{scenario}");
            assert_eq!(p.value, 0.0, "{scenario}: active requests not back to 0");
            let keys: Vec<&str> = p.attributes.keys().map(String::as_str).collect();
            assert_eq!(keys, ["http.request.method", "url.scheme"], "{scenario}");
        }
    }
}
