//! A streamed response without sockets, for the per-frame figures of `benches/allocations.rs`:
//! the last reqwest middleware answers at once with a body of many small data frames (static
//! bytes: the body itself allocates nothing per frame), which the caller reads with
//! `Response::chunk()`, as a server-sent-events reader does. Four clients: reqwest-middleware
//! alone (the body unwrapped), the span ended at the head (`support/head_end.rs`), the body
//! taken through `http::Response` and wrapped again without a span (reqwest's share of the
//! wrapping), and `ClientMiddleware` (the body in lens-span's `TracedBody`).

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use lens_reqwest::ClientMiddleware;
use opentelemetry::Context;
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_sdk::trace::SdkTracerProvider;

use super::drivers::run_now;

#[path = "head_end.rs"]
mod head_end;

/// One server-sent event, as an LLM engine streams a token.
const EVENT: &[u8] = b"data: {\"token\":\"Hello\"}\n\n";

/// `left` data frames of [`EVENT`], then the end.
struct Frames {
    left: usize,
}

impl Body for Frames {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.left == 0 {
            return Poll::Ready(None);
        }
        self.left -= 1;
        Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(EVENT)))))
    }

    fn is_end_stream(&self) -> bool {
        self.left == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

/// The last middleware: answers at once with [`Frames`] of the count in the request's
/// extensions.
struct Stream;

/// How many frames the response to a request has.
#[derive(Clone, Copy)]
pub(crate) struct FrameCount(pub(crate) usize);

#[async_trait::async_trait]
impl reqwest_middleware::Middleware for Stream {
    async fn handle(
        &self,
        req: reqwest::Request,
        extensions: &mut http::Extensions,
        _next: reqwest_middleware::Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        std::hint::black_box(&req);
        let left = extensions.get::<FrameCount>().map_or(1, |n| n.0);
        let body = reqwest::Body::wrap(Frames { left });
        Ok(reqwest::Response::from(http::Response::new(body)))
    }
}

/// The response's body taken through an `http::Response` and back, wrapped again in a
/// `reqwest::Body` as `ClientMiddleware` does, without `TracedBody`: what reqwest's own layers
/// cost per frame, apart from lens's.
struct RoundTrip;

#[async_trait::async_trait]
impl reqwest_middleware::Middleware for RoundTrip {
    async fn handle(
        &self,
        req: reqwest::Request,
        extensions: &mut http::Extensions,
        next: reqwest_middleware::Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        let res = next.run(req, extensions).await?;
        let (parts, body) = http::Response::from(res).into_parts();
        let body = reqwest::Body::wrap(body);
        Ok(reqwest::Response::from(http::Response::from_parts(
            parts, body,
        )))
    }
}

/// One client reading streamed responses: `run(frames)` sends one request and reads its
/// response of `frames` data frames to the end.
pub(crate) struct StreamDriver {
    pub(crate) name: &'static str,
    pub(crate) run: Box<dyn FnMut(usize)>,
}

fn driver(
    name: &'static str,
    client: reqwest_middleware::ClientWithMiddleware,
    parent: Context,
) -> StreamDriver {
    StreamDriver {
        name,
        run: Box::new(move |frames| {
            run_now(async {
                let mut res = client
                    .get("http://127.0.0.1:40000/generate")
                    .with_extension(parent.clone())
                    .with_extension(FrameCount(frames))
                    .send()
                    .await
                    .unwrap();
                while let Some(chunk) = res.chunk().await.unwrap() {
                    std::hint::black_box(chunk);
                }
            })
        }),
    }
}

/// reqwest-middleware alone (the body unwrapped), the span ended at the head, the body's
/// round trip through `http::Response` alone ([`RoundTrip`]), and `ClientMiddleware` (spans to
/// `provider`; a sampled parent in every request's extensions).
pub(crate) fn stream_drivers(provider: &SdkTracerProvider) -> Vec<StreamDriver> {
    use opentelemetry::trace::Tracer as _;
    let tracer = provider.tracer("bench-stream");
    let parent = Context::new().with_span(tracer.start("parent"));
    let client = reqwest::Client::new();
    let build = |middleware: Option<std::sync::Arc<dyn reqwest_middleware::Middleware>>| {
        let mut builder = reqwest_middleware::ClientBuilder::new(client.clone());
        if let Some(middleware) = middleware {
            builder = builder.with_arc(middleware);
        }
        builder.with(Stream).build()
    };
    vec![
        driver("unwrapped", build(None), parent.clone()),
        driver(
            "head_end",
            build(Some(std::sync::Arc::new(head_end::HeadEndMiddleware::new(
                provider.tracer("bench-stream"),
            )))),
            parent.clone(),
        ),
        driver(
            "round_trip",
            build(Some(std::sync::Arc::new(RoundTrip))),
            parent.clone(),
        ),
        driver(
            "lens_middleware",
            build(Some(std::sync::Arc::new(
                ClientMiddleware::new().with_tracer(provider.tracer("bench-stream")),
            ))),
            parent,
        ),
    ]
}
