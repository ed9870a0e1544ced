//! `--otlp URL`: the demo's spans and metrics sent to an OpenTelemetry collector with
//! opentelemetry-otlp (OTLP/HTTP with protobuf, or OTLP/gRPC), one export per service so that
//! each keeps its `service.name`. The `OTEL_EXPORTER_OTLP_*` variables configure it as in any
//! SDK, per signal (`..._TRACES_...`, `..._METRICS_...`) as there.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use opentelemetry_otlp::{OTEL_EXPORTER_OTLP_PROTOCOL_GRPC, Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter as _;
use opentelemetry_sdk::trace::{SpanData, SpanExporter as _};

use super::collect::CollectedSpan;

/// The longest an export may take when no `--otlp-timeout` is given.
const GUARD: Duration = Duration::from_secs(120);

/// What is sent: each has its path on an OTLP/HTTP collector and its own variables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Signal {
    Traces,
    Metrics,
}

impl Signal {
    /// The OTLP/HTTP path, `/v1/traces` or `/v1/metrics`.
    fn path(self) -> &'static str {
        match self {
            Signal::Traces => "/v1/traces",
            Signal::Metrics => "/v1/metrics",
        }
    }

    /// The endpoint variables opentelemetry-otlp reads, the signal's own first.
    fn endpoint_vars(self) -> [&'static str; 2] {
        match self {
            Signal::Traces => [
                opentelemetry_otlp::OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
                opentelemetry_otlp::OTEL_EXPORTER_OTLP_ENDPOINT,
            ],
            Signal::Metrics => [
                opentelemetry_otlp::OTEL_EXPORTER_OTLP_METRICS_ENDPOINT,
                opentelemetry_otlp::OTEL_EXPORTER_OTLP_ENDPOINT,
            ],
        }
    }

    /// The protocol variables, the signal's own first.
    fn protocol_vars(self) -> [&'static str; 2] {
        match self {
            Signal::Traces => [
                opentelemetry_otlp::OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
                opentelemetry_otlp::OTEL_EXPORTER_OTLP_PROTOCOL,
            ],
            Signal::Metrics => [
                opentelemetry_otlp::OTEL_EXPORTER_OTLP_METRICS_PROTOCOL,
                opentelemetry_otlp::OTEL_EXPORTER_OTLP_PROTOCOL,
            ],
        }
    }
}

/// Where a signal goes: an explicit URL (`--otlp`), or the standard environment variables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// A collector URL from the command line: its base (`http://host:4318`, to which the
    /// signal's path is added) or the full URL of a signal (ending in `/v1/traces`).
    Url(Signal, String),
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` or the signal's own endpoint variable, as
    /// opentelemetry-otlp reads them.
    Environment(Signal, String),
}

impl Target {
    /// The target of `signal` from the command line, else from the environment; `None` when
    /// neither names a collector (for metrics: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` alone sends
    /// only the spans).
    pub(crate) fn resolve(flag: Option<&str>, signal: Signal) -> Option<Target> {
        if let Some(url) = flag {
            return Some(Target::Url(signal, url.to_owned()));
        }
        signal
            .endpoint_vars()
            .into_iter()
            .find_map(|var| std::env::var(var).ok().filter(|v| !v.trim().is_empty()))
            .map(|value| Target::Environment(signal, value))
    }

    fn signal(&self) -> Signal {
        match self {
            Target::Url(signal, _) | Target::Environment(signal, _) => *signal,
        }
    }
}

/// `url` as the OTLP/HTTP endpoint of `signal`: its path put in place of another signal's, or
/// added.
pub(crate) fn signal_url(url: &str, signal: Signal) -> String {
    let trimmed = url.trim_end_matches('/');
    let base = [Signal::Traces, Signal::Metrics]
        .into_iter()
        .find_map(|s| trimmed.strip_suffix(s.path()))
        .unwrap_or(trimmed);
    format!("{base}{}", signal.path())
}

