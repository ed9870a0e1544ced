//! The Rust side's spans: written to the run's folder, and sent over OTLP where asked.

use std::path::Path;

use crate::error::{Error, Result};
use crate::spans::{self, SpanRecord};

/// Where both sides also send their spans over OTLP (the `watch` scenario: a running
/// `lens watch`), each with its SDK's own OTLP exporter.
#[derive(Clone, Debug)]
pub(crate) struct OtlpTargets {
    /// The Python exporter: `grpc` or `http/protobuf`, and its endpoint.
    pub(crate) python: (&'static str, String),
    /// The Rust exporter (opentelemetry-otlp): gRPC or HTTP/protobuf, and its endpoint.
    pub(crate) rust: (opentelemetry_otlp::Protocol, String),
}

/// The Rust service's name in OTLP exports.
pub(crate) const RUST_SERVICE: &str = "lens-interop-rust";

/// Sends `spans` to `target` with opentelemetry-otlp, as service [`RUST_SERVICE`].
pub(crate) async fn export_rust(
    spans: Vec<opentelemetry_sdk::trace::SpanData>,
    target: &(opentelemetry_otlp::Protocol, String),
) -> Result<()> {
    let resource = opentelemetry_sdk::Resource::builder_empty()
        .with_service_name(RUST_SERVICE)
        .build();
    export_rust_as(spans, target, &resource).await
}

/// Sends `spans` to `target` with opentelemetry-otlp, under `resource`.
pub(crate) async fn export_rust_as(
    spans: Vec<opentelemetry_sdk::trace::SpanData>,
    target: &(opentelemetry_otlp::Protocol, String),
    resource: &opentelemetry_sdk::Resource,
) -> Result<()> {
    use opentelemetry_otlp::WithExportConfig as _;
    use opentelemetry_sdk::trace::SpanExporter as _;
    let failed = |e: &dyn std::fmt::Display| Error::Http {
        what: format!("OTLP export to {}", target.1),
        message: e.to_string(),
    };
    let builder = opentelemetry_otlp::SpanExporter::builder();
    let built = match target.0 {
        opentelemetry_otlp::Protocol::Grpc => {
            builder.with_tonic().with_endpoint(target.1.clone()).build()
        }
        protocol => builder
            .with_http()
            .with_protocol(protocol)
            .with_endpoint(target.1.clone())
            .build(),
    };
    let mut exporter = built.map_err(|e| failed(&e))?;
    exporter.set_resource(resource);
    exporter.export(spans).await.map_err(|e| failed(&e))?;
    let _ignored = exporter.shutdown();
    Ok(())
}

/// The Rust side's finished spans (written to `<out>/rust-spans.json`); with `otlp`, also
/// exported there.
pub(crate) async fn finish_rust(
    provider: &opentelemetry_sdk::trace::SdkTracerProvider,
    exporter: &opentelemetry_sdk::trace::InMemorySpanExporter,
    otlp: Option<&OtlpTargets>,
    out: &Path,
) -> Result<Vec<SpanRecord>> {
    let _ignored = provider.force_flush();
    if let Some(otlp) = otlp {
        let finished = exporter.get_finished_spans().map_err(|e| Error::Http {
            what: "in-memory exporter".into(),
            message: e.to_string(),
        })?;
        export_rust(finished, &otlp.rust).await?;
    }
    spans::take_rust(exporter, &out.join("rust-spans.json"))
}
