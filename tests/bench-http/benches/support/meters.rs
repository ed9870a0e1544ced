//! The meter provider of every metrics-on variant (loopback and socket-free drivers): what a
//! user runs, an `SdkMeterProvider` with a `PeriodicReader`, whose interval (an hour) is longer
//! than any run, so that what is measured is recording alone, not exports; the exporter discards.

use std::time::Duration;

use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};

/// A metric exporter that drops every export.
#[derive(Debug)]
struct DiscardMetrics;

impl PushMetricExporter for DiscardMetrics {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        std::hint::black_box(metrics);
        Ok(())
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }

    fn temporality(&self) -> Temporality {
        Temporality::Cumulative
    }
}

/// A provider recording every instrument into its series, exported (and discarded) once an hour.
pub(crate) fn meter_provider() -> SdkMeterProvider {
    SdkMeterProvider::builder()
        .with_reader(
            PeriodicReader::builder(DiscardMetrics)
                .with_interval(Duration::from_secs(3600))
                .build(),
        )
        .build()
}
