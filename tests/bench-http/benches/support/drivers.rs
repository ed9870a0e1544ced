//! Per-request drivers without sockets, shared by `benches/per_request.rs` and
//! `examples/per_request.rs` (callgrind): each `Driver` runs one request through a layer (or
//! through the bare service) to completion, body included, polling with a no-op waker.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::pin;
use std::task::{Context as TaskContext, Poll, Waker};

use axum::Router;
use axum::extract::ConnectInfo;
use axum::routing::get;
use lens_axum::ServerLayer as HttpServerLayer;
use lens_reqwest::ClientMiddleware;
use lens_testkit::fixtures;
use lens_tonic::{ClientInterceptor, ServerLayer};
use opentelemetry::Context;
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{BatchSpanProcessor, SdkTracerProvider, SpanData, SpanExporter};
use tower_service::Service;

#[path = "span_floor.rs"]
mod span_floor;

pub(crate) const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
pub(crate) const GRPC_PATH: &str = "/lens.bench.Echo/Echo";

/// An exporter that drops every batch.
#[derive(Debug)]
pub(crate) struct Discard;

impl SpanExporter for Discard {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        std::hint::black_box(batch);
        Ok(())
    }
}

/// Every span sampled, batch span processor into [`Discard`] (as the loopback benches).
pub(crate) fn provider() -> SdkTracerProvider {
    SdkTracerProvider::builder()
        .with_span_processor(BatchSpanProcessor::builder(Discard).build())
        .build()
}

/// Polls `future` to completion with a no-op waker; the drivers' futures never wait.
pub(crate) fn run_now<F: Future>(future: F) -> F::Output {
    let mut cx = TaskContext::from_waker(Waker::noop());
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

/// Reads a body to its end (which is when lens-axum ends the span).
fn drain<B: http_body::Body + Unpin>(mut body: B) {
    let mut cx = TaskContext::from_waker(Waker::noop());
    loop {
        match std::pin::Pin::new(&mut body).poll_frame(&mut cx) {
            Poll::Ready(Some(Ok(frame))) => drop(std::hint::black_box(frame)),
            Poll::Ready(None) | Poll::Ready(Some(Err(_))) => return,
            Poll::Pending => {}
        }
    }
}

/// One way of handling a request, by name.
pub(crate) struct Driver {
    pub(crate) name: &'static str,
    pub(crate) run: Box<dyn FnMut()>,
}

fn hello() -> Router {
    Router::new().route("/hello", get(|| async { "Hello, World!" }))
}

/// The request the loopback bench's reqwest client sends, as axum sees it.
fn axum_request() -> http::Request<axum::body::Body> {
    let mut req = http::Request::builder()
        .uri("/hello")
        .header("host", "127.0.0.1:40000")
        .header("accept", "*/*")
        .header("traceparent", TRACEPARENT)
        .body(axum::body::Body::empty())
        .unwrap_or_default();
    let peer: SocketAddr = SocketAddr::from(([127, 0, 0, 1], 40001));
    req.extensions_mut().insert(ConnectInfo(peer));
    req
}

fn axum_driver(name: &'static str, router: Router) -> Driver {
    // `with_state` turns every handler into a route (layers applied) once, as `axum::serve`'s
    // `into_make_service*` does; a bare `into_service` would do it again for every request.
    let mut svc = router
        .with_state::<()>(())
        .into_service::<axum::body::Body>();
    Driver {
        name,
        run: Box::new(move || {
            let res = match run_now(svc.call(axum_request())) {
                Ok(res) => res,
                Err(never) => match never {},
            };
            drain(res.into_body());
        }),
    }
}

/// Bare axum, and axum with `ServerLayer` (tracer of `provider`).
pub(crate) fn axum_drivers(provider: &SdkTracerProvider) -> Vec<Driver> {
    vec![
        axum_driver("axum_bare", hello()),
        axum_driver(
            "axum_lens_layer",
            hello().layer(HttpServerLayer::new().with_tracer(provider.tracer("bench"))),
        ),
    ]
}

/// The last middleware: answers at once, never touches the network.
struct Answer;

#[async_trait::async_trait]
impl reqwest_middleware::Middleware for Answer {
    async fn handle(
        &self,
        req: reqwest::Request,
        _extensions: &mut http::Extensions,
        _next: reqwest_middleware::Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        std::hint::black_box(&req);
        Ok(reqwest::Response::from(http::Response::new(
            "Hello, World!",
        )))
    }
}

fn reqwest_driver(
    name: &'static str,
    client: reqwest_middleware::ClientWithMiddleware,
    parent: Context,
) -> Driver {
    Driver {
        name,
        run: Box::new(move || {
            let res = run_now(
                client
                    .get("http://127.0.0.1:40000/hello")
                    .with_extension(parent.clone())
                    .send(),
            );
            drop(std::hint::black_box(res));
        }),
    }
}

/// reqwest-middleware alone, and with `ClientMiddleware` (a sampled parent span in the request's
/// extensions and no hand-made `traceparent`, as in the loopback bench).
pub(crate) fn reqwest_drivers(provider: &SdkTracerProvider) -> Vec<Driver> {
    use opentelemetry::trace::Tracer as _;
    let tracer = provider.tracer("bench-client");
    let parent = Context::new().with_span(tracer.start("parent"));
    let client = reqwest::Client::new();
    let bare = reqwest_middleware::ClientBuilder::new(client.clone())
        .with(Answer)
        .build();
    let lens = reqwest_middleware::ClientBuilder::new(client)
        .with(ClientMiddleware::new().with_tracer(tracer))
        .with(Answer)
        .build();
    vec![
        reqwest_driver("reqwest_middleware_bare", bare, parent.clone()),
        reqwest_driver("reqwest_lens_middleware", lens, parent),
    ]
}

/// A gRPC service that answers a trailers-only OK at once.
#[derive(Clone)]
struct TrailersOnlyOk;

impl Service<http::Request<()>> for TrailersOnlyOk {
    type Response = http::Response<http_body_util::Empty<bytes::Bytes>>;
    type Error = Infallible;
    type Future = std::future::Ready<Result<Self::Response, Infallible>>;
    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, _: http::Request<()>) -> Self::Future {
        let mut response = http::Response::new(http_body_util::Empty::new());
        response
            .headers_mut()
            .insert("grpc-status", http::HeaderValue::from_static("0"));
        std::future::ready(Ok(response))
    }
}

