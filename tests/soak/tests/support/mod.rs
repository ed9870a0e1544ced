//! Shared test helpers: a span recorder whose ended spans can be awaited, and servers on
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
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};

pub use lens_testkit::recorder::Recorder;

/// A tracer provider recording into a [`Recorder`].
pub fn provider() -> (SdkTracerProvider, SdkTracer, Recorder) {
    let recorder = Recorder::default();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(recorder.clone())
        .build();
    let tracer = provider.tracer("lens-soak-tests");
    (provider, tracer, recorder)
}

/// Serves `router` on 127.0.0.1, port 0.
pub async fn serve(router: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    addr
}
