//! The demo's embedded span store: one [`SpanExporter`] per service, all writing into one
//! [`Collector`], each span kept with the `service.name` of the resource that produced it.

use std::borrow::Cow;
use std::future::Future;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use opentelemetry::Key;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
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
    pub(crate) fn provider(&self, service: &str) -> SdkTracerProvider {
        SdkTracerProvider::builder()
            .with_resource(
                Resource::builder_empty()
                    .with_service_name(service.to_owned())
                    .build(),
            )
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

/// One service of the demo: its provider (kept for flushing) and a tracer per scope.
#[derive(Clone, Debug)]
pub(crate) struct Service {
    provider: SdkTracerProvider,
}

impl Service {
    pub(crate) fn new(collector: &Collector, name: &str) -> Self {
        Service {
            provider: collector.provider(name),
        }
    }

    /// A tracer of this service for the instrumentation scope `scope`.
    pub(crate) fn tracer(&self, scope: impl Into<Cow<'static, str>>) -> SdkTracer {
        self.provider.tracer(scope)
    }

    /// Flushes the provider (a no-op for the simple processor, kept for other processors).
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
