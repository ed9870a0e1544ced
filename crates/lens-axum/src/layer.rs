//! [`ServerLayer`], [`ServerService`] and [`ResponseFuture`]: the axum glue around lens-span's
//! span lifecycle.

use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, ready};

use axum::extract::MatchedPath;
use http::header::{HOST, HeaderName, HeaderValue, USER_AGENT};
use http::{HeaderMap, Method, Request, Response, StatusCode, Uri, Version};
use lens_core::policy::InboundPolicy;
use lens_core::traceresponse::{TRACERESPONSE_HEADER, TraceResponse};
use lens_span::classify::{HttpServerErrors, Outcome};
use lens_span::httpconv::known_http_method;
use lens_span::metrics::Instruments;
use lens_span::redact::redacted_query;
use lens_span::{
    Adapter, AtLastFrame, CountedBody, LiveSpan, Responder, SpanOptions, TracedBody, httpconv,
    poll_in,
};
use opentelemetry::KeyValue;
use opentelemetry_semantic_conventions::attribute::{
    CLIENT_ADDRESS, HTTP_ROUTE, NETWORK_PROTOCOL_VERSION, SERVER_ADDRESS, SERVER_PORT, URL_PATH,
    URL_QUERY, URL_SCHEME, USER_AGENT_ORIGINAL,
};
use pin_project_lite::pin_project;
use tower_layer::Layer;
use tower_service::Service;

use crate::memo::Memos;

/// What the filter, the span-name callback and the request-attribute hook see of a request.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct RequestInfo<'a> {
    /// The request method.
    pub method: &'a Method,
    /// The request target.
    pub uri: &'a Uri,
    /// The HTTP version.
    pub version: Version,
    /// The request headers.
    pub headers: &'a HeaderMap,
    /// The route pattern axum matched (`/users/{id}`), when the layer sits on a `Router`.
    pub route: Option<&'a str>,
}

/// What the response-attribute hook sees of a response.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct ResponseInfo<'a> {
    /// The response status.
    pub status: StatusCode,
    /// The response headers.
    pub headers: &'a HeaderMap,
}

/// The hooks of [`ServerLayer`] see [`RequestInfo`] and [`ResponseInfo`].
struct Axum;

impl Adapter for Axum {
    type Request<'a> = RequestInfo<'a>;
    type Response<'a> = ResponseInfo<'a>;
    type Status = StatusCode;
}

#[derive(Clone, Debug)]
struct Config {
    options: SpanOptions<Axum, InboundPolicy>,
    traceresponse: bool,
}

/// The response body of a traced request: ends the SERVER span when the body has been sent in
/// full, failed, or was dropped.
pub type ResponseBody<B> = TracedBody<B, AtLastFrame>;

/// A tower [`Layer`] that gives every HTTP request a SERVER span (docs/propagation-rules.md#trust, stable HTTP
/// semantic conventions).
///
/// Per request it extracts the W3C trace context and baggage with lens-core through the
/// [`InboundPolicy`], starts a SERVER span (child of the remote span when trusted, a new root
/// with a link to it under Link, a plain new root under Ignore), makes it the current
/// [`Context`](opentelemetry::Context) while the inner service runs, and ends it when the
/// response body has been sent in full.
///
/// Put it on the axum `Router` with [`Router::layer`](axum::Router::layer), so that the span is
/// named after the matched route (`GET /users/{id}`); on any other tower HTTP service the name is
/// the method alone.
///
/// ```
/// use axum::{Router, routing::get};
/// use lens_axum::ServerLayer;
/// use lens_core::policy::InboundPolicy;
///
/// let app: Router = Router::new()
///     .route("/users/{id}", get(|| async { "hello" }))
///     .route("/healthz", get(|| async { "ok" }))
///     .layer(
///         ServerLayer::new()
///             .with_inbound_policy(InboundPolicy::trust_private_networks())
///             .with_filter(|req| req.uri.path() != "/healthz")
///             .with_traceresponse(true),
///     );
/// ```
#[derive(Clone, Debug)]
pub struct ServerLayer {
    config: Arc<Config>,
}

impl ServerLayer {
    /// Trusts every request (NeMo Lens parity), traces every request, uses the tracer
    /// `lens-axum` (this crate's version, the conventions' schema URL) of the global tracer
    /// provider as it is when this is called (install the provider first, or use
    /// [`ServerLayer::with_tracer`]) and lens's process-wide propagator.
    pub fn new() -> Self {
        let mut options = SpanOptions::global(
            "lens-axum",
            env!("CARGO_PKG_VERSION"),
            InboundPolicy::trust_all(),
        );
        options.set_instruments(Instruments::HttpServer);
        let config = Arc::new(Config {
            options,
            traceresponse: false,
        });
        ServerLayer { config }
    }

