//! [`LensLayer`], [`LensService`] and [`ResponseFuture`].

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, ready};

use axum::extract::MatchedPath;
use http::header::{HOST, HeaderName, HeaderValue, USER_AGENT};
use http::{HeaderMap, Method, Request, Response, Uri, Version};
use lens_core::policy::{InboundPolicy, InboundRequest};
use lens_core::semconv::known_http_method;
use lens_core::traceresponse::{TRACERESPONSE_HEADER, TraceResponse};
use lens_core::{HeaderCarrier, W3cPropagator};
use opentelemetry::trace::{Link, SpanBuilder, SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue};
use pin_project_lite::pin_project;
use tower_layer::Layer;
use tower_service::Service;

use crate::body::LensBody;
use crate::extract::RequestContext;
use crate::memo::Memos;
use lens_core::random_flag::SpanStarter;

pub(crate) const ERROR_TYPE: &str = "error.type";
const HTTP_RESPONSE_STATUS_CODE: &str = "http.response.status_code";

/// What the filter and the span-name callback see of a request.
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

type FilterFn = dyn Fn(&RequestInfo<'_>) -> bool + Send + Sync;
type NameFn = dyn Fn(&RequestInfo<'_>) -> Cow<'static, str> + Send + Sync;

#[derive(Clone)]
struct Config {
    tracer: Arc<dyn SpanStarter>,
    propagator: Option<W3cPropagator>,
    policy: InboundPolicy,
    filter: Option<Arc<FilterFn>>,
    name: Option<Arc<NameFn>>,
    traceresponse: bool,
    random_flag_on_new_traces: bool,
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("propagator", &self.propagator)
            .field("policy", &self.policy)
            .field("filter", &self.filter.is_some())
            .field("name", &self.name.is_some())
            .field("traceresponse", &self.traceresponse)
            .field("random_flag_on_new_traces", &self.random_flag_on_new_traces)
            .finish_non_exhaustive()
    }
}

/// A tower [`Layer`] that gives every HTTP request a SERVER span (SPEC.md §7, stable HTTP
/// semantic conventions).
///
/// Per request it extracts the W3C trace context and baggage with lens-core through the
/// [`InboundPolicy`], starts a SERVER span (child of the remote span when trusted, a new root
/// with a link to it under Link, a plain new root under Ignore), makes it the current
/// [`Context`] while the inner service runs, and ends it when the response body has been sent
/// in full.
///
/// Put it on the axum `Router` with [`Router::layer`](axum::Router::layer), so that the span is
/// named after the matched route (`GET /users/{id}`); on any other tower HTTP service the name is
/// the method alone.
///
/// ```
/// use axum::{Router, routing::get};
/// use lens_axum::LensLayer;
/// use lens_core::policy::InboundPolicy;
///
/// let app: Router = Router::new()
///     .route("/users/{id}", get(|| async { "hello" }))
///     .route("/healthz", get(|| async { "ok" }))
///     .layer(
///         LensLayer::new()
///             .with_policy(InboundPolicy::trust_private_networks())
///             .with_filter(|req| req.uri.path() != "/healthz")
///             .with_traceresponse(true),
///     );
/// ```
#[derive(Clone, Debug)]
pub struct LensLayer {
    config: Arc<Config>,
}

impl Default for LensLayer {
    fn default() -> Self {
        Self::new()
    }
}

impl LensLayer {
    /// Trusts every request (NeMo Lens parity), traces every request, uses the tracer
    /// `lens-axum` of the global tracer provider as it is when this is called (install the
    /// provider first, or use [`LensLayer::with_tracer`]) and lens's process-wide propagator.
    pub fn new() -> Self {
        LensLayer {
            config: Arc::new(Config {
                tracer: Arc::new(opentelemetry::global::tracer("lens-axum")),
                propagator: None,
                policy: InboundPolicy::trust_all(),
                filter: None,
                name: None,
                traceresponse: false,
                random_flag_on_new_traces: true,
            }),
        }
    }

    fn config_mut(&mut self) -> &mut Config {
        Arc::make_mut(&mut self.config)
    }

    /// Creates spans with this tracer.
    pub fn with_tracer<T>(mut self, tracer: T) -> Self
    where
        T: Tracer + Send + Sync + 'static,
        T::Span: Send + Sync + 'static,
    {
        self.config_mut().tracer = Arc::new(tracer);
        self
    }

    /// Decides per request whether its propagated context is trusted (default: trust all).
    ///
    /// ```
    /// use lens_axum::LensLayer;
    /// use lens_core::policy::{InboundDecision, InboundPolicy};
    ///
    /// // Continue the caller's trace only when it comes from a private network
    /// // (needs `into_make_service_with_connect_info::<SocketAddr>()`) ...
    /// let private = LensLayer::new().with_policy(InboundPolicy::trust_private_networks());
    /// // ... or only when the gateway marked the request as authenticated.
    /// let gateway = LensLayer::new().with_policy(
    ///     InboundPolicy::trust_if_header("x-gateway-authenticated").otherwise(InboundDecision::Ignore),
    /// );
    /// # let _ = (private, gateway);
    /// ```
    pub fn with_policy(mut self, policy: InboundPolicy) -> Self {
        self.config_mut().policy = policy;
        self
    }

    /// Extracts with this propagator instead of lens's process-wide one.
    pub fn with_propagator(mut self, propagator: W3cPropagator) -> Self {
        self.config_mut().propagator = Some(propagator);
        self
    }

    /// Traces only the requests for which `filter` returns `true` (e.g. not health checks).
    /// Requests filtered out get no span and no context.
    pub fn with_filter<F>(mut self, filter: F) -> Self
    where
        F: Fn(&RequestInfo<'_>) -> bool + Send + Sync + 'static,
    {
        self.config_mut().filter = Some(Arc::new(filter));
        self
    }

    /// Names spans with `name` instead of `{METHOD} {route}` / `{METHOD}`.
    pub fn with_span_name<F>(mut self, name: F) -> Self
    where
        F: Fn(&RequestInfo<'_>) -> Cow<'static, str> + Send + Sync + 'static,
    {
        self.config_mut().name = Some(Arc::new(name));
        self
    }

    /// Adds a `traceresponse` header (W3C Trace Context Level 2) with the SERVER span's trace id
    /// and span id to every traced response. Off by default.
    pub fn with_traceresponse(mut self, on: bool) -> Self {
        self.config_mut().traceresponse = on;
        self
    }

    /// Whether a trace this layer starts (no trusted remote parent) is sent on with the W3C
    /// random flag (`02`), as Trace Context Level 2 asks of random trace ids. On by default,
    /// which is right for opentelemetry_sdk's default random id generator; turn it off with an id
    /// generator whose trace ids are not random.
    pub fn with_random_flag_on_new_traces(mut self, on: bool) -> Self {
        self.config_mut().random_flag_on_new_traces = on;
        self
    }
}

impl<S> Layer<S> for LensLayer {
    type Service = LensService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        LensService {
            inner,
            config: Arc::clone(&self.config),
            memos: Arc::default(),
        }
    }
}

/// The service [`LensLayer`] wraps around an HTTP service.
#[derive(Clone, Debug)]
pub struct LensService<S> {
    inner: S,
    config: Arc<Config>,
    /// Attribute values this service (one route, under `Router::layer`) shares between requests.
    memos: Arc<Memos>,
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for LensService<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
{
    type Response = Response<LensBody<ResBody>>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<ReqBody>) -> Self::Future {
        let config = &*self.config;
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
        if let Some(filter) = &config.filter
            && !filter(&info)
        {
            return ResponseFuture {
                inner: self.inner.call(req),
                span: None,
                traceresponse: false,
            };
        }

        let peer = peer_addr(&req);
        let carrier = HeaderCarrier(req.headers());
        // `from_headers`: lens-core reads the HeaderMap directly (static names, no Vec per header).
        let mut inbound_req = InboundRequest::from_headers(&carrier);
        if let Some(peer) = peer {
            inbound_req = inbound_req.with_peer(peer.ip());
        }
        let inbound = match &config.propagator {
            Some(p) => config.policy.extract_with(p, &inbound_req),
            None => config.policy.extract(&inbound_req),
        };

        let name = match &config.name {
            Some(name) => name(&info),
            None => default_span_name(info.method, route),
        };
        let attributes = request_attributes(&info, peer, &self.memos);
        // The fields set directly: `with_attributes` would collect the vector again.
        let builder = SpanBuilder {
            name,
            span_kind: Some(SpanKind::Server),
            attributes: Some(attributes),
            links: inbound.link.map(|link| vec![Link::with_context(link)]),
            ..SpanBuilder::default()
        };
        // The random flag of the trace goes out again (SPEC §1) even where the SDK drops it.
        let cx = config
            .tracer
            .start(builder, &inbound.parent, config.random_flag_on_new_traces);

        req.extensions_mut().insert(RequestContext(cx.clone()));
        let inner = {
            let _guard = cx.clone().attach();
            self.inner.call(req)
        };
        ResponseFuture {
            inner,
            span: Some(cx),
            traceresponse: config.traceresponse,
        }
    }
}

pin_project! {
    /// The response future of [`LensService`]: runs the inner future with the SERVER span as
    /// the current [`Context`] and records the response status.
    pub struct ResponseFuture<F> {
        #[pin]
        inner: F,
        span: Option<Context>,
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
    type Output = Result<Response<LensBody<B>>, E>;

    fn poll(self: Pin<&mut Self>, task: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let Some(cx) = this.span.as_ref() else {
            let result = ready!(this.inner.poll(task));
            return Poll::Ready(result.map(|res| res.map(LensBody::untraced)));
        };
        let guard = cx.clone().attach();
        // A panicking handler must still end its SERVER span with status Error (the runtime
        // drops this future only after the unwind is caught, when nothing says it panicked).
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| this.inner.poll(task)));
        drop(guard);
        let result = match polled {
            Ok(Poll::Ready(result)) => result,
            Ok(Poll::Pending) => return Poll::Pending,
            Err(panic) => {
                if let Some(cx) = this.span.take() {
                    let span = cx.span();
                    span.set_attribute(KeyValue::new(ERROR_TYPE, "panic"));
                    span.set_status(Status::error("handler panicked"));
                    span.end();
                }
                std::panic::resume_unwind(panic);
            }
        };
        let Some(cx) = this.span.take() else {
            // Unreachable: checked above. Keep the response untraced rather than panic.
            return Poll::Ready(result.map(|res| res.map(LensBody::untraced)));
        };
        match result {
            Ok(mut res) => {
                let status = res.status();
                {
                    let span = cx.span();
                    span.set_attribute(KeyValue::new(
                        HTTP_RESPONSE_STATUS_CODE,
                        i64::from(status.as_u16()),
                    ));
                    if status.is_server_error() {
                        span.set_attribute(KeyValue::new(ERROR_TYPE, status_str(status.as_u16())));
                        span.set_status(Status::error(""));
                    }
                    if *this.traceresponse
                        && let Some(tr) = TraceResponse::from_span_context(span.span_context())
                        && let Ok(value) = HeaderValue::from_bytes(&tr.encode())
                    {
                        res.headers_mut()
                            .insert(HeaderName::from_static(TRACERESPONSE_HEADER), value);
                    }
                }
                Poll::Ready(Ok(res.map(|body| LensBody::traced(body, cx))))
            }
            Err(err) => {
                let span = cx.span();
                span.set_attribute(KeyValue::new(ERROR_TYPE, std::any::type_name::<E>()));
                span.set_status(Status::error("service failed"));
                span.end();
                Poll::Ready(Err(err))
            }
        }
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

fn status_str(code: u16) -> String {
    code.to_string()
}

/// `host[:port]` from the Host header (HTTP/1.1) or the URI authority (HTTP/2).
fn server_host_port<'a>(info: &RequestInfo<'a>) -> Option<(&'a str, Option<u16>)> {
    let authority = match info.uri.authority() {
        Some(a) => a.as_str(),
        None => info.headers.get(HOST)?.to_str().ok()?,
    };
    split_host_port(authority)
}

fn split_host_port(authority: &str) -> Option<(&str, Option<u16>)> {
    // Backwards byte scans: on an authority's few bytes they cost a fraction of the `memrchr`
    // that `rsplit_once` sets up. `@` and `:` are ASCII, so the indices are char boundaries.
    let authority = match authority.bytes().rposition(|b| b == b'@') {
        Some(at) => authority.get(at + 1..)?,
        None => authority,
    };
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = after.strip_prefix(':').and_then(|p| p.parse().ok());
        return Some((host, port));
    }
    match authority.bytes().rposition(|b| b == b':') {
        Some(colon) => Some((
            authority.get(..colon)?,
            authority.get(colon + 1..)?.parse().ok(),
        )),
        None if authority.is_empty() => None,
        None => Some((authority, None)),
    }
}

fn request_attributes(
    info: &RequestInfo<'_>,
    peer: Option<SocketAddr>,
    memos: &Memos,
) -> Vec<KeyValue> {
    // Room for every attribute below plus the status code and error.type set at the end: the
    // span's vector never grows.
    let mut attrs = Vec::with_capacity(12);
    match known_http_method(info.method) {
        Some(m) => attrs.push(KeyValue::new("http.request.method", m)),
        None => {
            attrs.push(KeyValue::new("http.request.method", "_OTHER"));
            attrs.push(KeyValue::new(
                "http.request.method_original",
                info.method.as_str().to_owned(),
            ));
        }
    }
    let path = info.uri.path();
    match info.route {
        // A route without parameters is the path itself: one shared string for both.
        Some(route) if route == path => {
            let route = memos.route(route);
            attrs.push(KeyValue::new("url.path", route.clone()));
            attrs.push(KeyValue::new("http.route", route));
        }
        Some(route) => {
            attrs.push(KeyValue::new("url.path", path.to_owned()));
            attrs.push(KeyValue::new("http.route", memos.route(route)));
        }
        None => attrs.push(KeyValue::new("url.path", path.to_owned())),
    }
    let scheme: &'static str = match info.uri.scheme_str() {
        Some("https") => "https",
        _ => "http",
    };
    attrs.push(KeyValue::new("url.scheme", scheme));
    if let Some((host, port)) = server_host_port(info) {
        attrs.push(KeyValue::new("server.address", memos.host(host)));
        let port = port.unwrap_or(if scheme == "https" { 443 } else { 80 });
        attrs.push(KeyValue::new("server.port", i64::from(port)));
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
        attrs.push(KeyValue::new("network.protocol.version", v));
    }
    if let Some(ua) = info.headers.get(USER_AGENT).and_then(|v| v.to_str().ok()) {
        attrs.push(KeyValue::new("user_agent.original", memos.user_agent(ua)));
    }
    if let Some(peer) = peer {
        attrs.push(KeyValue::new("client.address", memos.peer(peer.ip())));
    }
    attrs
}

#[cfg(test)]
mod tests {
    use super::split_host_port;

    #[test]
    fn host_and_port_are_split() {
        assert_eq!(
            split_host_port("a.example:8080"),
            Some(("a.example", Some(8080)))
        );
        assert_eq!(split_host_port("a.example"), Some(("a.example", None)));
        assert_eq!(split_host_port("[::1]:9"), Some(("::1", Some(9))));
        assert_eq!(split_host_port("[::1]"), Some(("::1", None)));
        assert_eq!(split_host_port(""), None);
        assert_eq!(
            split_host_port("user:pw@a.example:81"),
            Some(("a.example", Some(81)))
        );
        assert_eq!(split_host_port("a.example:x"), Some(("a.example", None)));
    }
}
