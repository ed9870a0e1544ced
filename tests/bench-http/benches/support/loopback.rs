//! Loopback variants shared by `benches/http.rs` and `examples/loopback.rs` (`perf stat` /
//! `perf record` of one variant at a time): a hello-world axum handler on 127.0.0.1 and a
//! reqwest load generator in the same process, on one tokio runtime.
//!
//! Fairness rules the variants follow:
//! * every variant has its own client (same builder, same pool size, HTTP/1.1) and its own
//!   warmed connections; requests are built by the same code;
//! * the server variants differ only in the layer on the server; every request carries the same
//!   sampled `traceparent`, so that lens and axum-tracing-opentelemetry sample every request;
//! * the client variants talk to the same bare axum server (no layer: the server does no
//!   trace work for either), differ only in `ClientMiddleware`, and carry no hand-made
//!   `traceparent` (the parent is the `opentelemetry::Context` in the request's extensions, as
//!   a real caller's; only lens puts a `traceparent` on the wire);
//! * the tracing subscriber axum-tracing-opentelemetry needs is filtered as its documented
//!   production setup (`info`, `otel::tracing=trace`), so that hyper-util's `debug!`/`trace!`
//!   events do not cost every variant a dispatch;
//! * each traced variant has its own SDK provider (every span sampled, `BatchSpanProcessor`
//!   into a discarding exporter): an export thread only works for the spans its variant made.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::{Router, routing::get};
use lens_axum::ServerLayer;
use lens_reqwest::ClientMiddleware;
use opentelemetry::Context;
use opentelemetry::trace::{TraceContextExt, Tracer, TracerProvider as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchSpanProcessor, SdkTracer, SdkTracerProvider, SpanData, SpanExporter,
};
use tokio::runtime::Runtime;

#[path = "span_floor.rs"]
mod span_floor;

/// Concurrent connections (tasks) of the load generator.
pub(crate) const CONNECTIONS: usize = 8;
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// An exporter that drops every batch.
#[derive(Debug)]
struct Discard;

impl SpanExporter for Discard {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        std::hint::black_box(batch);
        Ok(())
    }
}

/// Every span sampled (parent-based, always on), batch span processor into [`Discard`]. The
/// provider is leaked (it must outlive every variant); the variant keeps a handle to flush it.
fn tracer(name: &'static str) -> (SdkTracer, SdkTracerProvider) {
    let provider = SdkTracerProvider::builder()
        .with_span_processor(BatchSpanProcessor::builder(Discard).build())
        .build();
    let tracer = provider.tracer(name);
    std::mem::forget(provider.clone());
    (tracer, provider)
}

fn hello() -> Router {
    Router::new().route("/hello", get(|| async { "Hello, World!" }))
}

async fn serve(router: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(
            listener,
            router.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap()
    });
    addr
}

fn client_builder() -> reqwest_middleware::ClientBuilder {
    reqwest_middleware::ClientBuilder::new(
        reqwest::Client::builder()
            .pool_max_idle_per_host(CONNECTIONS)
            .http1_only()
            .build()
            .unwrap(),
    )
}

