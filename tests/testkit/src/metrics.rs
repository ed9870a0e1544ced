//! The metrics part of the adapters' suite: a meter provider that exports into
//! opentelemetry_sdk's in-memory metric exporter, and what it collected, one [`Point`] per
//! series.

use std::collections::BTreeMap;

use opentelemetry::metrics::{Meter, MeterProvider};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};

/// A meter provider whose metrics are read back on demand ([`Metrics::collect`]).
#[derive(Debug)]
pub struct Metrics {
    provider: SdkMeterProvider,
    exporter: InMemoryMetricExporter,
}

/// One series of one instrument, as last exported (cumulative).
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// The instrument's name.
    pub name: String,
    /// The instrument's unit.
    pub unit: String,
    /// The instrumentation scope: name, version, schema URL.
    pub scope: (String, Option<String>, Option<String>),
    /// The series' attributes, as text.
    pub attributes: BTreeMap<String, String>,
    /// Histograms: the number of values; sums: the value.
    pub value: f64,
    /// Histograms: the sum of the values; sums: the value.
    pub sum: f64,
    /// Histograms: the bucket boundaries.
    pub bounds: Vec<f64>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A new provider and exporter.
    pub fn new() -> Self {
        let exporter = InMemoryMetricExporter::default();
        let provider = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(exporter.clone()).build())
            .build();
        Metrics { provider, exporter }
    }

    /// A meter of scope `name` (the test's own).
    pub fn meter(&self, name: &'static str) -> Meter {
        self.provider.meter(name)
    }

    /// The provider (to install globally, or to build a meter with a scope).
    pub fn provider(&self) -> &SdkMeterProvider {
        &self.provider
    }

    /// Every series exported now.
    pub fn collect(&self) -> Vec<Point> {
        self.exporter.reset();
        self.provider.force_flush().unwrap();
        let exported = self.exporter.get_finished_metrics().unwrap();
        let mut points = Vec::new();
        let Some(last) = exported.last() else {
            return points;
        };
        for scope_metrics in last.scope_metrics() {
            let s = scope_metrics.scope();
            let scope = (
                s.name().to_owned(),
                s.version().map(str::to_owned),
                s.schema_url().map(str::to_owned),
            );
            for metric in scope_metrics.metrics() {
                let point = |attributes: &mut dyn Iterator<Item = &opentelemetry::KeyValue>,
                             value: f64,
                             sum: f64,
                             bounds: Vec<f64>| Point {
                    name: metric.name().to_owned(),
                    unit: metric.unit().to_owned(),
                    scope: scope.clone(),
                    attributes: attributes
                        .map(|kv| (kv.key.to_string(), kv.value.to_string()))
                        .collect(),
                    value,
                    sum,
                    bounds,
                };
                match metric.data() {
                    AggregatedMetrics::F64(MetricData::Histogram(h)) => {
                        for p in h.data_points() {
                            points.push(point(
                                &mut p.attributes(),
                                p.count() as f64,
                                p.sum(),
                                p.bounds().collect(),
                            ));
                        }
                    }
                    AggregatedMetrics::U64(MetricData::Histogram(h)) => {
                        for p in h.data_points() {
                            points.push(point(
                                &mut p.attributes(),
                                p.count() as f64,
                                p.sum() as f64,
                                p.bounds().collect(),
                            ));
                        }
                    }
                    AggregatedMetrics::I64(MetricData::Sum(sum)) => {
                        for p in sum.data_points() {
                            let value = p.value() as f64;
                            points.push(point(&mut p.attributes(), value, value, Vec::new()));
                        }
                    }
                    AggregatedMetrics::U64(MetricData::Sum(sum)) => {
                        for p in sum.data_points() {
                            let value = p.value() as f64;
                            points.push(point(&mut p.attributes(), value, value, Vec::new()));
                        }
                    }
                    other => panic!("unexpected data for {}: {other:?}", metric.name()),
                }
            }
        }
        points
    }

    /// The series of instrument `name`.
    pub fn series(&self, name: &str) -> Vec<Point> {
        self.collect()
            .into_iter()
            .filter(|p| p.name == name)
            .collect()
    }
}

impl Point {
    /// The attribute `key`, as text.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }
}

/// The semantic conventions' advice for durations in seconds.
pub const DURATION_BUCKETS_S: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];
