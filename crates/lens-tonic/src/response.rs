//! The response side of a traced call: the future and the body that end the call's span once the
//! gRPC status is known (in the response headers for a trailers-only response, else in the
//! trailers after the last message).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll, ready};

use http::HeaderMap;
use lens_span::classify::Outcome;
use lens_span::genai::GenAi;
use lens_span::rpc::RpcConventions;
use lens_span::{BodyEnd, LiveSpan, Responder, TracedBody, poll_in};
use pin_project_lite::pin_project;
use tonic::Code;

use crate::adapter::{Grpc, ResponseInfo};
use crate::status::{SpanSide, code_from_http_status, decode_message, grpc_status};

/// How a call's span ends: from the gRPC status, classified for its side.
#[derive(Clone)]
pub struct CallEnd {
    side: SpanSide,
    conventions: RpcConventions,
    responder: Responder<Grpc>,
}

impl std::fmt::Debug for CallEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallEnd")
            .field("side", &self.side)
            .field("conventions", &self.conventions)
            .finish_non_exhaustive()
    }
}

impl CallEnd {
    pub(crate) fn new(
        side: SpanSide,
        conventions: RpcConventions,
        responder: Responder<Grpc>,
    ) -> Self {
        CallEnd {
            side,
            conventions,
            responder,
        }
    }

    /// Records `code` (found in `metadata`) on the span and ends it: the status attributes of
    /// the conventions, `error.type` and status Error when the classifier (the user's, else the
    /// side's) counts the code as an error (a failure without a description gets the code's and
    /// the `grpc-message`), then the response hook.
    fn finish(&self, mut span: LiveSpan, code: Code, metadata: &HeaderMap) {
        for attribute in self.conventions.status_attributes(code as i32) {
            span.set_attribute(attribute);
        }
        let outcome = match self.responder.outcome(&code, &self.side) {
            Outcome::Failure {
                error_type,
                description,
            } if description.is_empty() => {
                let description = match metadata.get("grpc-message") {
                    Some(m) if !m.is_empty() => {
                        format!("{}: {}", code.description(), decode_message(m.as_bytes()))
                    }
                    _ => code.description().to_owned(),
                };
                Outcome::failure(error_type, description)
            }
            outcome => outcome,
        };
        self.responder
            .record(&mut span, outcome, &ResponseInfo { code, metadata });
    }

    /// The end of an untraced call's body (it has no span to end).
    fn untraced() -> Self {
        CallEnd {
            side: SpanSide::Server,
            conventions: RpcConventions::LEGACY,
            responder: Responder::default(),
        }
    }

    /// A call dropped before its status (the client went away, or stopped reading): what the
    /// client sees is `CANCELLED`, classified for the side (an error for a client by default,
    /// not for a server).
    fn cancelled(&self, span: LiveSpan) {
        self.finish(span, Code::Cancelled, &HeaderMap::new());
    }

    /// A call that ended without a status: a client's error.
    fn no_status(&self, span: LiveSpan) {
        match self.side {
            SpanSide::Client => {
                span.end_with(Outcome::failure("_OTHER", "no grpc-status in the response"))
            }
            SpanSide::Server => span.end(),
        }
    }
}

impl BodyEnd for CallEnd {
    fn attach(&self) -> bool {
        // Server spans are current while the handler's response stream runs.
        self.side == SpanSide::Server
    }

    fn trailers(&self, span: LiveSpan, trailers: &HeaderMap) -> Option<LiveSpan> {
        match grpc_status(trailers) {
            Some(code) => self.finish(span, code, trailers),
            None => self.no_status(span),
        }
        None
    }

    fn end_of_stream(&self, span: LiveSpan) {
        self.no_status(span);
    }

    fn dropped(&self, span: LiveSpan) {
        self.cancelled(span);
    }
}

/// A response body that reads `grpc-status` from the trailers and then ends the call's span.
///
/// The span also ends when the body ends without trailers, fails, or is dropped early (status
/// `CANCELLED`: the stream was reset before its status).
pub type ResponseBody<B> = TracedBody<B, CallEnd>;

pin_project! {
    /// The response future of [`crate::ClientService`] and [`crate::ServerService`]: resolves to
    /// the inner response with a [`ResponseBody`] that ends the span when the status arrives.
    /// Dropped before the response (the call cancelled), it ends the span with status
    /// `CANCELLED`.
    pub struct ResponseFuture<F> {
        #[pin]
        inner: F,
        span: Option<LiveSpan>,
        end: Option<CallEnd>,
    }

    impl<F> PinnedDrop for ResponseFuture<F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if let (Some(span), Some(end)) = (this.span.take(), this.end.as_ref()) {
                end.cancelled(span);
            }
        }
    }
}

impl<F> std::fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseFuture")
            .field("traced", &self.span.is_some())
            .finish_non_exhaustive()
    }
}

impl<F> ResponseFuture<F> {
    pub(crate) fn new(inner: F, span: LiveSpan, end: CallEnd) -> Self {
        ResponseFuture {
            inner,
            span: Some(span),
            end: Some(end),
        }
    }

    /// A call the filter left untraced.
    pub(crate) fn untraced(inner: F) -> Self {
        ResponseFuture {
            inner,
            span: None,
            end: None,
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
        let attach = this.end.as_ref().is_some_and(BodyEnd::attach);
        let mut inner = this.inner;
        let result = ready!(poll_in(this.span, attach, || inner.as_mut().poll(cx)));
        let span = this.span.take();
        let end = this.end.take();
        match result {
            Ok(response) => {
                let span = match (span, &end) {
                    (Some(mut span), Some(end)) => {
                        // A service that says this call is a GenAI operation.
                        if let Some(gen_ai) = response.extensions().get::<GenAi>() {
                            span.set_gen_ai(std::sync::Arc::new(gen_ai.clone()));
                        }
                        // A trailers-only response, or no grpc-status and not HTTP 200: the
                        // gRPC HTTP-to-status mapping.
                        let code = grpc_status(response.headers())
                            .or_else(|| code_from_http_status(response.status()));
                        match code {
                            Some(code) => {
                                end.finish(span, code, response.headers());
                                None
                            }
                            None => Some(span),
                        }
                    }
                    (span, _) => span,
                };
                let end = end.unwrap_or_else(CallEnd::untraced);
                // A client marks when the head arrived, should the response be a stream.
                let head =
                    (span.is_some() && end.side == SpanSide::Client).then(opentelemetry::time::now);
                Poll::Ready(Ok(response.map(|inner| {
                    let body = TracedBody::new(inner, span, end);
                    match head {
                        Some(at) => body.with_head(at),
                        None => body,
                    }
                })))
            }
            Err(e) => {
                if let Some(span) = span {
                    span.end_with(Outcome::error_of::<E>("transport error"));
                }
                Poll::Ready(Err(e))
            }
        }
    }
}
