//! Unary echo over loopback: bare tonic against tonic with lens (the `ClientInterceptor` on the
//! client, the `ServerLayer` on the server, spans recorded by an SDK tracer).
//!
//! The two are measured A/B alternated: each timed call of one configuration is followed by an
//! untimed call of the other, so both see the same machine conditions. Throughput ratio =
//! bare time per call / lens time per call. After criterion's blocks, alternated rounds of
//! many calls each print the median of the per-round ratios (as the HTTP suite does).
//!
//! `cargo bench -p lens-tonic --bench grpc`
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use lens_testkit::fixtures;
use lens_tonic::{ClientInterceptor, JsonCodec, ServerLayer};
use opentelemetry::Context;
use opentelemetry::trace::{FutureExt, TracerProvider as _};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tonic::body::Body;
use tonic::server::{NamedService, UnaryService};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint, Server};
use tonic::{Request, Response, Status};

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
const PATH: &str = "/lens.bench.Echo/Echo";

#[derive(Clone)]
struct Echo;

impl UnaryService<String> for Echo {
    type Response = String;
    type Future = BoxFuture<Result<Response<String>, Status>>;
    fn call(&mut self, request: Request<String>) -> Self::Future {
        Box::pin(async move { Ok(Response::new(request.into_inner())) })
    }
}

#[derive(Clone)]
struct EchoServer;

impl NamedService for EchoServer {
    const NAME: &'static str = "lens.bench.Echo";
}

impl tower_service::Service<http::Request<Body>> for EchoServer {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<http::Response<Body>, Infallible>>;
    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        Box::pin(async move {
            let mut grpc = tonic::server::Grpc::new(JsonCodec::<String, String>::new());
            Ok(grpc.unary(Echo, request).await)
        })
    }
}

async fn listener() -> (tokio::net::TcpListener, SocketAddr) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let a = l.local_addr().unwrap();
    (l, a)
}

async fn connect(addr: SocketAddr) -> Channel {
    Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap()
}

async fn call<T>(grpc: &mut tonic::client::Grpc<T>)
where
    T: tonic::client::GrpcService<Body>,
    T::ResponseBody: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    <T::ResponseBody as http_body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    T::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    grpc.ready().await.map_err(Into::into).unwrap();
    grpc.unary(
        Request::new(String::from("ping")),
        http::uri::PathAndQuery::from_static(PATH),
        JsonCodec::<String, String>::new(),
    )
    .await
    .unwrap();
}

type Bare = tonic::client::Grpc<Channel>;
type Lens = tonic::client::Grpc<InterceptedService<Channel, ClientInterceptor>>;

/// The caller's context of every lens call: a sampled remote parent and three baggage entries.
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

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // Spans are sampled and recorded (no exporter: the cost measured is lens's and the SDK's).
    let provider = SdkTracerProvider::builder().build();
    let tracer = provider.tracer("bench");
    let (bare, lens, cx): (Bare, Lens, Context) = rt.block_on(async {
        let (l1, a1) = listener().await;
        tokio::spawn(
            Server::builder()
                .add_service(EchoServer)
                .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(l1)),
        );
        let (l2, a2) = listener().await;
        tokio::spawn(
            Server::builder()
                .layer(ServerLayer::new().with_tracer(tracer))
                .add_service(EchoServer)
                .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(l2)),
        );
        let bare = tonic::client::Grpc::new(connect(a1).await);
        let lens = tonic::client::Grpc::new(InterceptedService::new(
            connect(a2).await,
            ClientInterceptor::new(),
        ));
        (bare, lens, caller_context())
    });

    let mut group = c.benchmark_group("grpc_unary_echo");
    group
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));

    group.bench_function("bare_tonic", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let (mut bare, mut lens, cx) = (bare.clone(), lens.clone(), cx.clone());
            async move {
                let mut timed = Duration::ZERO;
                for _ in 0..iters {
                    let start = Instant::now();
                    call(&mut bare).await;
                    timed += start.elapsed();
                    call(&mut lens).with_context(cx.clone()).await;
                }
                timed
            }
        });
    });
    group.bench_function("lens_interceptor_and_server_layer", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let (mut bare, mut lens, cx) = (bare.clone(), lens.clone(), cx.clone());
            async move {
                let mut timed = Duration::ZERO;
                for _ in 0..iters {
                    call(&mut bare).await;
                    let start = Instant::now();
                    call(&mut lens).with_context(cx.clone()).await;
                    timed += start.elapsed();
                }
                timed
            }
        });
    });
    group.finish();
    alternated_rounds(&rt, &bare, &lens, &cx);

    // lens's per-call work without the network: the interceptor injecting traceparent + 3
    // baggage entries, then the server layer (policy, extract, SERVER span, status) around a
    // service that answers with a trailers-only OK, against that service alone.
    let mut direct = c.benchmark_group("grpc_per_call_overhead");
    direct
        .sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    let ok = tower_service_fn();
    let layered = tower_layer::Layer::layer(
        &ServerLayer::new().with_tracer(provider.tracer("bench-direct")),
        ok.clone(),
    );
    direct.bench_function("bare_service", |b| {
        let mut svc = ok.clone();
        b.iter(|| poll_once(&mut svc, request_with(None)));
    });
    direct.bench_function("interceptor_and_server_layer", |b| {
        let mut svc = layered.clone();
        b.iter(|| poll_once(&mut svc, request_with(Some(&cx))));
    });
    direct.finish();
    drop(provider);
}

