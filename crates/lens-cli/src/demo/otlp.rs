//! `--otlp URL`: the demo's spans sent to an OpenTelemetry collector with opentelemetry-otlp
//! (OTLP/HTTP with protobuf, or OTLP/gRPC), one export per service so that each keeps its
//! `service.name`. The `OTEL_EXPORTER_OTLP_*` variables configure it as in any SDK.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use opentelemetry_otlp::{OTEL_EXPORTER_OTLP_PROTOCOL_GRPC, Protocol, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SpanData, SpanExporter as _};

use super::collect::CollectedSpan;

/// The longest an export may take when no `--otlp-timeout` is given.
const GUARD: Duration = Duration::from_secs(120);

/// Where the spans go: an explicit URL (`--otlp`), or the standard environment variables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// A collector URL from the command line: its base (`http://host:4318`, to which
    /// `/v1/traces` is added) or the full traces URL (ending in `/v1/traces`).
    Url(String),
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, as
    /// opentelemetry-otlp reads them.
    Environment(String),
}

impl Target {
    /// The target from the command line, else from the environment; `None` when neither names
    /// a collector.
    pub(crate) fn resolve(flag: Option<&str>) -> Option<Target> {
        if let Some(url) = flag {
            return Some(Target::Url(url.to_owned()));
        }
        [
            opentelemetry_otlp::OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
            opentelemetry_otlp::OTEL_EXPORTER_OTLP_ENDPOINT,
        ]
        .into_iter()
        .find_map(|var| std::env::var(var).ok().filter(|v| !v.trim().is_empty()))
        .map(Target::Environment)
    }
}

/// `url` as the OTLP/HTTP traces endpoint: `/v1/traces` added unless it is there.
pub(crate) fn traces_url(url: &str) -> String {
    let trimmed = url.trim_end_matches('/');
    if trimmed.ends_with("/v1/traces") {
        trimmed.to_owned()
    } else {
        format!("{trimmed}/v1/traces")
    }
}

/// The OTLP transport: `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`, else `OTEL_EXPORTER_OTLP_PROTOCOL`
/// (`grpc` or `http/protobuf`, case-insensitive), else HTTP/protobuf. Only for `--otlp URL`, where
/// the transport must be chosen to give it the endpoint; without the flag opentelemetry-otlp
/// reads these variables itself.
fn url_protocol() -> Protocol {
    let value = [
        opentelemetry_otlp::OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
        opentelemetry_otlp::OTEL_EXPORTER_OTLP_PROTOCOL,
    ]
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
    /// Where the spans go, for messages: the URL the exporter is given, or the variable's value.
    pub(crate) fn describe(&self) -> String {
        match (self, url_protocol()) {
            (Target::Url(url), Protocol::Grpc) => url.clone(),
            (Target::Url(url), _) => traces_url(url),
            (Target::Environment(value), _) => value.clone(),
        }
    }
}

/// The exporter for `target`, configured by opentelemetry-otlp from the `OTEL_EXPORTER_OTLP_*`
/// variables (protocol, endpoint, headers, timeout), `--otlp` and `--otlp-timeout` winning over
/// them.
fn exporter(
    target: &Target,
    timeout: Option<Duration>,
) -> Result<opentelemetry_otlp::SpanExporter, String> {
    let url = match target {
        Target::Url(url) => Some(url),
        Target::Environment(_) => None,
    };
    let built = match (url, timeout) {
        // Nothing to override: the transport opentelemetry-otlp picks from the environment.
        (None, None) => opentelemetry_otlp::SpanExporter::builder().build(),
        _ if url_protocol() == Protocol::Grpc => {
            let mut builder = opentelemetry_otlp::SpanExporter::builder().with_tonic();
            if let Some(url) = url {
                builder = builder.with_endpoint(url.clone());
            }
            if let Some(timeout) = timeout {
                builder = builder.with_timeout(timeout);
            }
            builder.build()
        }
        _ => {
            let mut builder = opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary);
            if let Some(url) = url {
                builder = builder.with_endpoint(traces_url(url));
            }
            if let Some(timeout) = timeout {
                builder = builder.with_timeout(timeout);
            }
            builder.build()
        }
    };
    built.map_err(|e| e.to_string())
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
    fn traces_url_adds_the_path_once() {
        assert_eq!(
            traces_url("http://localhost:4318"),
            "http://localhost:4318/v1/traces"
        );
        assert_eq!(
            traces_url("http://localhost:4318/"),
            "http://localhost:4318/v1/traces"
        );
        assert_eq!(
            traces_url("http://c:4318/v1/traces"),
            "http://c:4318/v1/traces"
        );
    }

    #[test]
    fn a_flag_wins_over_the_environment() {
        assert_eq!(
            Target::resolve(Some("http://x:1")),
            Some(Target::Url("http://x:1".into()))
        );
    }
}
