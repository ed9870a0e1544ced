//! [`TracedBody`]: a response body that ends its call's span when the body ends;
//! [`CountedBody`]: a body whose bytes are counted for the body-size metrics.

use std::fmt;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll, ready};

use bytes::Buf;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

use crate::classify::Outcome;
use crate::lifecycle::{LiveSpan, poll_in};
use crate::metrics::BodyBytes;
use crate::stream::{Marks, StreamEnd};

/// How a [`TracedBody`] ends its span: what trailers mean, what the end of the stream means.
pub trait BodyEnd {
    /// Whether the span's Context is current while the body is polled (a server's response
    /// stream runs the handler's code).
    fn attach(&self) -> bool {
        false
    }

    /// A trailers frame arrived: record what it says and end the span (`None`), or give the
    /// span back to go on.
    fn trailers(&self, span: LiveSpan, trailers: &HeaderMap) -> Option<LiveSpan> {
        let _ = trailers;
        Some(span)
    }

    /// The stream ended with the span still going.
    fn end_of_stream(&self, span: LiveSpan) {
        span.end();
    }

    /// The body failed with an error of type `E`.
    fn error<E>(&self, span: LiveSpan) {
        span.end_with(Outcome::error_of::<E>("response body failed"));
    }

    /// The body was dropped before its end with the span still going: the peer went away, or
    /// the caller stopped reading (a gRPC call is then cancelled).
    fn dropped(&self, span: LiveSpan) {
        span.end();
    }
}

/// A body whose span ends after its last frame ([`BodyEnd`]'s defaults: HTTP).
#[derive(Clone, Copy, Debug, Default)]
pub struct AtLastFrame;

impl BodyEnd for AtLastFrame {}

pin_project! {
    /// A response body that ends the call's span when its last frame has been polled, when it
    /// fails, or when it is dropped (the peer went away, [`BodyEnd::dropped`]), whichever comes
    /// first; streaming bodies are covered, the span lasts until the stream ends.
    ///
    /// On a streamed response (more than one data frame) it marks the span with when the first
    /// data frame passed (and, for a client, [`TracedBody::with_head`], when the head arrived),
    /// how many frames did and how the stream ended ([`crate::stream`]).
    pub struct TracedBody<B, H = AtLastFrame>
    where
        H: BodyEnd,
    {
        #[pin]
        inner: B,
        span: Option<LiveSpan>,
        end: H,
        marks: Marks,
    }

    impl<B, H> PinnedDrop for TracedBody<B, H>
    where
        H: BodyEnd,
    {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if let Some(mut span) = this.span.take() {
                // A server drops a body once it says it has ended, without polling its end.
                let end = if this.marks.at_end() {
                    StreamEnd::Complete
                } else {
                    StreamEnd::Abandoned
                };
                this.marks.end(&mut span, end);
                this.end.dropped(span);
            }
        }
    }
}

impl<B, H: BodyEnd> fmt::Debug for TracedBody<B, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TracedBody")
            .field("traced", &self.span.is_some())
            .finish_non_exhaustive()
    }
}

impl<B, H: BodyEnd> TracedBody<B, H> {
    /// `inner`, ending `span` (none: an untraced response) as `end` says.
    pub fn new(inner: B, span: Option<LiveSpan>, end: H) -> Self {
        TracedBody {
            inner,
            span,
            end,
            marks: Marks::default(),
        }
    }

    /// A client's response body: its head arrived at `at` (marked on the span if the response
    /// turns out to be streamed).
    pub fn with_head(mut self, at: std::time::SystemTime) -> Self {
        self.marks = Marks::with_head(at);
        self
    }

    /// The wrapped body.
    pub fn get_ref(&self) -> &B {
        &self.inner
    }
}

impl<B: Body, H: BodyEnd> Body for TracedBody<B, H> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let attach = this.span.is_some() && this.end.attach();
        let mut inner = this.inner;
        let result = ready!(poll_in(this.span, attach, || inner.as_mut().poll_frame(cx)));
        match &result {
            Some(Ok(frame)) => {
                if let (Some(data), Some(span)) = (frame.data_ref(), this.span.as_mut()) {
                    let len = data.remaining();
                    span.add_body_bytes(len);
                    this.marks.data_frame(span, len);
                    if inner.is_end_stream() {
                        this.marks.reached_end();
                    }
                }
                if let Some(trailers) = frame.trailers_ref()
                    && let Some(mut span) = this.span.take()
                {
                    // Trailers come after the last data frame: the stream is complete.
                    this.marks.end(&mut span, StreamEnd::Complete);
                    *this.span = this.end.trailers(span, trailers);
                }
            }
            Some(Err(_)) => {
                if let Some(mut span) = this.span.take() {
                    this.marks.end(&mut span, StreamEnd::Failed);
                    this.end.error::<B::Error>(span);
                }
            }
            None => {
                if let Some(mut span) = this.span.take() {
                    this.marks.end(&mut span, StreamEnd::Complete);
                    this.end.end_of_stream(span);
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

pin_project! {
    /// A body whose data bytes are counted for the body-size metrics as they are polled out of
    /// it, whatever its framing (chunked, streaming, without `Content-Length`): a request body
    /// counted with [`LiveSpan::count_request_body`], a response body that outlives its span
    /// with [`LiveSpan::count_response_body`]. Its frames pass unchanged.
    pub struct CountedBody<B> {
        #[pin]
        inner: B,
        bytes: BodyBytes,
    }
}

impl<B> fmt::Debug for CountedBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CountedBody")
            .field("bytes", &self.bytes)
            .finish_non_exhaustive()
    }
}

impl<B> CountedBody<B> {
    /// `inner`, its data bytes counted into `bytes`.
    pub fn new(inner: B, bytes: BodyBytes) -> Self {
        CountedBody { inner, bytes }
    }
}

impl<B: Body> Body for CountedBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    #[inline]
    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let result = ready!(this.inner.poll_frame(cx));
        match &result {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    this.bytes.add(data.remaining());
                }
            }
            Some(Err(_)) | None => this.bytes.finish(),
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
