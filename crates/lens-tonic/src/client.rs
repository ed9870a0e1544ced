//! Client side: a tonic [`Interceptor`] that injects the current Context into request metadata,
//! and a tower layer for channels that also starts a CLIENT span per call.

use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use lens_core::W3cPropagator;
use lens_core::policy::{OutboundDecision, OutboundPolicy};
use lens_span::httpconv::split_host_port;
use lens_span::metrics::Instruments;
use lens_span::{FilterDecision, HeaderInjector, Propagation};
use opentelemetry::Context;
use opentelemetry::propagation::Injector;
use tonic::metadata::MetadataMap;
use tonic::service::Interceptor;
use tower_service::Service;

use crate::adapter::RequestInfo;
use crate::call::{CallConfig, layer_and_service, push_server_address};
use crate::metadata::{MetadataCarrier, set_metadata};
use crate::response::ResponseFuture;
use crate::status::SpanSide;

type InterceptorFilter = dyn Fn(&tonic::Request<()>) -> FilterDecision + Send + Sync;

/// A tonic [`Interceptor`] that injects the current Context (`traceparent`, `tracestate`,
/// `baggage`) into each request's metadata, replacing any trace context already there.
///
/// It starts no span: the request carries the caller's current span as parent. Use
/// [`ClientLayer`] for a CLIENT span per call. An interceptor does not see the destination, so an
/// [`OutboundPolicy`] is applied for one host given up front ([`ClientInterceptor::for_host`]).
///
/// ```
/// use lens_tonic::ClientInterceptor;
/// use tonic::service::Interceptor;
///
/// let mut interceptor = ClientInterceptor::new();
/// let request = interceptor.call(tonic::Request::new(())).unwrap();
/// // No span is current here, so nothing was injected.
/// assert!(request.metadata().get("traceparent").is_none());
/// ```
#[derive(Clone)]
pub struct ClientInterceptor {
    decision: OutboundDecision,
    propagation: Propagation,
    filter: Option<Arc<InterceptorFilter>>,
}

impl std::fmt::Debug for ClientInterceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientInterceptor")
            .field("decision", &self.decision)
            .field("propagation", &self.propagation)
            .field("filter", &self.filter.is_some())
            .finish()
    }
}

impl Default for ClientInterceptor {
    fn default() -> Self {
        Self::new()
    }
}

impl ClientInterceptor {
    /// Injects trace context and baggage with lens's process-wide propagator.
    pub fn new() -> Self {
        ClientInterceptor {
            decision: OutboundDecision {
                trace_context: true,
                baggage: true,
            },
            propagation: Propagation::lens(),
            filter: None,
        }
    }

    /// Injects what `policy` allows for `host` (the host this client's channel talks to).
    pub fn for_host(policy: &OutboundPolicy, host: &str) -> Self {
        ClientInterceptor {
            decision: policy.decide(host),
            ..Self::new()
        }
    }

    /// Uses `propagator` instead of lens's process-wide one.
    pub fn with_propagator(mut self, propagator: W3cPropagator) -> Self {
        self.propagation = Propagation::with(propagator);
        self
    }

    /// Uses the propagator installed globally in opentelemetry instead of lens's.
    pub fn with_global_propagator(mut self) -> Self {
        self.propagation = Propagation::global();
        self
    }

    /// Decides per request whether the context is injected (`false`, or a decision without
    /// `inject`: the request goes as it is).
    pub fn with_filter<F, D>(mut self, filter: F) -> Self
    where
        F: Fn(&tonic::Request<()>) -> D + Send + Sync + 'static,
        D: Into<FilterDecision>,
    {
        self.filter = Some(Arc::new(move |req: &tonic::Request<()>| filter(req).into()));
        self
    }
}

impl HeaderInjector for MetadataCarrier<&mut MetadataMap> {
    fn headers_mut(&mut self) -> &mut http::HeaderMap {
        self.0.as_mut()
    }
    fn injector(&mut self) -> &mut dyn Injector {
        self
    }
}

impl Interceptor for ClientInterceptor {
    fn call(
        &mut self,
        mut request: tonic::Request<()>,
    ) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(filter) = &self.filter
            && !filter(&request).inject
        {
            return Ok(request);
        }
        let mut carrier = MetadataCarrier(request.metadata_mut());
        Context::map_current(|cx| self.propagation.inject(self.decision, cx, &mut carrier));
        Ok(request)
    }
}

