//! The OTLP/HTTP exporter of an arm, and the count of its results.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

use crate::error::SoakError;

/// Wraps an exporter and counts its results.
#[derive(Debug)]
pub(super) struct Counted<E> {
    pub(super) inner: E,
    pub(super) ok: Arc<AtomicU64>,
    pub(super) failed: Arc<AtomicU64>,
}

impl<E: SpanExporter> SpanExporter for Counted<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let result = self.inner.export(batch).await;
        match &result {
            Ok(()) => self.ok.fetch_add(1, Ordering::Relaxed),
            Err(_) => self.failed.fetch_add(1, Ordering::Relaxed),
        };
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }
}

/// An OTLP/HTTP (protobuf) exporter to `addr`, on reqwest's blocking client (built on a plain
/// thread: it must not be built inside the async runtime).
pub(super) fn otlp_exporter(
    addr: SocketAddr,
    timeout: Duration,
) -> Result<opentelemetry_otlp::SpanExporter, SoakError> {
    let client = std::thread::spawn(move || {
        reqwest::blocking::Client::builder()
            .timeout(timeout)
            .build()
    })
    .join()
    .map_err(|_| SoakError::Exporter("building the HTTP client panicked".into()))?
    .map_err(|e| SoakError::Exporter(e.to_string()))?;
    opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(client)
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(format!("http://{addr}/v1/traces"))
        .with_timeout(timeout)
        .build()
        .map_err(|e| SoakError::Exporter(e.to_string()))
}