/// The caller's context of every gRPC call: a sampled remote parent and three baggage entries
/// (as lens-tonic's grpc bench).
fn caller_context() -> Context {
    fixtures::w3c_context(
        true,
        &[],
        &[
            ("user.id", "alice"),
            ("job.name", "pretrain llama"),
            ("rank", "3"),
        ],
    )
}

fn grpc_request() -> http::Request<()> {
    let mut req = http::Request::new(());
    *req.uri_mut() = http::Uri::from_static(GRPC_PATH);
    req
}

/// Bare tonic-style service, and the `ClientInterceptor` (client, caller context current) plus the
/// `ServerLayer` around it (server): lens's whole per-call work on both sides, without the wire.
pub(crate) fn grpc_drivers(provider: &SdkTracerProvider) -> Vec<Driver> {
    let mut bare = TrailersOnlyOk;
    let mut layered = tower_layer_call(
        ServerLayer::new().with_tracer(provider.tracer("bench-server")),
        TrailersOnlyOk,
    );
    let mut interceptor = ClientInterceptor::new();
    let caller = caller_context();
    vec![
        Driver {
            name: "tonic_bare",
            run: Box::new(move || {
                let res = run_now(bare.call(grpc_request()));
                drop(std::hint::black_box(res));
            }),
        },
        Driver {
            name: "tonic_interceptor_and_server_layer",
            run: Box::new(move || {
                use tonic::service::Interceptor as _;
                let metadata = {
                    let _guard = caller.clone().attach();
                    match interceptor.call(tonic::Request::new(())) {
                        Ok(r) => r.into_parts().0.into_headers(),
                        Err(_) => http::HeaderMap::new(),
                    }
                };
                let mut req = grpc_request();
                *req.headers_mut() = metadata;
                let res = run_now(layered.call(req));
                drop(std::hint::black_box(res));
            }),
        },
    ]
}

fn tower_layer_call<L, S>(layer: L, inner: S) -> L::Service
where
    L: tower::Layer<S>,
{
    layer.layer(inner)
}

/// The span floor of `span_floor.rs` on axum and on reqwest-middleware: a reference for what
/// lens adds beyond the least any OpenTelemetry instrumentation does; and the plain
/// conventions-following client middleware beside it.
#[allow(dead_code)]
pub(crate) fn span_floor_drivers(provider: &SdkTracerProvider) -> Vec<Driver> {
    use opentelemetry::trace::Tracer as _;
    let tracer = provider.tracer("bench-client");
    let parent = Context::new().with_span(tracer.start("parent"));
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(span_floor::SpanFloorMiddleware(tracer))
        .with(Answer)
        .build();
    let plain = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(span_floor::PlainClientMiddleware(
            provider.tracer("bench-plain"),
        ))
        .with(Answer)
        .build();
    vec![
        axum_driver(
            "axum_span_floor",
            hello().layer(span_floor::SpanFloorLayer {
                tracer: provider.tracer("bench"),
                attributes: false,
            }),
        ),
        axum_driver(
            "axum_minimal_conventions",
            hello().layer(span_floor::MinimalServerLayer(
                provider.tracer("bench-minimal"),
            )),
        ),
        reqwest_driver("reqwest_span_floor", client, parent.clone()),
        reqwest_driver("reqwest_plain_client", plain, parent),
    ]
}

