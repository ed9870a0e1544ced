//! Client side: a tonic [`Interceptor`] that injects the current Context into request metadata,
//! and a tower layer for channels that also starts a CLIENT span per call.

use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use lens_core::W3cPropagator;
use lens_core::policy::OutboundPolicy;
use opentelemetry::Context;
use opentelemetry::global::{self, BoxedTracer};
use opentelemetry::trace::{SpanKind, Tracer};
use tonic::service::Interceptor;
use tower_service::Service;

use crate::call::{CallConfig, layer_and_service, push_server_address, rpc_attributes};
use crate::metadata::{MetadataCarrier, set_metadata};
use crate::response::{CallSpan, ResponseFuture};
use crate::status::SpanSide;
use crate::{GrpcMethod, TRACER_NAME};

/// A tonic [`Interceptor`] that injects the current Context (`traceparent`, `tracestate`,
/// `baggage`) into each request's metadata.
///
/// It starts no span: the request carries the caller's current span as parent. Use
/// [`ClientLayer`] for a CLIENT span per call. An interceptor does not see the destination, so an
/// [`OutboundPolicy`] is applied for one host given up front ([`LensInterceptor::for_host`]).
///
/// ```
/// use lens_tonic::LensInterceptor;
/// use tonic::service::Interceptor;
///
/// let mut interceptor = LensInterceptor::new();
/// let request = interceptor.call(tonic::Request::new(())).unwrap();
/// // No span is current here, so nothing was injected.
/// assert!(request.metadata().get("traceparent").is_none());
/// ```
#[derive(Clone, Debug)]
pub struct LensInterceptor {
    trace_context: bool,
    baggage: bool,
    propagator: Option<Arc<W3cPropagator>>,
}

impl Default for LensInterceptor {
    fn default() -> Self {
        Self::new()
    }
}

impl LensInterceptor {
    /// Injects trace context and baggage with lens's process-wide propagator.
    pub fn new() -> Self {
        LensInterceptor {
            trace_context: true,
            baggage: true,
            propagator: None,
        }
    }

    /// Injects what `policy` allows for `host` (the host this client's channel talks to).
    pub fn for_host(policy: &OutboundPolicy, host: &str) -> Self {
        let d = policy.decide(host);
        LensInterceptor {
            trace_context: d.trace_context,
            baggage: d.baggage,
            propagator: None,
        }
    }

    /// Uses `propagator` instead of lens's process-wide one.
    pub fn with_propagator(mut self, propagator: W3cPropagator) -> Self {
        self.propagator = Some(Arc::new(propagator));
        self
    }
}

impl Interceptor for LensInterceptor {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        if self.trace_context || self.baggage {
            let propagator = match &self.propagator {
                Some(p) => p,
                None => lens_core::propagator(),
            };
            let mut carrier = MetadataCarrier(request.metadata_mut());
            Context::map_current(|cx| {
                propagator.inject_parts(cx, &mut carrier, self.trace_context, self.baggage);
            });
        }
        Ok(request)
    }
}

/// Writes into an HTTP header map with the rules of [`MetadataCarrier`].
struct GrpcHeaders<'a>(&'a mut http::HeaderMap);

impl opentelemetry::propagation::Injector for GrpcHeaders<'_> {
    fn set(&mut self, key: &str, value: String) {
        set_metadata(self.0, key, value);
    }
}

/// Where a [`ClientLayer`] sends: the outbound policy and the server address given.
#[derive(Clone, Debug)]
struct ClientTarget {
    outbound: OutboundPolicy,
    server: Option<(Arc<str>, u16)>,
}

type ClientConfig<T> = CallConfig<T, ClientTarget>;

