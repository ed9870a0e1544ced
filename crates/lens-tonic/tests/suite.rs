//! lens-testkit's behaviour suite, run against [`ServerLayer`] and [`ClientLayer`].
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use lens_core::policy::InboundPolicy;
use lens_testkit::recorder::Recorder;
use lens_testkit::suite::{
    self, Call, Harness, Observed, Protocol, RESPOND, Respond, SKIP_HEADER, Setup, Side,
};
use lens_tonic::{ClientLayer, JsonCodec, Outcome, ServerLayer};
use opentelemetry::trace::{FutureExt as _, SpanKind, TracerProvider as _};
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData};
use tokio::sync::Semaphore;
use tonic::body::Body;
use tonic::server::{NamedService, ServerStreamingService, UnaryService};
use tonic::transport::{Endpoint, Server};
use tonic::{Code, Request, Response, Status};
use tower_layer::Layer;

const UNARY: &str = "/lens.suite.Suite/Unary";
const STREAM: &str = "/lens.suite.Suite/Stream";

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;
type ItemStream = Pin<Box<dyn tokio_stream::Stream<Item = Result<String, Status>> + Send>>;

/// What the handler reports: the trace context its current Context would send on (`current`)
/// and the propagation lines the request arrived with (`received`), one `side name: value` per
/// line.
fn report<T>(request: &Request<T>) -> String {
    let mut out = String::new();
    for (name, lines) in suite::carrier_lines(&suite::outgoing_of_current()) {
        for line in lines {
            out.push_str(&format!("current {name}: {line}\n"));
        }
    }
    for (name, lines) in suite::propagation_lines(request.metadata().as_ref()) {
        for line in lines {
            out.push_str(&format!("received {name}: {line}\n"));
        }
    }
    out
}

fn parse_report(report: &str, side: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in report.lines() {
        if let Some((name, value)) = line
            .strip_prefix(side)
            .and_then(|rest| rest.strip_prefix(' '))
            .and_then(|rest| rest.split_once(": "))
        {
            out.entry(name.to_owned())
                .or_default()
                .push(value.to_owned());
        }
    }
    out
}

#[derive(Clone)]
struct Unary;

impl UnaryService<String> for Unary {
    type Response = String;
    type Future = BoxFuture<Result<Response<String>, Status>>;

    fn call(&mut self, request: Request<String>) -> Self::Future {
        let seen = report(&request);
        let respond = Respond::parse(request.get_ref());
        Box::pin(async move {
            match respond {
                Respond::CallerError => Err(Status::new(Code::NotFound, "as asked")),
                Respond::ServerError => Err(Status::new(Code::Unavailable, "as asked")),
                Respond::Panic => panic!("the suite asked for a panic"),
                _ => Ok(Response::new(seen)),
            }
        })
    }
}

/// Two messages: the report, then (once the harness opens the gate) an empty one.
#[derive(Clone)]
struct Streamer(Arc<Semaphore>);

impl ServerStreamingService<String> for Streamer {
    type Response = String;
    type ResponseStream = ItemStream;
    type Future = BoxFuture<Result<Response<ItemStream>, Status>>;

    fn call(&mut self, request: Request<String>) -> Self::Future {
        let seen = report(&request);
        let gate = Arc::clone(&self.0);
        Box::pin(async move {
            let first = tokio_stream::once(Ok(seen));
            let second = async_stream_once(async move {
                let _permit = gate.acquire().await;
                Ok(String::new())
            });
            let stream: ItemStream = Box::pin(tokio_stream::StreamExt::chain(first, second));
            Ok(Response::new(stream))
        })
    }
}

/// A one-item stream of `future`'s output.
fn async_stream_once<F>(future: F) -> impl tokio_stream::Stream<Item = F::Output>
where
    F: Future,
{
    struct Once<F>(Option<Pin<Box<F>>>);
    impl<F: Future> tokio_stream::Stream for Once<F> {
        type Item = F::Output;
        fn poll_next(
            mut self: Pin<&mut Self>,
            cx: &mut TaskContext<'_>,
        ) -> Poll<Option<F::Output>> {
            let Some(future) = self.0.as_mut() else {
                return Poll::Ready(None);
            };
            let out = std::task::ready!(future.as_mut().poll(cx));
            self.0 = None;
            Poll::Ready(Some(out))
        }
    }
    Once(Some(Box::pin(future)))
}

#[derive(Clone)]
struct Suite(Arc<Semaphore>);

impl NamedService for Suite {
    const NAME: &'static str = "lens.suite.Suite";
}

impl tower_service::Service<http::Request<Body>> for Suite {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<http::Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let gate = Arc::clone(&self.0);
        match request.uri().path() {
            UNARY => Box::pin(async move {
                let mut grpc = tonic::server::Grpc::new(JsonCodec::<String, String>::new());
                Ok(grpc.unary(Unary, request).await)
            }),
            _ => Box::pin(async move {
                let mut grpc = tonic::server::Grpc::new(JsonCodec::<String, String>::new());
                Ok(grpc.server_streaming(Streamer(gate), request).await)
            }),
        }
    }
}

async fn serve(layer: Option<ServerLayer>, gate: Arc<Semaphore>) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    tokio::spawn(async move {
        let mut builder = Server::builder();
        let result = match layer {
            Some(layer) => {
                builder
                    .layer(layer)
                    .add_service(Suite(gate))
                    .serve_with_incoming(incoming)
                    .await
            }
            None => {
                builder
                    .add_service(Suite(gate))
                    .serve_with_incoming(incoming)
                    .await
            }
        };
        result.unwrap();
    });
    addr
}