    fn options_mut(&mut self) -> &mut SpanOptions<Axum, InboundPolicy> {
        &mut Arc::make_mut(&mut self.config).options
    }

    /// Every call is the GenAI operation `gen_ai` (off by default): the spans get the GenAI
    /// attributes (`gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`)
    /// and, on a streamed response, `gen_ai.response.time_to_first_chunk`; with metrics on, the
    /// GenAI time-to-first-chunk and time-per-chunk histograms (docs/streaming.md). A route says it on its own by putting
    /// a [`GenAi`](lens_span::genai::GenAi) in its response's extensions (a handler returning
    /// `(axum::Extension(GenAi::new("chat", "vllm")), body)`), which wins over this.
    pub fn with_gen_ai(mut self, gen_ai: lens_span::genai::GenAi) -> Self {
        self.options_mut().set_gen_ai(Some(gen_ai));
        self
    }

    /// Adds a `traceresponse` header (W3C Trace Context Level 2) with the SERVER span's trace id
    /// and span id to every traced response. Off by default.
    pub fn with_traceresponse(mut self, on: bool) -> Self {
        Arc::make_mut(&mut self.config).traceresponse = on;
        self
    }

    /// With metrics on (`with_meter`, `with_global_meter`), also records
    /// `http.server.active_requests` (opt-in in the semantic conventions; off by default):
    /// incremented when a request starts, decremented when its span ends, whichever way
    /// (response body sent, error, panic, request or response dropped).
    pub fn with_active_requests(mut self, on: bool) -> Self {
        self.options_mut().set_active_requests(on);
        self
    }

    /// With metrics on, also records `http.server.request.body.size` and
    /// `http.server.response.body.size` (opt-in in the semantic conventions; off by default),
    /// both recorded when the span ends and counted frame by frame, not taken from
    /// `Content-Length` (chunked and streaming bodies count):
    ///
    /// - the request body: the bytes the handler read from it by the time the span ends (a
    ///   handler that reads part of the body, or none of it, records what it read; bytes read
    ///   after the response body ended are not counted). Counted when the request body is an
    ///   axum [`Body`](axum::body::Body), as it is under an axum `Router` or `axum::serve`; a
    ///   request of another body type records no request body size;
    /// - the response body: the bytes of the body actually sent (a body cut off counts what
    ///   went out).
    ///
    /// Costs two allocations per request (the request body's counter and the box of the
    /// counting body), only when on.
    pub fn with_body_sizes(mut self, on: bool) -> Self {
        self.options_mut().set_body_sizes(on);
        self
    }
}

lens_span::span_knobs!(
    ServerLayer,
    request: RequestInfo<'_>,
    response: ResponseInfo<'_>,
    status: StatusCode,
    policy: with_inbound_policy(InboundPolicy)
);

impl<S> Layer<S> for ServerLayer {
    type Service = ServerService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ServerService {
            inner,
            config: Arc::clone(&self.config),
            memos: Arc::default(),
        }
    }
}

/// The service [`ServerLayer`] wraps around an HTTP service.
#[derive(Clone, Debug)]
pub struct ServerService<S> {
    inner: S,
    config: Arc<Config>,
    /// Attribute values this service (one route, under `Router::layer`) shares between requests.
    memos: Arc<Memos>,
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for ServerService<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
    ReqBody: 'static,
{
    type Response = Response<ResponseBody<ResBody>>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<ReqBody>) -> Self::Future {
        let config = &*self.config;
        let options = &config.options;
        let route = req
            .extensions()
            .get::<MatchedPath>()
            .map(MatchedPath::as_str);
        let info = RequestInfo {
            method: req.method(),
            uri: req.uri(),
            version: req.version(),
            headers: req.headers(),
            route,
        };
        if !options.filter_decision(&info).span {
            return ResponseFuture {
                inner: self.inner.call(req),
                span: None,
                responder: None,
                traceresponse: false,
            };
        }

        let peer = peer_addr(&req);
        let inbound = options.extract_inbound(req.headers(), peer.map(|p| p.ip()));

        let mut attributes = request_attributes(&info, peer, &self.memos);
        attributes.extend(lens_span::new_root::cause(req.headers(), &inbound));
        let mut span = options.start_server(
            &info,
            || default_span_name(info.method, route),
            attributes,
            inbound,
        );
        let mut req = req;
        count_request_body(&mut req, &mut span);

        // No request extension for handlers: `RequestContext` reads the current Context, which
        // is the span's around `call` and every poll of the inner future (an extension would cost
        // a box and, under axum's router, the growth of the extension map on every request).
        let inner = span.in_scope(|| self.inner.call(req));
        ResponseFuture {
            inner,
            span: Some(span),
            responder: Some(options.responder()),
            traceresponse: config.traceresponse,
        }
    }
}

