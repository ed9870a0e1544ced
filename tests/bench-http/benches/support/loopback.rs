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
//!   into a discarding exporter): an export thread only works for the spans its variant made;
//!   each variant with metrics on has its own meter provider (`support/meters.rs`).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::{Router, routing::get};
use lens_axum::ServerLayer;
use lens_reqwest::ClientMiddleware;
use opentelemetry::Context;
use opentelemetry::trace::{TraceContextExt, Tracer, TracerProvider as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::{
    BatchSpanProcessor, SdkTracer, SdkTracerProvider, SpanData, SpanExporter,
};
use tokio::runtime::Runtime;

#[path = "head_end.rs"]
mod head_end;
#[path = "meters.rs"]
mod meters;
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

/// opentelemetry-instrumentation-tower's server layer with traces, and with metrics when
/// `meters` is given, each from a provider of its own. It takes its tracer and meter from the
/// global providers when it is built, so they are installed globally just before (no other
/// variant uses the global ones); it extracts with the global propagator, which the benches set to
/// lens's (`lens_core::install`), as axum-tracing-opentelemetry does.
pub(crate) fn instrumentation_tower_layer(
    meters: Option<SdkMeterProvider>,
) -> (
    opentelemetry_instrumentation_tower::http::server::Layer,
    SdkTracerProvider,
) {
    let provider = SdkTracerProvider::builder()
        .with_span_processor(BatchSpanProcessor::builder(Discard).build())
        .build();
    opentelemetry::global::set_tracer_provider(provider.clone());
    if let Some(meters) = &meters {
        opentelemetry::global::set_meter_provider(meters.clone());
    }
    let layer = opentelemetry_instrumentation_tower::http::server::LayerBuilder::builder()
        .with_metrics(meters.is_some())
        .build()
        .unwrap();
    (layer, provider)
}

/// A meter provider of its own for one variant (`support/meters.rs`), leaked as the tracer
/// providers are.
fn variant_meters() -> SdkMeterProvider {
    let provider = meters::meter_provider();
    std::mem::forget(provider.clone());
    provider
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

/// Every server variant, by name:
/// * `bare_axum`: axum alone (the throughput baseline);
/// * `span_floor`, `floor_with_attributes`, `minimal_conventions`: the span floor, the floor with
///   the conventions' attribute vector, and the least layer with the behaviour `ServerLayer` must
///   have (three references: `support/span_floor.rs`);
/// * `lens_layer`: axum + `ServerLayer`; `lens_layer_metrics`: the same with `with_meter` (the
///   request duration); `lens_layer_metrics_all`: with the opt-in active requests and body sizes
///   too (what opentelemetry-instrumentation-tower records);
/// * `otel_instrumentation_tower`: opentelemetry-instrumentation-tower's layer, traces only;
///   `otel_instrumentation_tower_metrics`: with its metrics (duration, active requests, body
///   sizes);
/// * `axum_tracing_opentelemetry`: axum-tracing-opentelemetry's layers.
pub(crate) const SERVER_VARIANTS: &[&str] = &[
    "bare_axum",
    "span_floor",
    "floor_with_attributes",
    "minimal_conventions",
    "lens_layer",
    "lens_layer_metrics",
    "lens_layer_metrics_all",
    "otel_instrumentation_tower",
    "otel_instrumentation_tower_metrics",
    "axum_tracing_opentelemetry",
];

/// The server variants named in `names` (of [`SERVER_VARIANTS`]; others are skipped), in that
/// order. Each traced variant has its own tracer provider, and meter provider when metrics are on.
pub(crate) fn server_variants(rt: &'static Runtime, names: &[&str]) -> Vec<Variant> {
    names
        .iter()
        .filter_map(|&name| server_variant_named(rt, name))
        .collect()
}

fn server_variant_named(rt: &'static Runtime, name: &str) -> Option<Variant> {
    let name = *SERVER_VARIANTS.iter().find(|n| **n == name)?;
    let (router, provider) = match name {
        "bare_axum" => (hello(), None),
        "span_floor" | "floor_with_attributes" => {
            let (tracer, provider) = tracer(name);
            let attributes = name == "floor_with_attributes";
            let layer = span_floor::SpanFloorLayer { tracer, attributes };
            (hello().layer(layer), Some(provider))
        }
        "minimal_conventions" => {
            let (tracer, provider) = tracer("minimal-conventions");
            (
                hello().layer(span_floor::MinimalServerLayer(tracer)),
                Some(provider),
            )
        }
        "lens_layer" | "lens_layer_metrics" | "lens_layer_metrics_all" => {
            use opentelemetry::metrics::MeterProvider as _;
            let (tracer, provider) = tracer("lens-axum");
            let mut layer = ServerLayer::new().with_tracer(tracer);
            if name != "lens_layer" {
                layer = layer.with_meter(variant_meters().meter("lens-axum"));
            }
            if name == "lens_layer_metrics_all" {
                layer = layer.with_active_requests(true).with_body_sizes(true);
            }
            (hello().layer(layer), Some(provider))
        }
        "otel_instrumentation_tower" | "otel_instrumentation_tower_metrics" => {
            let metrics = (name == "otel_instrumentation_tower_metrics").then(variant_meters);
            let (layer, provider) = instrumentation_tower_layer(metrics);
            (hello().layer(layer), Some(provider))
        }
        "axum_tracing_opentelemetry" => {
            let (tracer, provider) = tracer("axum-tracing-opentelemetry");
            install_tracing_subscriber(tracer);
            let router = hello()
                .layer(axum_tracing_opentelemetry::middleware::OtelInResponseLayer)
                .layer(axum_tracing_opentelemetry::middleware::OtelAxumLayer::default());
            (router, Some(provider))
        }
        _ => return None,
    };
    Some(server_variant(rt, name, router, provider))
}

/// Every client variant, by name, all against one bare axum server; every request's extensions
/// hold a Context with a sampled span:
/// * `reqwest_middleware`: reqwest through reqwest-middleware alone (the throughput baseline);
/// * `span_floor_middleware`, `plain_client_middleware`: the span floor's middleware and the
///   plain conventions-following middleware (two references: `support/span_floor.rs`);
/// * `lens_middleware`: with `ClientMiddleware`; `lens_middleware_metrics`: the same with
///   `with_meter` (the request duration);
/// * `lens_middleware_head_end`: `ClientMiddleware` as it was with its span ended at the response
///   head, the body unwrapped (`support/head_end.rs`): what wrapping the body costs.
pub(crate) const CLIENT_VARIANTS: &[&str] = &[
    "reqwest_middleware",
    "span_floor_middleware",
    "plain_client_middleware",
    "lens_middleware",
    "lens_middleware_metrics",
    "lens_middleware_head_end",
];

/// The client variants named in `names` (of [`CLIENT_VARIANTS`]; others are skipped), in that
/// order, against one bare server.
pub(crate) fn client_variants(rt: &'static Runtime, names: &[&str]) -> Vec<Variant> {
    let addr = rt.block_on(serve(hello()));
    // The parent span is never ended: its provider needs no flush.
    let (parent_tracer, _) = tracer("parent");
    let parent = Context::new().with_span(parent_tracer.start("parent"));
    names
        .iter()
        .filter_map(|&name| {
            let name = *CLIENT_VARIANTS.iter().find(|n| **n == name)?;
            let (client, provider) = match name {
                "reqwest_middleware" => (client_builder().build(), None),
                "span_floor_middleware" => {
                    let (tracer, provider) = self::tracer("span-floor-client");
                    let middleware = span_floor::SpanFloorMiddleware(tracer);
                    (client_builder().with(middleware).build(), Some(provider))
                }
                "plain_client_middleware" => {
                    let (tracer, provider) = self::tracer("plain-client");
                    let middleware = span_floor::PlainClientMiddleware(tracer);
                    (client_builder().with(middleware).build(), Some(provider))
                }
                "lens_middleware" | "lens_middleware_metrics" => {
                    use opentelemetry::metrics::MeterProvider as _;
                    let (tracer, provider) = self::tracer("lens-reqwest");
                    let mut middleware = ClientMiddleware::new().with_tracer(tracer);
                    if name == "lens_middleware_metrics" {
                        middleware = middleware.with_meter(variant_meters().meter("lens-reqwest"));
                    }
                    (client_builder().with(middleware).build(), Some(provider))
                }
                "lens_middleware_head_end" => {
                    let (tracer, provider) = self::tracer("lens-reqwest");
                    let middleware = head_end::HeadEndMiddleware::new(tracer);
                    (client_builder().with(middleware).build(), Some(provider))
                }
                _ => return None,
            };
            Some(variant(
                rt,
                name,
                client,
                addr,
                parent.clone(),
                false,
                provider,
            ))
        })
        .collect()
}