/// A tower layer for tonic channels: a CLIENT span per call (named `{package.Service}/{Method}`,
/// with the RPC semantic-convention attributes and `rpc.grpc.status_code`), injected into the
/// request metadata as the parent of the server's span. Every code but `OK` marks the span as an
/// error.
///
/// The parent of the CLIENT span is the Context current when the call is made.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use lens_tonic::ClientLayer;
/// use tower_layer::Layer;
///
/// let channel = tonic::transport::Endpoint::from_static("http://127.0.0.1:50051").connect().await?;
/// let channel = ClientLayer::new().with_server_address("127.0.0.1", 50051).layer(channel);
/// let _client = tonic::client::Grpc::new(channel);
/// # Ok(()) }
/// ```
pub struct ClientLayer<T = BoxedTracer> {
    config: ClientConfig<T>,
}

impl<T> std::fmt::Debug for ClientLayer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientLayer")
            .field("outbound", &self.config.policy.outbound)
            .field("server", &self.config.policy.server)
            .finish_non_exhaustive()
    }
}

impl Default for ClientLayer {
    fn default() -> Self {
        Self::new()
    }
}

impl ClientLayer {
    /// Spans from the global tracer provider (scope `lens-tonic`, looked up now: install the
    /// provider first), lens's process-wide propagator, sending to every host.
    pub fn new() -> Self {
        Self::with_tracer(global::tracer(TRACER_NAME))
    }
}

impl<T> ClientLayer<T>
where
    T: Tracer + Send + Sync + 'static,
    T::Span: Send + Sync + 'static,
{
    /// Spans from `tracer`.
    pub fn with_tracer(tracer: T) -> Self {
        let target = ClientTarget {
            outbound: OutboundPolicy::send_everywhere(),
            server: None,
        };
        ClientLayer {
            config: CallConfig::new(tracer, target),
        }
    }

    /// Decides per destination host what goes out (the request URI's host, else the address
    /// given to [`ClientLayer::with_server_address`]).
    pub fn with_outbound_policy(mut self, policy: OutboundPolicy) -> Self {
        self.config.policy.outbound = policy;
        self
    }

    /// Uses `propagator` instead of lens's process-wide one.
    pub fn with_propagator(mut self, propagator: W3cPropagator) -> Self {
        self.config.propagator = Some(Arc::new(propagator));
        self
    }

    /// The server's address and port, for `server.address`/`server.port` and the outbound
    /// policy. tonic channels send requests with only a path; a request URI with an authority
    /// takes precedence.
    pub fn with_server_address(mut self, host: impl Into<String>, port: u16) -> Self {
        let host: String = host.into();
        self.config.policy.server = Some((Arc::from(host), port));
        self
    }
}

/// The service of [`ClientLayer`].
pub struct ClientService<S, T = BoxedTracer> {
    inner: S,
    config: Arc<ClientConfig<T>>,
}

layer_and_service!(ClientLayer, ClientService);

impl<S, T, B, ResB> Service<http::Request<B>> for ClientService<S, T>
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

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        let config = &*self.config;
        let method = GrpcMethod::from_path(request.uri().path());
        let server = &config.policy.server;
        let (host, port) = match request.uri().authority() {
            Some(a) => (
                Some(Arc::<str>::from(a.host())),
                a.port_u16().or_else(|| server.as_ref().map(|(_, p)| *p)),
            ),
            None => match server {
                Some((h, p)) => (Some(Arc::clone(h)), Some(*p)),
                None => (None, None),
            },
        };

        let mut attributes = rpc_attributes(&method);
        push_server_address(&mut attributes, host.clone(), port);
        let cx = Context::map_current(|parent| {
            config.start_span(&method, SpanKind::Client, attributes, None, parent)
        });

        config.policy.outbound.inject_with(
            config.propagator(),
            &cx,
            host.as_deref().unwrap_or(""),
            &mut GrpcHeaders(request.headers_mut()),
        );

        let future = self.inner.call(request);
        ResponseFuture::new(
            future,
            CallSpan {
                cx,
                side: SpanSide::Client,
            },
        )
    }
}