pin_project! {
    /// The response future of [`ServerService`]: runs the inner future with the SERVER span as
    /// the current Context and records the response status.
    pub struct ResponseFuture<F> {
        #[pin]
        inner: F,
        span: Option<LiveSpan>,
        responder: Option<Responder<Axum>>,
        traceresponse: bool,
    }
}

impl<F> fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture")
            .field("traced", &self.span.is_some())
            .finish_non_exhaustive()
    }
}

impl<F, B, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
{
    type Output = Result<Response<ResponseBody<B>>, E>;

    fn poll(self: Pin<&mut Self>, task: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut inner = this.inner;
        // A panicking handler still ends its span (status Error, `error.type` = `panic`).
        let result = ready!(poll_in(this.span, true, || inner.as_mut().poll(task)));
        let mut span = this.span.take();
        match result {
            Ok(mut res) => {
                if let (Some(span), Some(responder)) = (&mut span, this.responder.as_ref()) {
                    let status = res.status();
                    span.set_attribute(httpconv::status_code(status));
                    let info = ResponseInfo {
                        status,
                        headers: res.headers(),
                    };
                    // The user's classifier, else the conventions' (5xx), then the hooks.
                    responder.respond(span, &status, &info, &HttpServerErrors);
                    // A route that says it is a GenAI operation.
                    if let Some(gen_ai) = res.extensions().get::<lens_span::genai::GenAi>() {
                        span.set_gen_ai(std::sync::Arc::new(gen_ai.clone()));
                    }
                    if *this.traceresponse
                        && let Some(tr) =
                            TraceResponse::from_span_context(span.span().span_context())
                        && let Ok(value) = HeaderValue::from_bytes(&tr.encode())
                    {
                        res.headers_mut()
                            .insert(HeaderName::from_static(TRACERESPONSE_HEADER), value);
                    }
                }
                Poll::Ready(Ok(res.map(|body| TracedBody::new(body, span, AtLastFrame))))
            }
            Err(err) => {
                if let Some(span) = span {
                    span.end_with(Outcome::error_of::<E>("service failed"));
                }
                Poll::Ready(Err(err))
            }
        }
    }
}

/// With body sizes on, counts the bytes the handler reads from the request body for `span`,
/// when the body is an axum [`Body`](axum::body::Body) (under an axum `Router` and
/// `axum::serve` it is): the body is replaced by a counting one of the same type. A body of
/// another type is left as it is, and no request body size is recorded.
fn count_request_body<B: 'static>(req: &mut Request<B>, span: &mut LiveSpan) {
    let body: &mut dyn Any = req.body_mut();
    if let Some(body) = body.downcast_mut::<axum::body::Body>()
        && let Some(bytes) = span.count_request_body()
    {
        let inner = std::mem::take(body);
        *body = axum::body::Body::new(CountedBody::new(inner, bytes));
    }
}

#[cfg(feature = "connect-info")]
fn peer_addr<B>(req: &Request<B>) -> Option<SocketAddr> {
    req.extensions()
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map(|info| info.0)
}

#[cfg(not(feature = "connect-info"))]
fn peer_addr<B>(_req: &Request<B>) -> Option<SocketAddr> {
    None
}

/// `{method} {route}` (allocated once at its length: the span owns its name), else the method.
fn default_span_name(method: &Method, route: Option<&str>) -> Cow<'static, str> {
    let method = known_http_method(method).unwrap_or("HTTP");
    match route {
        Some(route) => {
            let mut name = String::with_capacity(method.len() + 1 + route.len());
            name.push_str(method);
            name.push(' ');
            name.push_str(route);
            Cow::Owned(name)
        }
        None => Cow::Borrowed(method),
    }
}

/// The first `Host` and `User-Agent` lines: one pass over a request's few headers (a standard
/// name compares as a tag), two hashed lookups in a map of many.
fn host_and_user_agent(headers: &HeaderMap) -> (Option<&HeaderValue>, Option<&HeaderValue>) {
    const SCAN_HEADER_NAMES: usize = 16;
    if headers.keys_len() > SCAN_HEADER_NAMES {
        return (headers.get(HOST), headers.get(USER_AGENT));
    }
    let (mut host, mut user_agent) = (None, None);
    for (name, value) in headers {
        if *name == HOST {
            host.get_or_insert(value);
        } else if *name == USER_AGENT {
            user_agent.get_or_insert(value);
        }
    }
    (host, user_agent)
}

