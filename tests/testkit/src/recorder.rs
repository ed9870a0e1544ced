//! A span processor for tests that keeps every ended span and lets a test await them.
//!
//! ```
//! use lens_testkit::recorder::Recorder;
//! use opentelemetry::trace::{Span as _, Tracer as _, TracerProvider as _};
//! use opentelemetry_sdk::trace::SdkTracerProvider;
//!
//! let recorder = Recorder::default();
//! let provider = SdkTracerProvider::builder().with_span_processor(recorder.clone()).build();
//! provider.tracer("doc").start("work").end();
//! assert_eq!(recorder.ended()[0].name, "work");
//! ```
#![allow(clippy::unwrap_used, clippy::panic)] // test support: a poisoned lock or a timeout fails the test

use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanProcessor};
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
    /// Waits until at least `n` spans have ended (fails the test after 20 s) and returns all.
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

    /// The spans ended so far.
    pub fn ended(&self) -> Vec<SpanData> {
        self.spans.lock().unwrap().clone()
    }
}
