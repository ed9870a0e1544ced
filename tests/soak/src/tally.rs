//! [`SpanTally`]: a span exporter that checks and counts what the batch processor exports,
//! per request, in one byte per request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use opentelemetry::trace::{SpanId, SpanKind, TraceId};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

use crate::chain::{BACK_SPAN, FRONT_SPAN, RequestId};

/// The spans one request of the chain makes: SERVER at the front, CLIENT, SERVER at the back.
pub const SPANS_PER_REQUEST: u64 = 3;

const FRONT: u8 = 1;
const CLIENT: u8 = 2;
const BACK: u8 = 4;
const ALL: u8 = FRONT | CLIENT | BACK;

/// Counts exported spans per request of one run (identified by the run's nonce in the trace id).
///
/// A span is *foreign* when its trace id is not one of this run's requests (a context mix-up
/// or a new trace where the request's should have continued), *misparented* when the front
/// SERVER span's parent is not the span id the client sent, and *duplicate* when a request's
/// span of that kind was already exported.
#[derive(Clone, Debug)]
pub struct SpanTally {
    nonce: u64,
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Kinds seen, one byte per request index (bits FRONT, CLIENT, BACK).
    seen: Mutex<Vec<u8>>,
    exported: AtomicU64,
    foreign: AtomicU64,
    misparented: AtomicU64,
    duplicate: AtomicU64,
    unexpected: AtomicU64,
}

/// What a [`SpanTally`] counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TallyCounts {
    /// Spans exported.
    pub exported: u64,
    /// Spans whose trace id is not one of the run's requests.
    pub foreign: u64,
    /// Front SERVER spans whose parent is not the span id the client sent.
    pub misparented: u64,
    /// Spans exported twice for the same request and kind.
    pub duplicate: u64,
    /// Spans of a name or kind the chain does not make.
    pub unexpected: u64,
    /// Requests (of the first `requests`) that lack at least one of their spans.
    pub incomplete_requests: u64,
}

impl SpanTally {
    /// A tally for the run whose trace ids start with `nonce`.
    pub fn new(nonce: u64) -> Self {
        SpanTally {
            nonce,
            inner: Arc::default(),
        }
    }

    /// The counts, with `incomplete_requests` computed over requests `0..requests`.
    pub fn counts(&self, requests: u64) -> TallyCounts {
        let seen = self
            .inner
            .seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let incomplete = (0..requests)
            .filter(|&i| {
                usize::try_from(i)
                    .ok()
                    .and_then(|i| seen.get(i))
                    .is_none_or(|&kinds| kinds != ALL)
            })
            .count() as u64;
        TallyCounts {
            exported: self.inner.exported.load(Ordering::Relaxed),
            foreign: self.inner.foreign.load(Ordering::Relaxed),
            misparented: self.inner.misparented.load(Ordering::Relaxed),
            duplicate: self.inner.duplicate.load(Ordering::Relaxed),
            unexpected: self.inner.unexpected.load(Ordering::Relaxed),
            incomplete_requests: incomplete,
        }
    }

    fn record(&self, seen: &mut Vec<u8>, span: &SpanData) {
        let inner = &self.inner;
        inner.exported.fetch_add(1, Ordering::Relaxed);
        let Some(id) = RequestId::from_trace_id(span.span_context.trace_id(), self.nonce) else {
            inner.foreign.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let kind = match (&span.span_kind, span.name.as_ref()) {
            (SpanKind::Server, FRONT_SPAN) => FRONT,
            (SpanKind::Client, _) => CLIENT,
            (SpanKind::Server, BACK_SPAN) => BACK,
            _ => {
                inner.unexpected.fetch_add(1, Ordering::Relaxed);
                return;
            }
        };
        if kind == FRONT && span.parent_span_id != id.parent_span_id() {
            inner.misparented.fetch_add(1, Ordering::Relaxed);
        }
        let Ok(index) = usize::try_from(id.index) else {
            inner.foreign.fetch_add(1, Ordering::Relaxed);
            return;
        };
        if seen.len() <= index {
            seen.resize(index + 1, 0);
        }
        if seen[index] & kind != 0 {
            inner.duplicate.fetch_add(1, Ordering::Relaxed);
        }
        seen[index] |= kind;
    }
}

impl SpanExporter for SpanTally {
    fn export(
        &self,
        batch: Vec<SpanData>,
    ) -> impl std::future::Future<Output = OTelSdkResult> + Send {
        {
            let mut seen = self
                .inner
                .seen
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            for span in &batch {
                self.record(&mut seen, span);
            }
        }
        std::future::ready(Ok(()))
    }
}

impl RequestId {
    /// The request a trace id belongs to, if it is one of run `nonce`'s.
    pub fn from_trace_id(trace_id: TraceId, nonce: u64) -> Option<RequestId> {
        let bytes = trace_id.to_bytes();
        let (high, low) = bytes.split_at(8);
        let high = u64::from_be_bytes(high.try_into().ok()?);
        let low = u64::from_be_bytes(low.try_into().ok()?);
        (high == nonce).then_some(RequestId { nonce, index: low })
    }

    /// The parent span id the client sends for this request.
    pub fn parent_span_id(&self) -> SpanId {
        SpanId::from_bytes((self.index + 1).to_be_bytes())
    }
}
