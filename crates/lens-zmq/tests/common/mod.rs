//! What every lens-zmq test file shares: a tracer provider with an in-memory exporter, and
//! readers of the spans it recorded.
#![allow(dead_code, clippy::unwrap_used)]

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};

/// A provider whose spans are kept in memory.
pub(crate) struct Setup {
    pub(crate) exporter: InMemorySpanExporter,
    pub(crate) provider: SdkTracerProvider,
}

impl Setup {
    pub(crate) fn new() -> Self {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        Setup { exporter, provider }
    }

    pub(crate) fn producer(&self) -> lens_zmq::Producer {
        lens_zmq::Producer::new().with_tracer(self.provider.tracer("test"))
    }

    pub(crate) fn consumer(&self) -> lens_zmq::Consumer {
        lens_zmq::Consumer::new().with_tracer(self.provider.tracer("test"))
    }

    pub(crate) fn spans(&self) -> Vec<SpanData> {
        self.exporter.get_finished_spans().unwrap()
    }

    /// The one finished span named `name`.
    pub(crate) fn span(&self, name: &str) -> SpanData {
        let mut found: Vec<SpanData> = self
            .spans()
            .into_iter()
            .filter(|s| s.name == name)
            .collect();
        assert_eq!(found.len(), 1, "one span named {name}");
        found.remove(0)
    }
}

/// The value of `key` on `span`, as text.
pub(crate) fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.as_str().into_owned())
}
