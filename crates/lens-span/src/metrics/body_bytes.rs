//! [`BodyBytes`]: counting a body's bytes for the body-size metrics.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use opentelemetry::KeyValue;
use opentelemetry::metrics::Histogram;

use super::kinds::MAX_ATTRIBUTES;

/// Counts the bytes of a body for the body-size metrics ([`CountedBody`](crate::CountedBody)
/// calls [`BodyBytes::add`] for every data frame). Made by the span lifecycle when body sizes
/// are on: [`LiveSpan::count_request_body`](crate::LiveSpan::count_request_body) (read when
/// the span ends), [`LiveSpan::count_response_body`](crate::LiveSpan::count_response_body)
/// (recorded when the body ends or is dropped).
pub struct BodyBytes(pub(super) Sink);

/// Inline, both: a `BodyBytes` lives in the box a framework makes for the body it counts
/// (axum's `Body::new`, reqwest's `Body::wrap`), so the record's attributes cost no allocation
/// of their own; a request body's box is the larger for it.
#[allow(clippy::large_enum_variant)]
pub(super) enum Sink {
    /// A request body: its span reads the count when it ends.
    Shared(Arc<AtomicU64>),
    /// A response body that outlives its span: recorded once, at its end or drop.
    Record {
        histogram: Histogram<u64>,
        attributes: [KeyValue; MAX_ATTRIBUTES],
        len: usize,
        bytes: u64,
        done: bool,
    },
}

impl std::fmt::Debug for BodyBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let bytes = match &self.0 {
            Sink::Shared(counter) => counter.load(Ordering::Relaxed),
            Sink::Record { bytes, .. } => *bytes,
        };
        f.debug_struct("BodyBytes").field("bytes", &bytes).finish()
    }
}

impl BodyBytes {
    /// `n` more bytes of the body were read.
    #[inline]
    pub fn add(&mut self, n: usize) {
        let n = n as u64;
        match &mut self.0 {
            // One writer (the body) and one reader (its span, when it ends): relaxed is enough.
            Sink::Shared(counter) => {
                counter.fetch_add(n, Ordering::Relaxed);
            }
            Sink::Record { bytes, .. } => *bytes = bytes.saturating_add(n),
        }
    }

    /// The body ended (its last frame, an error): a response body's size is recorded now,
    /// once. Dropping the body does the same.
    pub fn finish(&mut self) {
        if let Sink::Record {
            histogram,
            attributes,
            len,
            bytes,
            done,
        } = &mut self.0
            && !*done
        {
            *done = true;
            histogram.record(*bytes, &attributes[..*len]);
        }
    }
}

impl Drop for BodyBytes {
    fn drop(&mut self) {
        self.finish();
    }
}
