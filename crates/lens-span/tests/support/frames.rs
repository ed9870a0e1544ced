//! A response body made of given frames, polled by hand: what a server sends or a client reads,
//! one frame at a time, with nothing between the test and `TracedBody`.

#![allow(dead_code, clippy::panic, clippy::unwrap_used)] // each test file uses part of it
use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll, Waker};

use bytes::Bytes;
use http_body::{Body, Frame};
use lens_core::policy::InboundPolicy;
use lens_span::{Adapter, LiveSpan, SpanOptions};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};

/// The body failed (a reset stream).
#[derive(Debug)]
pub(crate) struct Reset;

/// Frames handed out in order, then the end of the stream.
pub(crate) struct Frames(pub VecDeque<Result<Frame<Bytes>, Reset>>);

impl Frames {
    /// `n` data frames of `data: token\n\n`.
    pub(crate) fn data(n: usize) -> Self {
        Frames(
            (0..n)
                .map(|_| Ok(Frame::data(Bytes::from_static(b"data: token\n\n"))))
                .collect(),
        )
    }
}

impl Body for Frames {
    type Data = Bytes;
    type Error = Reset;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Reset>>> {
        Poll::Ready(self.0.pop_front())
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_empty()
    }
}

/// Polls `body` once.
pub(crate) fn poll<B: Body + Unpin>(body: &mut B) -> Option<Result<Frame<B::Data>, B::Error>> {
    let mut cx = TaskContext::from_waker(Waker::noop());
    match Pin::new(body).poll_frame(&mut cx) {
        Poll::Ready(frame) => frame,
        Poll::Pending => panic!("the test body is never pending"),
    }
}

struct Test;

impl Adapter for Test {
    type Request<'a> = ();
    type Response<'a> = ();
    type Status = ();
}

/// A tracer that keeps what ended, and a way to start spans with it.
pub(crate) struct Spans {
    pub(crate) exporter: InMemorySpanExporter,
    options: SpanOptions<Test, InboundPolicy>,
}

impl Spans {
    pub(crate) fn new() -> Self {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let options = SpanOptions::new(provider.tracer("test"), InboundPolicy::trust_all());
        Spans { exporter, options }
    }

    /// A SERVER span starting now.
    pub(crate) fn server(&self) -> LiveSpan {
        let inbound = self.options.extract_inbound(&http::HeaderMap::new(), None);
        self.options
            .start_server(&(), || "GET /stream".into(), Vec::new(), inbound)
    }

    /// A CLIENT span starting now.
    pub(crate) fn client(&self) -> LiveSpan {
        self.options.start_client(
            &(),
            || "GET".into(),
            Vec::new(),
            &opentelemetry::Context::new(),
        )
    }

    /// The one span that ended.
    pub(crate) fn ended(&self) -> SpanData {
        let mut spans = self.exporter.get_finished_spans().unwrap();
        assert_eq!(spans.len(), 1, "one span ended");
        spans.remove(0)
    }
}

/// The value of attribute `key` on `span`.
pub(crate) fn attribute(span: &SpanData, key: &str) -> Option<opentelemetry::Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
}

/// The names of `span`'s events.
pub(crate) fn events(span: &SpanData) -> Vec<String> {
    span.events.iter().map(|e| e.name.to_string()).collect()
}
