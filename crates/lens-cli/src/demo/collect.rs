//! The demo's embedded span store: one [`SpanExporter`] per service, all writing into one
//! [`Collector`], each span kept with the `service.name` of the resource that produced it; and
//! each service's meter provider (the same resource), read on demand ([`Service::metrics`]).

use std::borrow::Cow;
use std::future::Future;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use opentelemetry::Key;
use opentelemetry::metrics::{Meter, MeterProvider as _};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::reader::MetricReader;
use opentelemetry_sdk::metrics::{
    InstrumentKind, ManualReader, Pipeline, SdkMeterProvider, Temporality,
};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider, SpanData, SpanExporter};

/// A finished span and the service that produced it.
#[derive(Clone, Debug)]
pub(crate) struct CollectedSpan {
    /// `service.name` of the producing tracer provider's resource.
    pub(crate) service: Arc<str>,
    /// The span as the SDK exported it.
    pub(crate) data: SpanData,
}

#[derive(Debug, Default)]
struct Shared {
    spans: Mutex<Vec<CollectedSpan>>,
    added: Condvar,
}

/// All spans of every service of the demo, in the order they ended.
#[derive(Clone, Debug, Default)]
pub(crate) struct Collector {
    shared: Arc<Shared>,
}

impl Collector {
    fn lock(&self) -> MutexGuard<'_, Vec<CollectedSpan>> {
        // A panic elsewhere while holding the lock leaves the spans usable.
        self.shared
            .spans
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// A copy of every span collected so far.
    #[cfg(test)]
    pub(crate) fn spans(&self) -> Vec<CollectedSpan> {
        self.lock().clone()
    }

    /// Waits until `done` holds for the collected spans, or `timeout` has passed; returns the
    /// spans either way and whether `done` held. Wakes on every export, never polls.
    pub(crate) fn wait_until(
        &self,
        timeout: Duration,
        mut done: impl FnMut(&[CollectedSpan]) -> bool,
    ) -> (Vec<CollectedSpan>, bool) {
        let deadline = Instant::now() + timeout;
        let mut spans = self.lock();
        loop {
            if done(&spans) {
                return (spans.clone(), true);
            }
            let now = Instant::now();
            if now >= deadline {
                return (spans.clone(), false);
            }
            spans = match self.shared.added.wait_timeout(spans, deadline - now) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }

    /// A tracer provider for `service` whose spans end up here, exported one by one as they end
    /// (a simple span processor: nothing is buffered, nothing is lost).
    pub(crate) fn provider(&self, resource: Resource, service: &str) -> SdkTracerProvider {
        SdkTracerProvider::builder()
            .with_resource(resource)
            .with_simple_exporter(ServiceExporter {
                service: Arc::from(service),
                collector: self.clone(),
            })
            .build()
    }
}

/// The exporter of one service's provider.
#[derive(Debug)]
struct ServiceExporter {
    service: Arc<str>,
    collector: Collector,
}

impl SpanExporter for ServiceExporter {
    fn export(&self, batch: Vec<SpanData>) -> impl Future<Output = OTelSdkResult> + Send {
        {
            let mut spans = self.collector.lock();
            spans.extend(batch.into_iter().map(|data| CollectedSpan {
                service: Arc::clone(&self.service),
                data,
            }));
        }
        self.collector.shared.added.notify_all();
        std::future::ready(Ok(()))
    }

    fn set_resource(&mut self, resource: &Resource) {
        if let Some(name) = resource.get(&Key::from_static_str("service.name")) {
            self.service = Arc::from(name.as_str().as_ref());
        }
    }
}

/// A [`ManualReader`] that the demo keeps a handle on after giving it to a meter provider
/// (which takes its reader by value): the histograms are read when the requests are done.
#[derive(Clone, Debug, Default)]
struct SharedReader(Arc<ManualReader>);

impl MetricReader for SharedReader {
    fn register_pipeline(&self, pipeline: std::sync::Weak<Pipeline>) {
        self.0.register_pipeline(pipeline);
    }

    fn collect(&self, rm: &mut ResourceMetrics) -> OTelSdkResult {
        self.0.collect(rm)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }

    fn temporality(&self, kind: InstrumentKind) -> Temporality {
        self.0.temporality(kind)
    }
}

/// One service of the demo: its tracer provider and its meter provider, with one resource
/// (`service.name`), and a tracer or a meter per scope.
#[derive(Clone, Debug)]
pub(crate) struct Service {
    provider: SdkTracerProvider,
    meters: SdkMeterProvider,
    reader: SharedReader,
}

impl Service {
    /// The service `name`, its spans exported into `collector`, its metrics held until read.
    pub(crate) fn new(collector: &Collector, name: &str) -> Self {
        let resource = Resource::builder_empty()
            .with_service_name(name.to_owned())
            .build();
        let reader = SharedReader::default();
        Service {
            provider: collector.provider(resource.clone(), name),
            meters: SdkMeterProvider::builder()
                .with_resource(resource)
                .with_reader(reader.clone())
                .build(),
            reader,
        }
    }

    /// A tracer of this service for the instrumentation scope `scope`.
    pub(crate) fn tracer(&self, scope: impl Into<Cow<'static, str>>) -> SdkTracer {
        self.provider.tracer(scope)
    }

    /// A meter of this service for the instrumentation scope `scope`.
    pub(crate) fn meter(&self, scope: &'static str) -> Meter {
        self.meters.meter(scope)
    }

    /// What this service's instruments have recorded so far (cumulative), with its resource.
    pub(crate) fn metrics(&self) -> Result<ResourceMetrics, String> {
        let mut metrics = ResourceMetrics::default();
        self.reader
            .collect(&mut metrics)
            .map_err(|e| e.to_string())?;
        Ok(metrics)
    }

    /// Flushes the tracer provider (a no-op for the simple processor, kept for other
    /// processors).
    pub(crate) fn flush(&self) -> OTelSdkResult {
        self.provider.force_flush()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use opentelemetry::trace::{Span as _, Tracer as _};

    #[test]
    fn spans_keep_the_service_of_their_provider() {
        let collector = Collector::default();
        let a = Service::new(&collector, "gateway");
        let b = Service::new(&collector, "planner");
        a.tracer("t").start("one").end();
        b.tracer("t").start("two").end();
        let spans = collector.spans();
        let got: Vec<(&str, &str)> = spans
            .iter()
            .map(|s| (&*s.service, s.data.name.as_ref()))
            .collect();
        assert_eq!(got, [("gateway", "one"), ("planner", "two")]);
    }

    #[test]
    fn wait_until_returns_when_the_condition_holds_and_times_out_otherwise() {
        let collector = Collector::default();
        let service = Service::new(&collector, "s");
        let tracer = service.tracer("t");
        let waiter = {
            let collector = collector.clone();
            std::thread::spawn(move || {
                collector.wait_until(Duration::from_secs(30), |spans| spans.len() == 2)
            })
        };
        tracer.start("a").end();
        tracer.start("b").end();
        let (spans, done) = waiter.join().unwrap();
        assert!(done);
        assert_eq!(spans.len(), 2);

        let (spans, done) = collector.wait_until(Duration::from_millis(1), |s| s.len() == 3);
        assert!(!done);
        assert_eq!(spans.len(), 2);
    }
}
