//! Shared test helpers: an SDK tracer provider whose ended spans can be awaited, and servers on
//! 127.0.0.1 port 0.
#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::net::SocketAddr;

use axum::Router;
use opentelemetry::trace::{SpanKind, TracerProvider as _};
use opentelemetry_sdk::trace::{Sampler, SdkTracer, SdkTracerProvider, SpanData};

pub use lens_testkit::recorder::Recorder;

/// A tracer provider (parent-based, always-on sampler) recording into a [`Recorder`].
pub fn provider() -> (SdkTracerProvider, SdkTracer, Recorder) {
    provider_with(Sampler::ParentBased(Box::new(Sampler::AlwaysOn)))
}

pub fn provider_with(sampler: Sampler) -> (SdkTracerProvider, SdkTracer, Recorder) {
    let recorder = Recorder::default();
    let provider = SdkTracerProvider::builder()
        .with_sampler(sampler)
        .with_span_processor(recorder.clone())
        .build();
    let tracer = provider.tracer("lens-axum-tests");
    (provider, tracer, recorder)
}

/// Serves `router` on 127.0.0.1, port 0, with the peer address available.
pub async fn serve(router: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(
            listener,
            router.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap();
    });
    addr
}

/// The one span with this name and kind.
pub fn span<'a>(spans: &'a [SpanData], name: &str, kind: SpanKind) -> &'a SpanData {
    let found: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.name == name && s.span_kind == kind)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "spans named {name:?} ({kind:?}) in {spans:#?}"
    );
    found[0]
}

/// The value of an attribute, as a string.
pub fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.to_string())
}

pub const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
pub const PARENT_ID: &str = "00f067aa0ba902b7";
pub const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
