//! The span floor: the least any OpenTelemetry instrumentation does per request under the
//! bench's configuration (every request sampled, SDK spans, batch span processor), with nothing
//! lens adds. A reference beside the targets, not a competitor: it has no attributes, no
//! policy, no baggage, no `Context` made current, no extension for handlers, and ends the span
//! when the response head is ready instead of after the body.
//!
//! * server: read the request's `traceparent` (lens-core's parser), start a SERVER span with a
//!   static name as its child, end it when the inner service's future is ready (and, as a second
//!   reference, the same with an attribute vector the size of the conventions');
//! * client: start a CLIENT span with a static name as the child of the request's parent
//!   `Context`, write its `traceparent` into the request, end it when the response arrives.
//!
//! Beside the client floor, [`PlainClientMiddleware`]: the work every conventions-following
//! OpenTelemetry client middleware must do on top of the floor, written the plain way. It is the
//! reference that says how much of lens's distance to the floor is that work.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use http::{HeaderName, HeaderValue, Request, Response};
use lens_core::traceparent::TraceParent;
use opentelemetry::context::FutureExt as _;
use opentelemetry::trace::{Span, SpanKind, TraceContextExt, TraceState, Tracer};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{SdkTracer, Span as SdkSpan};
use opentelemetry_semantic_conventions::attribute::{
    HTTP_REQUEST_METHOD, HTTP_RESPONSE_STATUS_CODE, SERVER_ADDRESS, SERVER_PORT, URL_FULL,
};
use reqwest_middleware::{Middleware, Next};

static TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");

/// The server side of the floor, as a tower layer. With `attributes`, every span also starts
/// with an attribute vector the size of the HTTP server conventions' (ten attributes, static
/// values, room for thirteen as lens reserves): a reference for what that vector alone costs,
/// made on the request's thread and freed on the exporter's.
#[derive(Clone)]
pub(crate) struct SpanFloorLayer {
    pub(crate) tracer: SdkTracer,
    pub(crate) attributes: bool,
}

impl<S> tower::Layer<S> for SpanFloorLayer {
    type Service = SpanFloorService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        SpanFloorService {
            inner,
            tracer: self.tracer.clone(),
            attributes: self.attributes,
        }
    }
}

#[derive(Clone)]
pub(crate) struct SpanFloorService<S> {
    inner: S,
    tracer: SdkTracer,
    attributes: bool,
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
        let mut builder = self.tracer.span_builder("GET").with_kind(SpanKind::Server);
        if self.attributes {
            let mut attributes = Vec::with_capacity(13);
            for key in ["a", "b", "c", "d", "e", "f", "g", "h", "i"] {
                attributes.push(KeyValue::new(key, "value"));
            }
            attributes.push(KeyValue::new("port", 80i64));
            builder.attributes = Some(attributes);
        }
        let span = builder.start_with_context(&self.tracer, &parent);
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

/// Writes the `traceparent` of `sc` into `req`, as the client floor does.
fn write_traceparent(req: &mut reqwest::Request, sc: &opentelemetry::trace::SpanContext) {
    if let Some(tp) = TraceParent::from_span_context(sc)
        && let Ok(value) = HeaderValue::from_bytes(&tp.encode())
    {
        req.headers_mut().insert(TRACEPARENT.clone(), value);
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
        write_traceparent(&mut req, span.span_context());
        let res = next.run(req, extensions).await;
        span.end();
        res
    }
}

/// The client floor plus what the HTTP client conventions and a current span cost any
/// OpenTelemetry middleware, written the plain way: the four request attributes (`url.full` and
/// `server.address` copied per request), the span held in an `opentelemetry::Context`
/// (opentelemetry boxes it and shares it behind an `Arc`), that Context current around every
/// poll of the rest of the chain (`FutureExt::with_context`), `http.response.status_code` set
/// from the response. No policy, no filter, no baggage, no resend count, no error
/// classification. A reference for where lens's cost goes, not a competitor.
pub(crate) struct PlainClientMiddleware(pub(crate) SdkTracer);

#[async_trait::async_trait]
impl Middleware for PlainClientMiddleware {
    async fn handle(
        &self,
        mut req: reqwest::Request,
        extensions: &mut http::Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        let url = req.url();
        let mut attributes = vec![
            KeyValue::new(HTTP_REQUEST_METHOD, "GET"),
            KeyValue::new(URL_FULL, url.as_str().to_owned()),
        ];
        if let Some(host) = url.host_str() {
            attributes.push(KeyValue::new(SERVER_ADDRESS, host.to_owned()));
        }
        if let Some(port) = url.port_or_known_default() {
            attributes.push(KeyValue::new(SERVER_PORT, i64::from(port)));
        }
        let cx = {
            let empty = Context::new();
            let parent = extensions.get::<Context>().unwrap_or(&empty);
            let span = self
                .0
                .span_builder("GET")
                .with_kind(SpanKind::Client)
                .with_attributes(attributes)
                .start_with_context(&self.0, parent);
            parent.with_span(span)
        };
        write_traceparent(&mut req, cx.span().span_context());
        let res = next.run(req, extensions).with_context(cx.clone()).await;
        let span = cx.span();
        if let Ok(res) = &res {
            span.set_attribute(KeyValue::new(
                HTTP_RESPONSE_STATUS_CODE,
                i64::from(res.status().as_u16()),
            ));
        }
        span.end();
        res
    }
}
