//! Server side: a tower layer for tonic servers that extracts the caller's context through an
//! [`InboundPolicy`] and runs each call in a SERVER span.

use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use lens_core::policy::{InboundPolicy, InboundRequest};
use lens_core::{HeaderCarrier, W3cPropagator};
use opentelemetry::KeyValue;
use opentelemetry::global::{self, BoxedTracer};
use opentelemetry::trace::{Link, SpanKind, Tracer};
use tower_service::Service;

use crate::call::{CallConfig, layer_and_service, push_server_address, rpc_attributes};
use crate::response::{CallSpan, ResponseFuture};
use crate::status::SpanSide;
use crate::{GrpcMethod, TRACER_NAME};

type ServerConfig<T> = CallConfig<T, InboundPolicy>;

/// A tower layer for tonic servers (`Server::builder().layer(ServerLayer::new())`).
///
/// For each call it extracts the caller's context from the request metadata through the
/// [`InboundPolicy`] (trust: the remote span is the parent and baggage is kept; link: a new trace
/// with a Link to it; ignore), starts a SERVER span named `{package.Service}/{Method}` with
/// `rpc.system` = `grpc`, `rpc.service`, `rpc.method`, `server.address` and `server.port`, and
/// makes it current while the handler and its response stream run. The span gets
/// `rpc.grpc.status_code` from `grpc-status` in the response headers or trailers and ends then;
/// UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL, UNAVAILABLE and DATA_LOSS set its status
/// to Error.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use lens_core::policy::InboundPolicy;
/// use lens_tonic::ServerLayer;
///
/// let layer = ServerLayer::new().with_inbound_policy(InboundPolicy::trust_private_networks());
/// tonic::transport::Server::builder()
///     .layer(layer)
///     // .add_service(...)
///     # .add_routes(tonic::service::Routes::default())
///     .serve("127.0.0.1:50051".parse()?)
///     .await?;
/// # Ok(()) }
/// ```
pub struct ServerLayer<T = BoxedTracer> {
    config: ServerConfig<T>,
}

impl<T> std::fmt::Debug for ServerLayer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerLayer")
            .field("policy", &self.config.policy)
            .finish_non_exhaustive()
    }
}

impl Default for ServerLayer {
    fn default() -> Self {
        Self::new()
    }
}

impl ServerLayer {
    /// Spans from the global tracer provider (scope `lens-tonic`, looked up now: install the
    /// provider first), lens's process-wide propagator, every caller trusted.
    pub fn new() -> Self {
        Self::with_tracer(global::tracer(TRACER_NAME))
    }
}

impl<T> ServerLayer<T>
where
    T: Tracer + Send + Sync + 'static,
    T::Span: Send + Sync + 'static,
{
    /// Spans from `tracer`.
    pub fn with_tracer(tracer: T) -> Self {
        ServerLayer {
            config: CallConfig::new(tracer, InboundPolicy::trust_all()),
        }
    }

    /// Decides per request whether the caller's context is trusted (SPEC.md §7).
    pub fn with_inbound_policy(mut self, policy: InboundPolicy) -> Self {
        self.config.policy = policy;
        self
    }

    /// Uses `propagator` instead of lens's process-wide one.
    pub fn with_propagator(mut self, propagator: W3cPropagator) -> Self {
        self.config.propagator = Some(Arc::new(propagator));
        self
    }
}

/// The service of [`ServerLayer`].
pub struct ServerService<S, T = BoxedTracer> {
    inner: S,
    config: Arc<ServerConfig<T>>,
}

layer_and_service!(ServerLayer, ServerService);

/// The peer and local addresses tonic's transport records on each request.
fn connect_info<B>(request: &http::Request<B>) -> (Option<SocketAddr>, Option<SocketAddr>) {
    #[cfg(feature = "transport")]
    {
        if let Some(info) = request
            .extensions()
            .get::<tonic::transport::server::TcpConnectInfo>()
        {
            return (info.remote_addr(), info.local_addr());
        }
    }
    let _ = request;
    (None, None)
}

/// `server.address` and `server.port`: the `:authority` (or `Host`) the client used, else the
/// local address the connection arrived on.
fn server_address<B>(
    request: &http::Request<B>,
    local: Option<SocketAddr>,
    attributes: &mut Vec<KeyValue>,
) {
    let authority = request.uri().authority().cloned().or_else(|| {
        request
            .headers()
            .get(http::header::HOST)
            .and_then(|h| http::uri::Authority::try_from(h.as_bytes()).ok())
    });
    let (host, port) = match &authority {
        Some(a) => (
            Some(a.host().to_owned()),
            a.port_u16().or_else(|| local.map(|l| l.port())),
        ),
        None => (local.map(|l| l.ip().to_string()), local.map(|l| l.port())),
    };
    push_server_address(attributes, host, port);
}

impl<S, T, B, ResB> Service<http::Request<B>> for ServerService<S, T>
where
    S: Service<http::Request<B>, Response = http::Response<ResB>>,
    T: Tracer + Send + Sync + 'static,
    T::Span: Send + Sync + 'static,
{
    type Response = http::Response<crate::ResponseBody<ResB>>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let config = &*self.config;
        let (peer, local) = connect_info(&request);
        let inbound = {
            let carrier = HeaderCarrier(request.headers());
            let mut inbound_request = InboundRequest::from_headers(&carrier);
            if let Some(peer) = peer {
                inbound_request = inbound_request.with_peer(peer.ip());
            }
            config
                .policy
                .extract_with(config.propagator(), &inbound_request)
        };

        let method = GrpcMethod::from_path(request.uri().path());
        let mut attributes = rpc_attributes(&method);
        server_address(&request, local, &mut attributes);
        let cx = config.start_span(
            &method,
            SpanKind::Server,
            attributes,
            inbound.link.map(Link::with_context),
            &inbound.parent,
        );

        let future = {
            let _guard = cx.clone().attach();
            self.inner.call(request)
        };
        ResponseFuture::new(
            future,
            CallSpan {
                cx,
                side: SpanSide::Server,
            },
        )
    }
}
