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
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use opentelemetry::Context;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider, Span, SpanData, SpanProcessor};
use tokio::sync::Notify;

/// Collects ended spans and wakes waiters.
#[derive(Clone, Debug, Default)]
pub struct Recorder {
    spans: Arc<Mutex<Vec<SpanData>>>,
    notify: Arc<Notify>,
}

impl SpanProcessor for Recorder {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        self.spans.lock().unwrap().push(span);
        self.notify.notify_waiters();
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }
}

impl Recorder {
    /// Waits until at least `n` spans have ended (fails after 20 s) and returns all.
    pub async fn wait_for(&self, n: usize) -> Vec<SpanData> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let notified = self.notify.notified();
            {
                let spans = self.spans.lock().unwrap();
                if spans.len() >= n {
                    return spans.clone();
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                panic!(
                    "expected {n} ended spans, got {}",
                    self.spans.lock().unwrap().len()
                );
            }
        }
    }
}

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
