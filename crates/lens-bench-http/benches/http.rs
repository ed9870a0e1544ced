//! `cargo bench -p lens-bench-http --bench http` (in `cargo xtask bench http`): a hello-world
//! axum handler on loopback under a load generator in the same process (fixed request count,
//! several connections).
//!
//! * `server/*`: bare axum, axum + `LensLayer`, axum + axum-tracing-opentelemetry's layer
//!   (with tracing-opentelemetry); every request sampled, batch span processor into a discarding
//!   exporter.
//! * `client/*`: reqwest through reqwest-middleware alone, and through `LensMiddleware`.
//!
//! Criterion measures each variant in its own block; after each group the bench also runs the
//! variants alternately (A, B, A, B, ... for `ROUNDS` rounds) and prints the median ratio of
//! throughputs against the group's baseline, so that machine noise hits both sides alike.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::{Router, routing::get};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lens_axum::LensLayer;
use lens_reqwest::LensMiddleware;
use opentelemetry::Context;
use opentelemetry::trace::{TraceContextExt, Tracer, TracerProvider as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchSpanProcessor, SdkTracer, SdkTracerProvider, SpanData, SpanExporter,
};
use tokio::runtime::Runtime;

/// Requests per measured iteration, and concurrent connections.
const REQUESTS: usize = 256;
const CONNECTIONS: usize = 8;
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[derive(Debug)]
struct Discard;

impl SpanExporter for Discard {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        std::hint::black_box(batch);
        Ok(())
    }
}

fn provider() -> (SdkTracerProvider, SdkTracer) {
    let provider = SdkTracerProvider::builder()
        .with_span_processor(BatchSpanProcessor::builder(Discard).build())
        .build();
    let tracer = provider.tracer("bench");
    (provider, tracer)
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

/// `REQUESTS` GETs over `CONNECTIONS` concurrent tasks sharing one pooled client.
async fn load(client: &reqwest_middleware::ClientWithMiddleware, url: &str, parent: &Context) {
    let mut tasks = Vec::with_capacity(CONNECTIONS);
    for _ in 0..CONNECTIONS {
        let client = client.clone();
        let url = url.to_owned();
        let parent = parent.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..REQUESTS / CONNECTIONS {
                let res = client
                    .get(&url)
                    .header("traceparent", TRACEPARENT)
                    .with_extension(parent.clone())
                    .send()
                    .await
                    .unwrap();
                assert!(res.status().is_success());
                std::hint::black_box(res.bytes().await.unwrap());
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

fn plain_client() -> reqwest_middleware::ClientWithMiddleware {
    reqwest_middleware::ClientBuilder::new(
        reqwest::Client::builder()
            .pool_max_idle_per_host(CONNECTIONS)
            .build()
            .unwrap(),
    )
    .build()
}

/// One way of running `REQUESTS` requests, timed.
type Run = Box<dyn Fn() -> Duration>;

/// Rounds of the alternated comparison.
const ROUNDS: usize = 31;

/// Criterion measurement of every variant, then `ROUNDS` alternated rounds (each variant once per
/// round, in turn); prints each variant's median throughput ratio against the first (baseline).
fn alternated(c: &mut Criterion, group: &str, rt: &Runtime, variants: Vec<(&'static str, Run)>) {
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(REQUESTS as u64));
    g.sample_size(20);
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(3));
    // Warm every variant (connections, caches) before any measurement.
    for (_, run) in &variants {
        run();
    }
    let _ = rt;
    for (name, run) in &variants {
        g.bench_function(*name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    total += run();
                }
                total
            })
        });
    }
    g.finish();
    let mut ratios: Vec<Vec<f64>> = vec![Vec::with_capacity(ROUNDS); variants.len()];
    for _ in 0..ROUNDS {
        let times: Vec<f64> = variants
            .iter()
            .map(|(_, run)| run().as_secs_f64())
            .collect();
        for (i, t) in times.iter().enumerate() {
            // throughput ratio = baseline time / variant time
            ratios[i].push(times[0] / t);
        }
    }
    for ((name, _), mut r) in variants.iter().zip(ratios) {
        r.sort_by(f64::total_cmp);
        println!(
            "{group}/{name}: throughput {:.1}% of {} (median of {ROUNDS} alternated rounds, {REQUESTS} requests each; quartiles {:.1}%..{:.1}%)",
            100.0 * r[ROUNDS / 2],
            variants[0].0,
            100.0 * r[ROUNDS / 4],
            100.0 * r[3 * ROUNDS / 4],
        );
    }
}

fn servers(c: &mut Criterion) {
    let rt = Box::leak(Box::new(
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap(),
    ));
    lens_core::install().unwrap();
    let (_lens_provider, lens_tracer) = provider();
    let (ato_provider, ato_tracer) = provider();
    std::mem::forget(ato_provider);
    std::mem::forget(_lens_provider);
    {
        use tracing_subscriber::layer::SubscriberExt;
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(ato_tracer));
        tracing::subscriber::set_global_default(subscriber).unwrap();
    }
    let (bare, lens, ato) = rt.block_on(async {
        (
            serve(hello()).await,
            serve(hello().layer(LensLayer::new().with_tracer(lens_tracer))).await,
            serve(
                hello()
                    .layer(axum_tracing_opentelemetry::middleware::OtelInResponseLayer)
                    .layer(axum_tracing_opentelemetry::middleware::OtelAxumLayer::default()),
            )
            .await,
        )
    });
    let client = plain_client();
    let runner = |addr: SocketAddr| -> Run {
        let client = client.clone();
        let url = format!("http://{addr}/hello");
        let rt: &'static Runtime = rt;
        Box::new(move || {
            let start = Instant::now();
            rt.block_on(load(&client, &url, &Context::new()));
            start.elapsed()
        })
    };
    alternated(
        c,
        "server",
        rt,
        vec![
            ("bare_axum", runner(bare)),
            ("lens_layer", runner(lens)),
            ("axum_tracing_opentelemetry", runner(ato)),
        ],
    );

    // Client side: the same bare server, reqwest-middleware alone vs. with LensMiddleware.
    let (client_provider, client_tracer) = provider();
    std::mem::forget(client_provider);
    let parent = Context::new().with_span(client_tracer.start("parent"));
    let with_lens = reqwest_middleware::ClientBuilder::new(
        reqwest::Client::builder()
            .pool_max_idle_per_host(CONNECTIONS)
            .build()
            .unwrap(),
    )
    .with(LensMiddleware::new().with_tracer(client_tracer))
    .build();
    let url = format!("http://{bare}/hello");
    let client_run = |client: reqwest_middleware::ClientWithMiddleware| -> Run {
        let url = url.clone();
        let parent = parent.clone();
        let rt: &'static Runtime = rt;
        Box::new(move || {
            let start = Instant::now();
            rt.block_on(load(&client, &url, &parent));
            start.elapsed()
        })
    };
    alternated(
        c,
        "client",
        rt,
        vec![
            ("reqwest_middleware", client_run(plain_client())),
            ("lens_middleware", client_run(with_lens)),
        ],
    );
}

criterion_group!(benches, servers);
criterion_main!(benches);
