//! Test support: a hand-written tonic "Echo" service (JSON messages, no protoc), an in-memory
//! span exporter, and a loopback server on 127.0.0.1 port 0.
#![allow(dead_code, unreachable_pub)]

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use lens_core::LensContextExt;
use lens_tonic::{JsonCodec, ServerLayer};
use opentelemetry::Context;
use opentelemetry::trace::{SpanKind, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracer, SdkTracerProvider, SpanData};
use tonic::body::Body;
use tonic::server::{NamedService, ServerStreamingService, UnaryService};
use tonic::transport::{Channel, Endpoint, Server};
use tonic::{Code, Request, Response, Status};

pub const SERVICE: &str = "lens.test.Echo";
pub const ECHO: &str = "/lens.test.Echo/Echo";
pub const STREAM: &str = "/lens.test.Echo/Stream";

/// Woken when a handler asked to `hold` has started (a test then cancels the call).
pub static HOLDING: tokio::sync::Notify = tokio::sync::Notify::const_new();

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What the handler saw: its message, the trace id and span id current in the handler, and the
/// baggage header of the current Context.
pub fn describe_current(message: &str) -> String {
    let cx = Context::current();
    let span = opentelemetry::trace::TraceContextExt::span(&cx);
    let sc = span.span_context();
    format!(
        "{message}|{}|{}|{}",
        sc.trace_id(),
        sc.span_id(),
        cx.lens_baggage().header()
    )
}

/// `status:N` answers with code N (trailers-only); `hold` never answers (after waking
/// [`HOLDING`]); anything else echoes with what the handler saw.
#[derive(Clone)]
struct Echo;

impl UnaryService<String> for Echo {
    type Response = String;
    type Future = BoxFuture<Result<Response<String>, Status>>;

    fn call(&mut self, request: Request<String>) -> Self::Future {
        let message = request.into_inner();
        let seen = describe_current(&message);
        Box::pin(async move {
            if message == "hold" {
                HOLDING.notify_one();
                std::future::pending::<()>().await;
            }
            match message.strip_prefix("status:") {
                Some(code) => Err(Status::new(
                    Code::from_i32(code.parse().unwrap_or(2)),
                    "as asked",
                )),
                None => Ok(Response::new(seen)),
            }
        })
    }
}

/// `items:K;status:N`: K messages, then code N in the trailers (N = 0: OK).
/// `early:N`: fails with code N before any message (trailers-only).
/// `items:K;hold`: K messages, then the stream stays open.
#[derive(Clone)]
struct Streamer;

type ItemStream = Pin<Box<dyn tokio_stream::Stream<Item = Result<String, Status>> + Send>>;

impl ServerStreamingService<String> for Streamer {
    type Response = String;
    type ResponseStream = ItemStream;
    type Future = BoxFuture<Result<Response<ItemStream>, Status>>;

    fn call(&mut self, request: Request<String>) -> Self::Future {
        let message = request.into_inner();
        Box::pin(async move {
            if let Some(code) = message.strip_prefix("early:") {
                return Err(Status::new(
                    Code::from_i32(code.parse().unwrap_or(2)),
                    "early",
                ));
            }
            if let Some(items) = message
                .strip_prefix("items:")
                .and_then(|m| m.strip_suffix(";hold"))
            {
                let items: Vec<Result<String, Status>> = (0..items.parse().unwrap_or(0))
                    .map(|i| Ok(describe_current(&format!("item{i}"))))
                    .collect();
                let stream: ItemStream = Box::pin(tokio_stream::StreamExt::chain(
                    tokio_stream::iter(items),
                    tokio_stream::pending(),
                ));
                return Ok(Response::new(stream));
            }
            let (items, code) = message
                .split_once(';')
                .and_then(|(i, c)| {
                    Some((
                        i.strip_prefix("items:")?.parse::<usize>().ok()?,
                        c.strip_prefix("status:")?.parse::<i32>().ok()?,
                    ))
                })
                .unwrap_or((0, 2));
            let mut out: Vec<Result<String, Status>> = (0..items)
                .map(|i| Ok(describe_current(&format!("item{i}"))))
                .collect();
            if code != 0 {
                out.push(Err(Status::new(Code::from_i32(code), "in trailers")));
            }
            let stream: ItemStream = Box::pin(tokio_stream::iter(out));
            Ok(Response::new(stream))
        })
    }
}