fn request_attributes(
    info: &RequestInfo<'_>,
    peer: Option<SocketAddr>,
    memos: &Memos,
) -> Vec<KeyValue> {
    // Room for every attribute below plus the status code and error.type set at the end: the
    // span's vector never grows.
    let mut attrs = Vec::with_capacity(13);
    httpconv::push_method(&mut attrs, info.method);
    let path = info.uri.path();
    match info.route {
        // A route without parameters is the path itself: one shared string for both.
        Some(route) if route == path => {
            let route = memos.route(route);
            attrs.push(KeyValue::new(URL_PATH, route.clone()));
            attrs.push(KeyValue::new(HTTP_ROUTE, route));
        }
        Some(route) => {
            attrs.push(KeyValue::new(URL_PATH, path.to_owned()));
            attrs.push(KeyValue::new(HTTP_ROUTE, memos.route(route)));
        }
        None => attrs.push(KeyValue::new(URL_PATH, path.to_owned())),
    }
    if let Some(query) = info.uri.query() {
        // Credentials never reach the span: the same redaction as a client's `url.full`.
        attrs.push(KeyValue::new(URL_QUERY, redacted_query(query).into_owned()));
    }
    let scheme: &'static str = match info.uri.scheme_str() {
        Some("https") => "https",
        _ => "http",
    };
    attrs.push(KeyValue::new(URL_SCHEME, scheme));
    let (host_header, user_agent) = host_and_user_agent(info.headers);
    // `host[:port]`: the URI authority (HTTP/2), else the Host header (HTTP/1.1).
    let authority = match info.uri.authority() {
        Some(authority) => Some(authority.as_str().as_bytes()),
        None => host_header.map(HeaderValue::as_bytes),
    };
    if let Some((host, port)) = authority.and_then(|a| memos.server(a)) {
        attrs.push(KeyValue::new(SERVER_ADDRESS, host));
        let port = port.unwrap_or(if scheme == "https" { 443 } else { 80 });
        attrs.push(KeyValue::new(SERVER_PORT, i64::from(port)));
    }
    let version = match info.version {
        Version::HTTP_09 => Some("0.9"),
        Version::HTTP_10 => Some("1.0"),
        Version::HTTP_11 => Some("1.1"),
        Version::HTTP_2 => Some("2"),
        Version::HTTP_3 => Some("3"),
        _ => None,
    };
    if let Some(v) = version {
        attrs.push(KeyValue::new(NETWORK_PROTOCOL_VERSION, v));
    }
    if let Some(ua) = user_agent.and_then(|v| memos.user_agent(v)) {
        attrs.push(KeyValue::new(USER_AGENT_ORIGINAL, ua));
    }
    if let Some(peer) = peer {
        attrs.push(KeyValue::new(CLIENT_ADDRESS, memos.peer(peer.ip())));
    }
    attrs
}

#[cfg(test)]
mod tests {
    use super::host_and_user_agent;
    use http::{HeaderMap, HeaderName, HeaderValue};

    /// The first line of each, whether the map is read in one pass or by lookups.
    #[test]
    fn host_and_user_agent_are_the_first_lines() {
        for others in [0, 3, 40] {
            let mut headers = HeaderMap::new();
            for i in 0..others {
                let name = HeaderName::from_bytes(format!("x-other-{i}").as_bytes());
                headers.append(
                    name.unwrap_or(HeaderName::from_static("x")),
                    HeaderValue::from_static("1"),
                );
            }
            headers.append("user-agent", HeaderValue::from_static("ua/1"));
            headers.append("host", HeaderValue::from_static("a.example:81"));
            headers.append("user-agent", HeaderValue::from_static("ua/2"));
            headers.append("host", HeaderValue::from_static("b.example"));
            let (host, user_agent) = host_and_user_agent(&headers);
            assert_eq!(
                host.map(HeaderValue::as_bytes),
                Some(&b"a.example:81"[..]),
                "{others}"
            );
            assert_eq!(
                user_agent.map(HeaderValue::as_bytes),
                Some(&b"ua/1"[..]),
                "{others}"
            );
        }
        assert_eq!(host_and_user_agent(&HeaderMap::new()), (None, None));
    }
}
