//! The span floor: the least any OpenTelemetry instrumentation does per request under the
//! bench's configuration (every request sampled, SDK spans, batch span processor), with nothing
//! lens adds. A reference beside the targets, not a competitor: it has no attributes, no
//! policy, no baggage, no `Context` made current, no extension for handlers, and ends the span
//! when the response head is ready instead of after the body.
//!
//! * server: read the request's `traceparent` (lens-core's parser), start a SERVER span with a
//!   static name as its child, end it when the inner service's future is ready;
//! * client: start a CLIENT span with a static name as the child of the request's parent
//!   `Context`, write its `traceparent` into the request, end it when the response arrives.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use http::{HeaderName, HeaderValue, Request, Response};
use lens_core::traceparent::TraceParent;
use opentelemetry::Context;
use opentelemetry::trace::{Span, SpanKind, TraceContextExt, TraceState, Tracer};
use opentelemetry_sdk::trace::{SdkTracer, Span as SdkSpan};
use reqwest_middleware::{Middleware, Next};

static TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");

/// The server side of the floor, as a tower layer.
#[derive(Clone)]
pub(crate) struct SpanFloorLayer(pub(crate) SdkTracer);

impl<S> tower::Layer<S> for SpanFloorLayer {
    type Service = SpanFloorService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        SpanFloorService {
            inner,
            tracer: self.0.clone(),
        }
    }
}

#[derive(Clone)]
pub(crate) struct SpanFloorService<S> {
    inner: S,
    tracer: SdkTracer,
}

impl<S, B, R> tower::Service<Request<B>> for SpanFloorService<S>
where
    S: tower::Service<Request<B>, Response = Response<R>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = SpanFloorFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let parent = req
            .headers()
            .get(&TRACEPARENT)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| TraceParent::parse(v).ok())
            .map_or_else(Context::new, |tp| {
                Context::new().with_remote_span_context(tp.to_remote_span_context(TraceState::NONE))
            });
        let span = self
            .tracer
            .span_builder("GET")
            .with_kind(SpanKind::Server)
            .start_with_context(&self.tracer, &parent);
        SpanFloorFuture {
            inner: self.inner.call(req),
            span: Some(span),
        }
    }
}

pin_project_lite::pin_project! {
    /// The inner future; the span ends when it is ready.
    pub(crate) struct SpanFloorFuture<F> {
        #[pin]
        inner: F,
        span: Option<SdkSpan>,
    }
}

impl<F: Future> Future for SpanFloorFuture<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<F::Output> {
        let this = self.project();
        let out = std::task::ready!(this.inner.poll(cx));
        if let Some(mut span) = this.span.take() {
            span.end();
        }
        Poll::Ready(out)
    }
}

/// The client side of the floor, as a reqwest-middleware middleware.
pub(crate) struct SpanFloorMiddleware(pub(crate) SdkTracer);

#[async_trait::async_trait]
impl Middleware for SpanFloorMiddleware {
    async fn handle(
        &self,
        mut req: reqwest::Request,
        extensions: &mut http::Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        let mut span = {
            let parent = extensions.get::<Context>();
            let builder = self.0.span_builder("GET").with_kind(SpanKind::Client);
            match parent {
                Some(parent) => builder.start_with_context(&self.0, parent),
                None => builder.start_with_context(&self.0, &Context::new()),
            }
        };
        if let Some(tp) = TraceParent::from_span_context(span.span_context())
            && let Ok(value) = HeaderValue::from_bytes(&tp.encode())
        {
            req.headers_mut().insert(TRACEPARENT.clone(), value);
        }
        let res = next.run(req, extensions).await;
        span.end();
        res
    }
}