/// Rounds of the alternated comparison, and calls per configuration in each round.
const ROUNDS: usize = 31;
const CALLS: usize = 512;

/// Bare tonic and lens run alternately, `CALLS` calls each per round (the order swapped every
/// round); prints the median (quartiles) of the per-round throughput ratio lens / bare, which
/// machine noise hits on both sides alike (criterion's separate blocks above do not).
fn alternated_rounds(rt: &tokio::runtime::Runtime, bare: &Bare, lens: &Lens, cx: &Context) {
    let (mut bare, mut lens) = (bare.clone(), lens.clone());
    let mut ratios: Vec<f64> = rt.block_on(async {
        let mut ratios = Vec::with_capacity(ROUNDS);
        for round in 0..ROUNDS {
            let mut times = [Duration::ZERO; 2];
            for k in 0..2 {
                let which = (round + k) % 2;
                let start = Instant::now();
                for _ in 0..CALLS {
                    if which == 0 {
                        call(&mut bare).await;
                    } else {
                        call(&mut lens).with_context(cx.clone()).await;
                    }
                }
                times[which] = start.elapsed();
            }
            ratios.push(times[0].as_secs_f64() / times[1].as_secs_f64());
        }
        ratios
    });
    ratios.sort_by(f64::total_cmp);
    println!(
        "grpc_unary_echo: lens throughput {:.1}% of bare tonic (median of {ROUNDS} alternated \
         rounds, {CALLS} calls each; quartiles {:.1}%..{:.1}%)",
        100.0 * ratios[ROUNDS / 2],
        100.0 * ratios[ROUNDS / 4],
        100.0 * ratios[3 * ROUNDS / 4],
    );
}

#[derive(Clone)]
struct TrailersOnlyOk;

fn tower_service_fn() -> TrailersOnlyOk {
    TrailersOnlyOk
}

impl tower_service::Service<http::Request<()>> for TrailersOnlyOk {
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

/// A request as a client would send it on a gRPC path: with lens, the interceptor's metadata
/// (so the difference between the two benches is the interceptor plus the server layer).
fn request_with(cx: Option<&Context>) -> http::Request<()> {
    use tonic::service::Interceptor;
    let mut http = http::Request::new(());
    *http.uri_mut() = http::Uri::from_static(PATH);
    if let Some(cx) = cx {
        let _guard = cx.clone().attach();
        let request = ClientInterceptor::new().call(Request::new(())).unwrap();
        *http.headers_mut() = request.into_parts().0.into_headers();
    }
    http
}

fn poll_once<S>(svc: &mut S, request: http::Request<()>)
where
    S: tower_service::Service<http::Request<()>>,
{
    let waker = std::task::Waker::noop();
    let mut cx = TaskContext::from_waker(waker);
    let mut future = std::pin::pin!(svc.call(request));
    match future.as_mut().poll(&mut cx) {
        Poll::Ready(Ok(response)) => drop(std::hint::black_box(response)),
        _ => unreachable!("the service answers at once"),
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
