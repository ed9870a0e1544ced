//! What every lens-nats test needs: a real nats-server, a client, and spans recorded.
#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use lens_testkit::nats::NatsServer;
use lens_testkit::recorder::Recorder;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider, SpanData};

pub struct Setup {
    pub server: NatsServer,
    pub client: async_nats::Client,
    pub recorder: Recorder,
    pub provider: SdkTracerProvider,
}

impl Setup {
    /// A server and a connected client; `None` when the test skips (no nats-server).
    pub async fn start() -> Option<Setup> {
        let server = NatsServer::start()?;
        let client = async_nats::connect(server.url()).await.unwrap();
        let recorder = Recorder::default();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(recorder.clone())
            .build();
        Some(Setup {
            server,
            client,
            recorder,
            provider,
        })
    }

    pub fn tracer(&self) -> SdkTracer {
        self.provider.tracer("test")
    }

    pub fn producer(&self) -> lens_nats::TracedClient {
        lens_nats::Producer::new()
            .with_tracer(self.tracer())
            .client(self.client.clone())
    }

    pub fn consumer(&self) -> lens_nats::Consumer {
        lens_nats::Consumer::new().with_tracer(self.tracer())
    }
}

pub fn attr(span: &SpanData, key: &str) -> Option<Value> {
    span.attributes
        .iter()
        .find(|kv: &&KeyValue| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
}

pub fn named<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    let found: Vec<&SpanData> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(
        found.len(),
        1,
        "one span {name}: {:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    found[0]
}