/// The OTLP transport of `signal`: its own protocol variable, else `OTEL_EXPORTER_OTLP_PROTOCOL`
/// (`grpc` or `http/protobuf`, case-insensitive), else HTTP/protobuf. Only for `--otlp URL`,
/// where the transport must be chosen to give it the endpoint; without the flag
/// opentelemetry-otlp reads these variables itself.
fn url_protocol(signal: Signal) -> Protocol {
    let value = signal
        .protocol_vars()
        .into_iter()
        .find_map(|var| std::env::var(var).ok().filter(|v| !v.trim().is_empty()));
    match value {
        Some(v)
            if v.trim()
                .eq_ignore_ascii_case(OTEL_EXPORTER_OTLP_PROTOCOL_GRPC) =>
        {
            Protocol::Grpc
        }
        _ => Protocol::HttpBinary,
    }
}

impl Target {
    /// Where the signal goes, for messages: the URL the exporter is given, or the variable's
    /// value.
    pub(crate) fn describe(&self) -> String {
        match self {
            Target::Url(signal, url) if url_protocol(*signal) == Protocol::Grpc => url.clone(),
            Target::Url(signal, url) => signal_url(url, *signal),
            Target::Environment(_, value) => value.clone(),
        }
    }
}

/// How an exporter is built: the transport and endpoint from `target`, `--otlp-timeout`.
enum Transport {
    /// Nothing to override: the transport opentelemetry-otlp picks from the environment.
    Environment,
    Grpc(Option<String>),
    Http(Option<String>),
}

impl Transport {
    fn of(target: &Target, timeout: Option<Duration>) -> Transport {
        let url = match target {
            Target::Url(_, url) => Some(url),
            Target::Environment(..) => None,
        };
        let signal = target.signal();
        match (url, timeout) {
            (None, None) => Transport::Environment,
            _ if url_protocol(signal) == Protocol::Grpc => Transport::Grpc(url.cloned()),
            _ => Transport::Http(url.map(|u| signal_url(u, signal))),
        }
    }
}

/// `builder` with `endpoint` and `timeout` where given.
fn configure<B: WithExportConfig>(
    mut builder: B,
    endpoint: Option<String>,
    timeout: Option<Duration>,
) -> B {
    if let Some(endpoint) = endpoint {
        builder = builder.with_endpoint(endpoint);
    }
    if let Some(timeout) = timeout {
        builder = builder.with_timeout(timeout);
    }
    builder
}

/// The span exporter for `target`, configured by opentelemetry-otlp from the
/// `OTEL_EXPORTER_OTLP_*` variables (protocol, endpoint, headers, timeout), `--otlp` and
/// `--otlp-timeout` winning over them.
fn exporter(
    target: &Target,
    timeout: Option<Duration>,
) -> Result<opentelemetry_otlp::SpanExporter, String> {
    use opentelemetry_otlp::SpanExporter as E;
    let built = match Transport::of(target, timeout) {
        Transport::Environment => E::builder().build(),
        Transport::Grpc(url) => configure(E::builder().with_tonic(), url, timeout).build(),
        Transport::Http(url) => configure(
            E::builder().with_http().with_protocol(Protocol::HttpBinary),
            url,
            timeout,
        )
        .build(),
    };
    built.map_err(|e| e.to_string())
}

/// The metric exporter for `target`, as [`exporter`] builds the span exporter.
fn metric_exporter(
    target: &Target,
    timeout: Option<Duration>,
) -> Result<opentelemetry_otlp::MetricExporter, String> {
    use opentelemetry_otlp::MetricExporter as E;
    let built = match Transport::of(target, timeout) {
        Transport::Environment => E::builder().build(),
        Transport::Grpc(url) => configure(E::builder().with_tonic(), url, timeout).build(),
        Transport::Http(url) => configure(
            E::builder().with_http().with_protocol(Protocol::HttpBinary),
            url,
            timeout,
        )
        .build(),
    };
    built.map_err(|e| e.to_string())
}

