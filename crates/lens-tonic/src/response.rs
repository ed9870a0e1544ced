//! The response side of a traced call: the future and the body that end the call's span once the
//! gRPC status is known (in the response headers for a trailers-only response, else in the
//! trailers after the last message).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll, ready};

use http_body::{Body, Frame, SizeHint};
use opentelemetry::Context;
use opentelemetry::trace::{Status, TraceContextExt};
use pin_project_lite::pin_project;

use crate::status::{SpanSide, code_from_http_status, grpc_status, record_code};

/// The span of one call, until its status is known.
#[derive(Debug)]
pub(crate) struct CallSpan {
    /// The Context holding the call's span (the parent of spans created while handling it).
    pub(crate) cx: Context,
    pub(crate) side: SpanSide,
}

impl CallSpan {
    fn attach(&self) -> Option<opentelemetry::ContextGuard> {
        // Server spans are current while the handler and its response stream run.
        (self.side == SpanSide::Server).then(|| self.cx.clone().attach())
    }

    fn end(self) {
        self.cx.span().end();
    }

    /// Records the status in `headers` (response headers or trailers) and ends the span; `None`
    /// (the span goes on) when `headers` hold no `grpc-status`.
    fn finish_with(self, headers: &http::HeaderMap) -> Option<Self> {
        match grpc_status(headers) {
            Some(code) => {
                record_code(&self.cx.span(), self.side, code, headers);
                self.end();
                None
            }
            None => Some(self),
        }
    }

    fn fail(self, description: &'static str) {
        self.cx.span().set_status(Status::error(description));
        self.end();
    }
}

pin_project! {
    /// The response future of [`crate::ClientService`] and [`crate::ServerService`]: resolves to
    /// the inner response with a [`ResponseBody`] that ends the span when the status arrives.
    pub struct ResponseFuture<F> {
        #[pin]
        inner: F,
        span: Option<CallSpan>,
    }

    impl<F> PinnedDrop for ResponseFuture<F> {
        fn drop(this: Pin<&mut Self>) {
            // Cancelled before the response: end the span anyway.
            if let Some(span) = this.project().span.take() {
                span.end();
            }
        }
    }
}

impl<F> ResponseFuture<F> {
    pub(crate) fn new(inner: F, span: CallSpan) -> Self {
        ResponseFuture {
            inner,
            span: Some(span),
        }
    }
}

impl<F, B, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<http::Response<B>, E>>,
{
    type Output = Result<http::Response<ResponseBody<B>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let result = {
            let _guard = this.span.as_ref().and_then(CallSpan::attach);
            ready!(this.inner.poll(cx))
        };
        let span = this.span.take();
        match result {
            Ok(response) => {
                let span = span.and_then(|span| {
                    let span = span.finish_with(response.headers())?;
                    // No grpc-status and not HTTP 200: the gRPC HTTP-to-status mapping.
                    match code_from_http_status(response.status()) {
                        Some(code) => {
                            record_code(&span.cx.span(), span.side, code, response.headers());
                            span.end();
                            None
                        }
                        None => Some(span),
                    }
                });
                Poll::Ready(Ok(response.map(|inner| ResponseBody { inner, span })))
            }
            Err(e) => {
                if let Some(span) = span {
                    span.fail("transport error");
                }
                Poll::Ready(Err(e))
            }
        }
    }
}

pin_project! {
    /// A response body that reads `grpc-status` from the trailers and then ends the call's span.
    ///
    /// The span also ends when the body ends without trailers, fails, or is dropped early.
    pub struct ResponseBody<B> {
        #[pin]
        inner: B,
        span: Option<CallSpan>,
    }

    impl<B> PinnedDrop for ResponseBody<B> {
        fn drop(this: Pin<&mut Self>) {
            if let Some(span) = this.project().span.take() {
                span.end();
            }
        }
    }
}

impl<B> ResponseBody<B> {
    /// The wrapped body.
    pub fn get_ref(&self) -> &B {
        &self.inner
    }
}

impl<B: Body> Body for ResponseBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let result = {
            let _guard = this.span.as_ref().and_then(CallSpan::attach);
            ready!(this.inner.poll_frame(cx))
        };
        match &result {
            Some(Ok(frame)) => {
                if let Some(trailers) = frame.trailers_ref()
                    && let Some(span) = this.span.take()
                {
                    match span.finish_with(trailers) {
                        // Trailers without grpc-status.
                        Some(span) if span.side == SpanSide::Client => {
                            span.fail("no grpc-status in the response")
                        }
                        Some(span) => span.end(),
                        None => {}
                    }
                }
            }
            Some(Err(_)) => {
                if let Some(span) = this.span.take() {
                    span.fail("response body error");
                }
            }
            None => {
                if let Some(span) = this.span.take() {
                    if span.side == SpanSide::Client {
                        span.fail("no grpc-status in the response");
                    } else {
                        span.end();
                    }
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