/// Sets the suite's knobs on either layer (the same names on both).
macro_rules! configure {
    ($layer:expr, $setup:expr, $tracer:expr, $metrics:expr) => {
        lens_testkit::suite_knobs!(
            $layer.with_tracer($tracer),
            $setup,
            |call| !call.headers.contains_key(SKIP_HEADER),
            |code: &Code| match code {
                Code::NotFound => Outcome::failure(suite::CLASSIFIED_ERROR, ""),
                _ => Outcome::Success,
            },
            $metrics
        )
    };
}

struct Grpc(Side);

impl Harness for Grpc {
    fn side(&self) -> Side {
        self.0
    }

    fn protocol(&self) -> Protocol {
        Protocol::Grpc
    }

    fn supports(&self, respond: Respond) -> bool {
        // A client cannot make the server panic through its layer.
        self.0 == Side::Server || respond != Respond::Panic
    }

    async fn run(&self, setup: Setup, call: Call, expect_spans: usize) -> Observed {
        let recorder = Recorder::default();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(recorder.clone())
            .build();
        let tracer = provider.tracer("suite");
        let gate = Arc::new(Semaphore::new(0));
        // Only the layer under test records metrics.
        let metrics = suite::metrics_for(&setup);
        let (server_metrics, client_metrics) = match self.0 {
            Side::Server => (&metrics, &None),
            Side::Client => (&None, &metrics),
        };
        let (addr, kind) = match self.0 {
            Side::Server => {
                let layer = configure!(ServerLayer::new(), setup, tracer, server_metrics)
                    .with_inbound_policy(InboundPolicy::custom(move |_| setup.decision));
                (
                    serve(Some(layer), Arc::clone(&gate)).await,
                    SpanKind::Server,
                )
            }
            Side::Client => (serve(None, Arc::clone(&gate)).await, SpanKind::Client),
        };
        let channel = Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .unwrap();
        let client_layer = configure!(
            ClientLayer::new(),
            setup,
            provider.tracer("suite-client"),
            client_metrics
        );
        let mut observed = Observed::default();
        let first = match self.0 {
            // The server side: the caller's context travels as plain metadata.
            Side::Server => {
                let mut grpc = tonic::client::Grpc::new(channel);
                let own = &call.headers;
                exchange(&mut grpc, &call, own, &gate, &recorder, &mut observed).await
            }
            Side::Client => {
                let mut grpc = tonic::client::Grpc::new(client_layer.layer(channel));
                // The caller's context is current; the request carries only the preset
                // (stale) headers.
                let own = &call.preset;
                exchange(&mut grpc, &call, own, &gate, &recorder, &mut observed)
                    .with_context(suite::caller_context(&call.headers))
                    .await
            }
        };
        observed.outgoing = parse_report(
            &first,
            match self.0 {
                Side::Server => "current",
                Side::Client => "received",
            },
        );
        observed.spans = recorder
            .wait_for(expect_spans)
            .await
            .into_iter()
            .filter(|s: &SpanData| s.span_kind == kind)
            .collect();
        observed.metrics = suite::collected(&metrics);
        observed
    }
}

/// Makes the call; returns the handler's report (empty on an error status).
async fn exchange<T>(
    grpc: &mut tonic::client::Grpc<T>,
    call: &Call,
    own: &[(&'static str, String)],
    gate: &Semaphore,
    recorder: &Recorder,
    observed: &mut Observed,
) -> String
where
    T: tonic::client::GrpcService<Body>,
    T::ResponseBody: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    <T::ResponseBody as http_body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    T::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut request = Request::new(call.respond.as_str().to_owned());
    let metadata = request.metadata_mut().as_mut();
    let headers = if call.skip {
        vec![(SKIP_HEADER, "1".to_owned())]
    } else {
        Vec::new()
    };
    for (name, value) in own.iter().chain(&headers) {
        metadata.append(
            http::header::HeaderName::from_static(name),
            value.parse().unwrap(),
        );
    }
    metadata.insert(RESPOND, call.respond.as_str().parse().unwrap());
    grpc.ready().await.map_err(Into::into).unwrap();
    if matches!(call.respond, Respond::Stream | Respond::Cancel) {
        let response = grpc
            .server_streaming(
                request,
                http::uri::PathAndQuery::from_static(STREAM),
                JsonCodec::<String, String>::new(),
            )
            .await
            .unwrap();
        let mut stream = response.into_inner();
        let first = stream.message().await.unwrap().unwrap_or_default();
        if call.respond == Respond::Cancel {
            // The caller goes away: the stream is reset, the server drops its response.
            drop(stream);
            return first;
        }
        observed.open_after_first_part = Some(recorder.ended().is_empty());
        gate.add_permits(1);
        while stream.message().await.unwrap().is_some() {}
        return first;
    }
    grpc.unary(
        request,
        http::uri::PathAndQuery::from_static(UNARY),
        JsonCodec::<String, String>::new(),
    )
    .await
    .map(Response::into_inner)
    .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_layer_passes_the_behaviour_suite() {
    suite::run(&Grpc(Side::Server)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_layer_passes_the_behaviour_suite() {
    suite::run(&Grpc(Side::Client)).await;
}