/// `requests` GETs over [`CONNECTIONS`] concurrent tasks sharing one pooled client.
async fn load(
    client: &reqwest_middleware::ClientWithMiddleware,
    url: &str,
    parent: &Context,
    traceparent: bool,
    requests: usize,
) {
    let mut tasks = Vec::with_capacity(CONNECTIONS);
    for _ in 0..CONNECTIONS {
        let client = client.clone();
        let url = url.to_owned();
        let parent = parent.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..requests / CONNECTIONS {
                let mut req = client.get(&url).with_extension(parent.clone());
                if traceparent {
                    req = req.header("traceparent", TRACEPARENT);
                }
                let res = req.send().await.unwrap();
                assert!(res.status().is_success());
                std::hint::black_box(res.bytes().await.unwrap());
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

/// One loopback variant: `run(n)` sends `n` requests and returns the wall time they took.
pub(crate) struct Variant {
    pub(crate) name: &'static str,
    pub(crate) run: Box<dyn Fn(usize) -> Duration>,
}

/// The runtime every server and load generator runs on (leaked: the servers never stop).
pub(crate) fn runtime() -> &'static Runtime {
    Box::leak(Box::new(
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap(),
    ))
}

/// A variant whose spans go to `provider` (`None`: it makes none).
fn variant(
    rt: &'static Runtime,
    name: &'static str,
    client: reqwest_middleware::ClientWithMiddleware,
    addr: SocketAddr,
    parent: Context,
    traceparent: bool,
    provider: Option<SdkTracerProvider>,
) -> Variant {
    let url = format!("http://{addr}/hello");
    Variant {
        name,
        run: Box::new(move |n| {
            let start = Instant::now();
            rt.block_on(load(&client, &url, &parent, traceparent, n));
            // The variant's own export work, finished within its own time: none of it is left
            // to the export thread while the next variant is measured.
            if let Some(provider) = &provider {
                provider.force_flush().unwrap();
            }
            start.elapsed()
        }),
    }
}

/// The global tracing subscriber axum-tracing-opentelemetry needs (set once per process).
fn install_tracing_subscriber(tracer: SdkTracer) {
    use tracing_subscriber::layer::SubscriberExt;
    let filter = tracing_subscriber::filter::Targets::new()
        .with_default(tracing::Level::INFO)
        .with_target("otel::tracing", tracing::Level::TRACE);
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(tracer))
        .with(filter);
    tracing::subscriber::set_global_default(subscriber).unwrap();
}

/// opentelemetry-instrumentation-tower's server layer: tracing only (lens records no metrics),
/// spans from a provider of its own. It takes its tracer from the global tracer provider when it
/// is built, so the provider is installed globally just before (no other variant uses the global
/// one); it extracts with the global propagator, which the benches set to lens's
/// (`lens_core::install`), as axum-tracing-opentelemetry does.
pub(crate) fn instrumentation_tower_layer() -> (
    opentelemetry_instrumentation_tower::http::server::Layer,
    SdkTracerProvider,
) {
    let provider = SdkTracerProvider::builder()
        .with_span_processor(BatchSpanProcessor::builder(Discard).build())
        .build();
    opentelemetry::global::set_tracer_provider(provider.clone());
    let layer = opentelemetry_instrumentation_tower::http::server::LayerBuilder::builder()
        .with_metrics(false)
        .build()
        .unwrap();
    (layer, provider)
}

/// A server variant: `router` on its own listener, loaded by its own client with a sampled
/// `traceparent` on every request.
fn server_variant(
    rt: &'static Runtime,
    name: &'static str,
    router: axum::Router,
    provider: Option<SdkTracerProvider>,
) -> Variant {
    let addr = rt.block_on(serve(router));
    variant(
        rt,
        name,
        client_builder().build(),
        addr,
        Context::new(),
        true,
        provider,
    )
}

/// Bare axum (the baseline), axum + the span floor, the span floor with the conventions'
/// attribute vector, and the least layer with the behaviour `ServerLayer` must have (three
/// references: `support/span_floor.rs`), axum + `ServerLayer`, axum +
/// opentelemetry-instrumentation-tower's layer, axum + axum-tracing-opentelemetry's layers.
/// Which of them are built is chosen by `names` (all when empty).
pub(crate) fn server_variants(rt: &'static Runtime, names: &[&str]) -> Vec<Variant> {
    let wanted = |n: &str| names.is_empty() || names.contains(&n);
    let mut out = Vec::new();
    if wanted("bare_axum") {
        out.push(server_variant(rt, "bare_axum", hello(), None));
    }
    for (name, attributes) in [("span_floor", false), ("floor_with_attributes", true)] {
        if wanted(name) {
            let (tracer, provider) = tracer(name);
            let layer = span_floor::SpanFloorLayer { tracer, attributes };
            out.push(server_variant(
                rt,
                name,
                hello().layer(layer),
                Some(provider),
            ));
        }
    }
    if wanted("minimal_conventions") {
        let (tracer, provider) = tracer("minimal-conventions");
        let layer = span_floor::MinimalServerLayer(tracer);
        let router = hello().layer(layer);
        out.push(server_variant(
            rt,
            "minimal_conventions",
            router,
            Some(provider),
        ));
    }
    if wanted("lens_layer") {
        let (tracer, provider) = tracer("lens-axum");
        let layer = ServerLayer::new().with_tracer(tracer);
        out.push(server_variant(
            rt,
            "lens_layer",
            hello().layer(layer),
            Some(provider),
        ));
    }
    if wanted("otel_instrumentation_tower") {
        let (layer, provider) = instrumentation_tower_layer();
        let router = hello().layer(layer);
        out.push(server_variant(
            rt,
            "otel_instrumentation_tower",
            router,
            Some(provider),
        ));
    }
    if wanted("axum_tracing_opentelemetry") {
        let (tracer, provider) = tracer("axum-tracing-opentelemetry");
        install_tracing_subscriber(tracer);
        let router = hello()
            .layer(axum_tracing_opentelemetry::middleware::OtelInResponseLayer)
            .layer(axum_tracing_opentelemetry::middleware::OtelAxumLayer::default());
        out.push(server_variant(
            rt,
            "axum_tracing_opentelemetry",
            router,
            Some(provider),
        ));
    }
    out
}

/// reqwest through reqwest-middleware alone (the baseline), with the span floor's middleware and
/// with the plain conventions-following middleware (two references: `support/span_floor.rs`) and
/// with `ClientMiddleware`, all against one bare axum server; every request's extensions hold a
/// Context with a sampled span.
pub(crate) fn client_variants(rt: &'static Runtime, names: &[&str]) -> Vec<Variant> {
    let wanted = |n: &str| names.is_empty() || names.contains(&n);
    let addr = rt.block_on(serve(hello()));
    let (tracer, provider) = tracer("lens-reqwest");
    let parent = Context::new().with_span(tracer.start("parent"));
    let mut out = Vec::new();
    if wanted("reqwest_middleware") {
        out.push(variant(
            rt,
            "reqwest_middleware",
            client_builder().build(),
            addr,
            parent.clone(),
            false,
            None,
        ));
    }
    if wanted("span_floor_middleware") {
        let (floor_tracer, floor_provider) = self::tracer("span-floor-client");
        out.push(variant(
            rt,
            "span_floor_middleware",
            client_builder()
                .with(span_floor::SpanFloorMiddleware(floor_tracer))
                .build(),
            addr,
            parent.clone(),
            false,
            Some(floor_provider),
        ));
    }
    if wanted("plain_client_middleware") {
        let (plain_tracer, plain_provider) = self::tracer("plain-client");
        out.push(variant(
            rt,
            "plain_client_middleware",
            client_builder()
                .with(span_floor::PlainClientMiddleware(plain_tracer))
                .build(),
            addr,
            parent.clone(),
            false,
            Some(plain_provider),
        ));
    }
    if wanted("lens_middleware") {
        out.push(variant(
            rt,
            "lens_middleware",
            client_builder()
                .with(ClientMiddleware::new().with_tracer(tracer))
                .build(),
            addr,
            parent,
            false,
            Some(provider),
        ));
    }
    out
}
