//! Server side: a tower layer for tonic servers that extracts the caller's context through an
//! [`InboundPolicy`] and runs each call in a SERVER span.

use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use lens_core::policy::InboundPolicy;
use lens_span::httpconv::split_host_port;
use lens_span::metrics::Instruments;
use opentelemetry::KeyValue;
use tower_service::Service;

use crate::adapter::RequestInfo;
use crate::call::{CallConfig, layer_and_service, push_server_address};
use crate::response::ResponseFuture;
use crate::status::SpanSide;

/// A tower layer for tonic servers (`Server::builder().layer(ServerLayer::new())`).
///
/// For each call it extracts the caller's context from the request metadata through the
/// [`InboundPolicy`] (trust: the remote span is the parent and baggage is kept; link: a new trace
/// with a Link to it; ignore), starts a SERVER span named `{package.Service}/{Method}` with the
/// RPC semantic-convention attributes (see [`lens_span::rpc`] for the
/// `OTEL_SEMCONV_STABILITY_OPT_IN` choice), `server.address` and `server.port`, and makes it
/// current while the handler and its response stream run. The span gets the status from
/// `grpc-status` in the response headers or trailers and ends then; UNKNOWN, DEADLINE_EXCEEDED,
/// UNIMPLEMENTED, INTERNAL, UNAVAILABLE and DATA_LOSS set its status to Error and `error.type`.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use lens_core::policy::InboundPolicy;
/// use lens_tonic::ServerLayer;
///
/// let layer = ServerLayer::new()
///     .with_inbound_policy(InboundPolicy::trust_private_networks())
///     .with_filter(|call| call.method.service() != Some("grpc.health.v1.Health"));
/// tonic::transport::Server::builder()
///     .layer(layer)
///     // .add_service(...)
///     # .add_routes(tonic::service::Routes::default())
///     .serve("127.0.0.1:50051".parse()?)
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ServerLayer {
    config: CallConfig<InboundPolicy>,
}

impl ServerLayer {
    /// Spans from the global tracer provider (scope `lens-tonic`, looked up now: install the
    /// provider first), lens's process-wide propagator, every caller trusted, the RPC
    /// conventions `OTEL_SEMCONV_STABILITY_OPT_IN` names now.
    pub fn new() -> Self {
        ServerLayer {
            config: CallConfig::new(InboundPolicy::trust_all(), Instruments::RpcServer),
        }
    }
}

/// The service of [`ServerLayer`].
pub struct ServerService<S> {
    inner: S,
    config: Arc<CallConfig<InboundPolicy>>,
}

layer_and_service!(
    ServerLayer,
    ServerService,
    with_inbound_policy(InboundPolicy)
);

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
    let authority = match request.uri().authority() {
        Some(authority) => Some(authority.as_str()),
        None => request
            .headers()
            .get(http::header::HOST)
            .and_then(|h| h.to_str().ok()),
    };
    let (host, port) = match authority.and_then(split_host_port) {
        Some((host, port)) => (
            Some(host.to_owned()),
            port.or_else(|| local.map(|l| l.port())),
        ),
        None => (local.map(|l| l.ip().to_string()), local.map(|l| l.port())),
    };
    push_server_address(attributes, host, port);
}

impl<S, B, ResB> Service<http::Request<B>> for ServerService<S>
where
    S: Service<http::Request<B>, Response = http::Response<ResB>>,
{
    type Response = http::Response<crate::response::ResponseBody<ResB>>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let config = &*self.config;
        let options = &config.options;
        let info = RequestInfo::of(&request);
        let method = info.method;
        if !options.filter_decision(&info).span {
            return ResponseFuture::untraced(self.inner.call(request));
        }
        let (peer, local) = connect_info(&request);
        let inbound = options.extract_inbound(request.headers(), peer.map(|p| p.ip()));

        let mut attributes = config.rpc_attributes(&method);
        server_address(&request, local, &mut attributes);
        attributes.extend(lens_span::new_root::cause(request.headers(), &inbound));
        let span = options.start_server(&info, || method.span_name(), attributes, inbound);

        let future = span.in_scope(|| self.inner.call(request));
        ResponseFuture::new(future, span, config.call_end(SpanSide::Server))
    }
}