/// Writes into an HTTP header map with the rules of [`MetadataCarrier`].
struct GrpcHeaders<'a>(&'a mut http::HeaderMap);

impl Injector for GrpcHeaders<'_> {
    fn set(&mut self, key: &str, value: String) {
        set_metadata(self.0, key, value);
    }
}

impl HeaderInjector for GrpcHeaders<'_> {
    fn headers_mut(&mut self) -> &mut http::HeaderMap {
        self.0
    }
    fn injector(&mut self) -> &mut dyn Injector {
        self
    }
}

/// A tower layer for tonic channels: a CLIENT span per call (named `{package.Service}/{Method}`,
/// with the RPC semantic-convention attributes, see [`lens_span::rpc`]), injected into the
/// request metadata as the parent of the server's span (replacing any trace context already
/// there). Every code but `OK` marks the span as an error.
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
#[derive(Clone)]
pub struct ClientLayer {
    config: CallConfig<OutboundPolicy>,
}

impl ClientLayer {
    /// Spans from the global tracer provider (scope `lens-tonic`, looked up now: install the
    /// provider first), lens's process-wide propagator, sending to every host, the RPC
    /// conventions `OTEL_SEMCONV_STABILITY_OPT_IN` names now.
    pub fn new() -> Self {
        ClientLayer {
            config: CallConfig::new(OutboundPolicy::send_everywhere(), Instruments::RpcClient),
        }
    }

    /// The server's address and port, for `server.address`/`server.port` and the outbound
    /// policy. tonic channels send requests with only a path; a request URI with an authority
    /// takes precedence.
    pub fn with_server_address(mut self, host: impl Into<String>, port: u16) -> Self {
        let host: String = host.into();
        // `[::1]` or `::1`: the host without brackets, as every adapter writes it.
        let host = match split_host_port(&host) {
            Some((bare, None)) if bare.len() + 2 == host.len() => bare.to_owned(),
            _ => host,
        };
        self.config.server = Some((Arc::from(host), port));
        self
    }
}

/// The service of [`ClientLayer`].
pub struct ClientService<S> {
    inner: S,
    config: Arc<CallConfig<OutboundPolicy>>,
}

layer_and_service!(
    ClientLayer,
    ClientService,
    with_outbound_policy(OutboundPolicy)
);

impl<S, B, ResB> Service<http::Request<B>> for ClientService<S>
where
    S: Service<http::Request<B>, Response = http::Response<ResB>>,
{
    type Response = http::Response<crate::response::ResponseBody<ResB>>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        let config = &*self.config;
        let options = &config.options;
        let info = RequestInfo::of(&request);
        let method = info.method;
        let filter = options.filter_decision(&info);
        if !filter.span && !filter.inject {
            return ResponseFuture::untraced(self.inner.call(request));
        }
        let server = &config.server;
        let (host, port) = match request
            .uri()
            .authority()
            .and_then(|a| split_host_port(a.as_str()))
        {
            Some((host, port)) => (
                Some(Arc::<str>::from(host)),
                port.or_else(|| server.as_ref().map(|(_, p)| *p)),
            ),
            None => match server {
                Some((h, p)) => (Some(Arc::clone(h)), Some(*p)),
                None => (None, None),
            },
        };
        let decision = options.policy().decide(host.as_deref().unwrap_or(""));
        if !filter.span {
            let mut headers = GrpcHeaders(request.headers_mut());
            Context::map_current(|cx| options.propagation().inject(decision, cx, &mut headers));
            return ResponseFuture::untraced(self.inner.call(request));
        }

        let mut attributes = config.rpc_attributes(&method);
        push_server_address(&mut attributes, host, port);
        let span = Context::map_current(|parent| {
            options.start_client(&info, || method.span_name(), attributes, parent)
        });
        if filter.inject {
            options.propagation().inject(
                decision,
                span.context(),
                &mut GrpcHeaders(request.headers_mut()),
            );
        }
        options.record_baggage_sent(&span, filter.inject && decision.baggage);

        let future = self.inner.call(request);
        ResponseFuture::new(future, span, config.call_end(SpanSide::Client))
    }
}