/// Every driver: the pairs (bare, lens), the span floors, opentelemetry-instrumentation-tower, and
/// lens and opentelemetry-instrumentation-tower with metrics on (into `meters`).
#[allow(dead_code)]
pub(crate) fn all(
    provider: &SdkTracerProvider,
    meters: &opentelemetry_sdk::metrics::SdkMeterProvider,
) -> Vec<Driver> {
    let mut v = axum_drivers(provider);
    v.extend(reqwest_drivers(provider));
    v.extend(grpc_drivers(provider));
    v.extend(span_floor_drivers(provider));
    v.push(instrumentation_tower_driver(provider));
    v.extend(axum_metrics_drivers(provider, meters));
    v.extend(reqwest_metrics_drivers(provider, meters));
    v.push(instrumentation_tower_metrics_driver(provider, meters));
    v
}

/// opentelemetry-instrumentation-tower's layer on axum, per request (tracing only; its tracer
/// comes from the global tracer provider, set to `provider` here).
#[allow(dead_code)]
pub(crate) fn instrumentation_tower_driver(provider: &SdkTracerProvider) -> Driver {
    opentelemetry::global::set_tracer_provider(provider.clone());
    let layer = opentelemetry_instrumentation_tower::http::server::LayerBuilder::builder()
        .with_metrics(false)
        .build()
        .unwrap_or_else(|e| panic!("opentelemetry-instrumentation-tower layer: {e}"));
    axum_driver("axum_otel_instrumentation_tower", hello().layer(layer))
}

/// axum-tracing-opentelemetry's layers on axum, per request: its spans go through the global
/// tracing subscriber, which the caller installs.
#[allow(dead_code)]
pub(crate) fn axum_tracing_opentelemetry_driver() -> Driver {
    axum_driver(
        "axum_tracing_opentelemetry",
        hello()
            .layer(axum_tracing_opentelemetry::middleware::OtelInResponseLayer)
            .layer(axum_tracing_opentelemetry::middleware::OtelAxumLayer::default()),
    )
}

/// lens's axum layer with metrics on: the duration alone, then with the opt-in active requests
/// and body size.
#[allow(dead_code)]
pub(crate) fn axum_metrics_drivers(
    provider: &SdkTracerProvider,
    meters: &opentelemetry_sdk::metrics::SdkMeterProvider,
) -> Vec<Driver> {
    use opentelemetry::metrics::MeterProvider as _;
    let layer = || {
        HttpServerLayer::new()
            .with_tracer(provider.tracer("bench"))
            .with_meter(meters.meter("bench"))
    };
    vec![
        axum_driver("axum_lens_layer_metrics", hello().layer(layer())),
        axum_driver(
            "axum_lens_layer_metrics_all",
            hello().layer(layer().with_active_requests(true).with_body_sizes(true)),
        ),
    ]
}

/// lens's reqwest middleware with metrics on: the duration alone, then with the opt-in body
/// sizes.
#[allow(dead_code)]
pub(crate) fn reqwest_metrics_drivers(
    provider: &SdkTracerProvider,
    meters: &opentelemetry_sdk::metrics::SdkMeterProvider,
) -> Vec<Driver> {
    use opentelemetry::metrics::MeterProvider as _;
    use opentelemetry::trace::Tracer as _;
    let tracer = provider.tracer("bench-client");
    let parent = Context::new().with_span(tracer.start("parent"));
    let client = |body_sizes: bool| {
        reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
            .with(
                ClientMiddleware::new()
                    .with_tracer(tracer.clone())
                    .with_meter(meters.meter("bench"))
                    .with_body_sizes(body_sizes),
            )
            .with(Answer)
            .build()
    };
    vec![
        reqwest_driver(
            "reqwest_lens_middleware_metrics",
            client(false),
            parent.clone(),
        ),
        reqwest_driver("reqwest_lens_middleware_metrics_all", client(true), parent),
    ]
}

/// opentelemetry-instrumentation-tower with traces and metrics on (its metrics go to the global
/// meter provider, set here to `meters`).
#[allow(dead_code)]
pub(crate) fn instrumentation_tower_metrics_driver(
    provider: &SdkTracerProvider,
    meters: &opentelemetry_sdk::metrics::SdkMeterProvider,
) -> Driver {
    opentelemetry::global::set_tracer_provider(provider.clone());
    opentelemetry::global::set_meter_provider(meters.clone());
    let layer = opentelemetry_instrumentation_tower::http::server::LayerBuilder::builder()
        .with_metrics(true)
        .build()
        .unwrap_or_else(|e| panic!("opentelemetry-instrumentation-tower layer: {e}"));
    axum_driver(
        "axum_otel_instrumentation_tower_metrics",
        hello().layer(layer),
    )
}