/// The Echo service, routed by path like tonic's generated servers.
#[derive(Clone)]
pub struct EchoServer;

impl NamedService for EchoServer {
    const NAME: &'static str = SERVICE;
}

impl tower_service::Service<http::Request<Body>> for EchoServer {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<http::Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        match request.uri().path() {
            ECHO => Box::pin(async move {
                let mut grpc = tonic::server::Grpc::new(JsonCodec::<String, String>::new());
                Ok(grpc.unary(Echo, request).await)
            }),
            STREAM => Box::pin(async move {
                let mut grpc = tonic::server::Grpc::new(JsonCodec::<String, String>::new());
                Ok(grpc.server_streaming(Streamer, request).await)
            }),
            _ => Box::pin(async move { Ok(Status::unimplemented("no such method").into_http()) }),
        }
    }
}

/// A tracer provider that keeps finished spans in memory.
pub struct Spans {
    pub exporter: InMemorySpanExporter,
    pub provider: SdkTracerProvider,
}

impl Spans {
    pub fn new() -> Self {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        Spans { exporter, provider }
    }

    pub fn tracer(&self, name: &'static str) -> SdkTracer {
        self.provider.tracer(name)
    }

    pub fn finished(&self) -> Vec<SpanData> {
        self.exporter.get_finished_spans().unwrap()
    }

    pub fn one(&self, kind: SpanKind) -> SpanData {
        let spans: Vec<SpanData> = self
            .finished()
            .into_iter()
            .filter(|s| s.span_kind == kind)
            .collect();
        assert_eq!(spans.len(), 1, "expected one {kind:?} span, got {spans:#?}");
        spans.into_iter().next().unwrap()
    }
}

pub fn attr(span: &SpanData, key: &str) -> Option<opentelemetry::Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
}

/// Serves Echo behind `layer` on 127.0.0.1, port 0; returns the address.
pub async fn serve(layer: ServerLayer) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        Server::builder()
            .layer(layer)
            .add_service(EchoServer)
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener))
            .await
            .unwrap();
    });
    addr
}

pub async fn channel(addr: SocketAddr) -> Channel {
    Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap()
}

/// A unary Echo call through `grpc`.
pub async fn unary<T>(grpc: &mut tonic::client::Grpc<T>, message: &str) -> Result<String, Status>
where
    T: tonic::client::GrpcService<Body>,
    T::ResponseBody: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    <T::ResponseBody as http_body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    T::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    grpc.ready()
        .await
        .map_err(|e| Status::unknown(e.into().to_string()))?;
    grpc.unary(
        Request::new(message.to_owned()),
        http::uri::PathAndQuery::from_static(ECHO),
        JsonCodec::<String, String>::new(),
    )
    .await
    .map(Response::into_inner)
}

/// A server-streaming call: the messages received, then the final status.
pub async fn stream<T>(
    grpc: &mut tonic::client::Grpc<T>,
    message: &str,
) -> (Vec<String>, Result<(), Status>)
where
    T: tonic::client::GrpcService<Body>,
    T::ResponseBody: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    <T::ResponseBody as http_body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    T::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if let Err(e) = grpc.ready().await {
        return (Vec::new(), Err(Status::unknown(e.into().to_string())));
    }
    let response = grpc
        .server_streaming(
            Request::new(message.to_owned()),
            http::uri::PathAndQuery::from_static(STREAM),
            JsonCodec::<String, String>::new(),
        )
        .await;
    let mut stream = match response {
        Ok(r) => r.into_inner(),
        Err(status) => return (Vec::new(), Err(status)),
    };
    let mut items = Vec::new();
    loop {
        match stream.message().await {
            Ok(Some(item)) => items.push(item),
            Ok(None) => return (items, Ok(())),
            Err(status) => return (items, Err(status)),
        }
    }
}