/// Sends each service's `metrics` (its resource with them; none for a service that recorded
/// none) to `target`, bounded as [`export`] is; returns how many services' metrics the
/// collector accepted, or why it did not.
pub(crate) async fn export_metrics(
    target: &Target,
    metrics: &[ResourceMetrics],
    timeout: Option<Duration>,
) -> Result<usize, String> {
    let exporter = metric_exporter(target, timeout)?;
    let guard = timeout.unwrap_or(GUARD);
    let mut sent = 0;
    // Services without an instrument (the remote call's worker, the ranks) have nothing to send.
    for service in metrics
        .iter()
        .filter(|m| m.scope_metrics().next().is_some())
    {
        match tokio::time::timeout(guard, exporter.export(service)).await {
            Ok(Ok(())) => sent += 1,
            Ok(Err(e)) => return Err(format!("{e} ({sent} services' metrics sent before)")),
            Err(_) => {
                return Err(format!(
                    "no answer within {} ({sent} services' metrics sent before)",
                    lens_watch::render::format_duration(guard)
                ));
            }
        }
    }
    let _ = exporter.shutdown_with_timeout(guard);
    Ok(sent)
}

/// Sends `spans` to `target`, grouped by service; every export is bounded by `timeout` (else by
/// opentelemetry-otlp's own timeout). Returns how many spans the collector accepted, or why it
/// did not accept them.
pub(crate) async fn export(
    target: &Target,
    spans: &[CollectedSpan],
    timeout: Option<Duration>,
) -> Result<usize, String> {
    let mut exporter = exporter(target, timeout)?;
    // The exporter's timeout bounds each call and its retries; this bound only guards against
    // a transport that ignores it.
    let guard = timeout.unwrap_or(GUARD);

    let mut order: Vec<Arc<str>> = Vec::new();
    let mut by_service: HashMap<Arc<str>, Vec<SpanData>> = HashMap::new();
    for span in spans {
        by_service
            .entry(Arc::clone(&span.service))
            .or_insert_with(|| {
                order.push(Arc::clone(&span.service));
                Vec::new()
            })
            .push(span.data.clone());
    }
    let mut sent = 0;
    for service in order {
        let Some(batch) = by_service.remove(&service) else {
            continue;
        };
        let count = batch.len();
        exporter.set_resource(
            &Resource::builder_empty()
                .with_service_name(service.to_string())
                .build(),
        );
        // The exporter's own timeout bounds the HTTP call; this one bounds everything else
        // (retries included), so an unreachable collector can never hang the demo.
        match tokio::time::timeout(guard, exporter.export(batch)).await {
            Ok(Ok(())) => sent += count,
            Ok(Err(e)) => return Err(format!("{e} ({sent} spans sent before)")),
            Err(_) => {
                return Err(format!(
                    "no answer within {} ({sent} spans sent before)",
                    lens_watch::render::format_duration(guard)
                ));
            }
        }
    }
    let _ = exporter.shutdown_with_timeout(guard);
    Ok(sent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_url_adds_the_path_once_or_swaps_another_signals() {
        let traces = |u| signal_url(u, Signal::Traces);
        let metrics = |u| signal_url(u, Signal::Metrics);
        assert_eq!(
            traces("http://localhost:4318"),
            "http://localhost:4318/v1/traces"
        );
        assert_eq!(
            traces("http://localhost:4318/"),
            "http://localhost:4318/v1/traces"
        );
        assert_eq!(traces("http://c:4318/v1/traces"), "http://c:4318/v1/traces");
        assert_eq!(metrics("http://c:4318"), "http://c:4318/v1/metrics");
        assert_eq!(
            metrics("http://c:4318/v1/traces"),
            "http://c:4318/v1/metrics"
        );
        assert_eq!(
            metrics("http://c:4318/otlp/v1/metrics/"),
            "http://c:4318/otlp/v1/metrics"
        );
    }

    #[test]
    fn a_flag_wins_over_the_environment() {
        assert_eq!(
            Target::resolve(Some("http://x:1"), Signal::Metrics),
            Some(Target::Url(Signal::Metrics, "http://x:1".into()))
        );
    }
}
