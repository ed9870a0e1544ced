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
//! Beside the server floor, [`MinimalServerLayer`]: the least a server layer does for the
//! behaviour `ServerLayer` must have, a bound for it.
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
        let parent = parent_of(&req);
        let mut builder = self.tracer.span_builder("GET").with_kind(SpanKind::Server);
        if self.attributes {
            builder.attributes = Some(conventions_sized_attributes());
        }
        let span = builder.start_with_context(&self.tracer, &parent);
        SpanFloorFuture {
            inner: self.inner.call(req),
            span: Some(span),
        }
    }
}

/// The parent Context of the request's `traceparent` (lens-core's parser), or none.
fn parent_of<B>(req: &Request<B>) -> Context {
    req.headers()
        .get(&TRACEPARENT)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| TraceParent::parse(v).ok())
        .map_or_else(Context::new, |tp| {
            Context::new().with_remote_span_context(tp.to_remote_span_context(TraceState::NONE))
        })
}

/// An attribute vector the size of the HTTP server conventions' (ten attributes, static
/// values, room for thirteen as lens reserves).
fn conventions_sized_attributes() -> Vec<KeyValue> {
    let mut attributes = Vec::with_capacity(13);
    for key in ["a", "b", "c", "d", "e", "f", "g", "h", "i"] {
        attributes.push(KeyValue::new(key, "value"));
    }
    attributes.push(KeyValue::new("port", 80i64));
    attributes
}

/// The least a server layer does for the behaviour the conventions and the issue require of
/// `ServerLayer`, on top of the span floor: the conventions-sized attribute vector (static
/// values), the span held in an `opentelemetry::Context` that is current around the inner
/// service's `call` and every poll of its future (handlers see it), `http.response.status_code`
/// from the response, and the span ended after the body's last frame (or when the body is
/// dropped). No policy, baggage, filter, hooks, route or address text, or error
/// classification. A bound for lens's server, not a competitor.
#[derive(Clone)]
pub(crate) struct MinimalServerLayer(pub(crate) SdkTracer);

impl<S> tower::Layer<S> for MinimalServerLayer {
    type Service = MinimalServerService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        MinimalServerService {
            inner,
            tracer: self.0.clone(),
        }
    }
}

#[derive(Clone)]
pub(crate) struct MinimalServerService<S> {
    inner: S,
    tracer: SdkTracer,
}

impl<S, B, R> tower::Service<Request<B>> for MinimalServerService<S>
where
    S: tower::Service<Request<B>, Response = Response<R>>,
{
    type Response = Response<EndAtLastFrame<R>>;
    type Error = S::Error;
    type Future = MinimalServerFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let parent = parent_of(&req);
        let span = self
            .tracer
            .span_builder("GET")
            .with_kind(SpanKind::Server)
            .with_attributes(conventions_sized_attributes())
            .start_with_context(&self.tracer, &parent);
        let cx = parent.with_span(span);
        let inner = {
            let _guard = cx.clone().attach();
            self.inner.call(req)
        };
        MinimalServerFuture {
            inner: inner.with_context(cx.clone()),
            cx: Some(cx),
        }
    }
}

pin_project_lite::pin_project! {
    /// The inner future, polled with the span's Context current; records the status code.
    pub(crate) struct MinimalServerFuture<F> {
        #[pin]
        inner: opentelemetry::context::WithContext<F>,
        cx: Option<Context>,
    }
}

impl<F, R, E> Future for MinimalServerFuture<F>
where
    F: Future<Output = Result<Response<R>, E>>,
{
    type Output = Result<Response<EndAtLastFrame<R>>, E>;

    fn poll(self: Pin<&mut Self>, task: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let res = std::task::ready!(this.inner.poll(task))?;
        let cx = this.cx.take();
        if let Some(cx) = &cx {
            cx.span().set_attribute(KeyValue::new(
                HTTP_RESPONSE_STATUS_CODE,
                i64::from(res.status().as_u16()),
            ));
        }
        Poll::Ready(Ok(res.map(|inner| EndAtLastFrame {
            inner,
            end: EndOnDrop(cx),
        })))
    }
}

/// Ends the span of its Context when dropped.
pub(crate) struct EndOnDrop(Option<Context>);

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        if let Some(cx) = self.0.take() {
            cx.span().end();
        }
    }
}

pin_project_lite::pin_project! {
    /// A response body that ends the span after its last frame, or when it is dropped.
    pub(crate) struct EndAtLastFrame<B> {
        #[pin]
        inner: B,
        end: EndOnDrop,
    }
}

impl<B: http_body::Body> http_body::Body for EndAtLastFrame<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        task: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<http_body::Frame<B::Data>, B::Error>>> {
        let this = self.project();
        let frame = std::task::ready!(this.inner.poll_frame(task));
        if !matches!(frame, Some(Ok(_)))
            && let Some(cx) = this.end.0.take()
        {
            cx.span().end();
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
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
