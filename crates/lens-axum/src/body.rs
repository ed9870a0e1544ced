//! The response body wrapper that ends the SERVER span once the body has been sent.

use std::pin::Pin;
use std::task::{Context as TaskContext, Poll, ready};

use http_body::{Body, Frame, SizeHint};
use opentelemetry::trace::{Status, TraceContextExt};
use opentelemetry::{Context, KeyValue};
use pin_project_lite::pin_project;

use crate::layer::ERROR_TYPE;

pin_project! {
    /// A response body that ends the request's SERVER span when its last frame has been
    /// polled, when it fails, or when it is dropped (the client went away), whichever comes first.
    ///
    /// Streaming bodies are covered: the span lasts until the stream ends.
    pub struct LensBody<B> {
        #[pin]
        inner: B,
        span: Option<Context>,
    }

    impl<B> PinnedDrop for LensBody<B> {
        fn drop(this: Pin<&mut Self>) {
            if let Some(cx) = this.project().span.take() {
                cx.span().end();
            }
        }
    }
}

impl<B> std::fmt::Debug for LensBody<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LensBody")
            .field("traced", &self.span.is_some())
            .finish_non_exhaustive()
    }
}

impl<B> LensBody<B> {
    /// A body that ends the span of `cx` when done.
    pub(crate) fn traced(inner: B, cx: Context) -> Self {
        LensBody {
            inner,
            span: Some(cx),
        }
    }

    /// A body of an untraced request (filtered out).
    pub(crate) fn untraced(inner: B) -> Self {
        LensBody { inner, span: None }
    }
}

impl<B: Body> Body for LensBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let result = ready!(this.inner.poll_frame(cx));
        match &result {
            Some(Ok(_)) => {}
            None => {
                if let Some(span_cx) = this.span.take() {
                    span_cx.span().end();
                }
            }
            Some(Err(_)) => {
                if let Some(span_cx) = this.span.take() {
                    let span = span_cx.span();
                    span.set_attribute(KeyValue::new(
                        ERROR_TYPE,
                        std::any::type_name::<B::Error>(),
                    ));
                    span.set_status(Status::error("response body failed"));
                    span.end();
                }
            }
        }
        Poll::Ready(result)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
