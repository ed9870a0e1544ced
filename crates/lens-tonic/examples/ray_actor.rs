//! A Ray-style "actor" served over tonic, and a driver that dispatches to it: one trace from the
//! driver's span, through the gRPC call, to the actor's `traced_remote_call` span.
//!
//! The actor's requests are `RemoteCall<GenerateArgs>`: the keyword arguments plus the carrier
//! under `_otel_carrier`, exactly what a Python NeMo Lens driver passes to `.remote(...)`.
//!
//! ```sh
//! cargo run -p lens-tonic --example ray_actor
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use lens_tonic::{ClientLayer, JsonCodec, RemoteCall, ServerLayer, dispatch_with_context};
use opentelemetry::trace::{FutureExt, TraceContextExt, Tracer, TracerProvider as _};
use opentelemetry::{Context, global};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use serde::{Deserialize, Serialize};
use tonic::body::Body;
use tonic::server::{NamedService, UnaryService};
use tonic::{Request, Response, Status};
use tower_layer::Layer;

/// The actor method's keyword arguments.
#[derive(Debug, Serialize, Deserialize)]
struct GenerateArgs {
    prompt: String,
    max_tokens: u32,
}

/// The actor's answer.
#[derive(Debug, Serialize, Deserialize)]
struct GenerateReply {
    text: String,
    trace_id: String,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// `Actor.generate`: runs in a span parented on the request's `_otel_carrier` (Python's
/// `traced_remote_call`).
#[derive(Clone)]
struct Generate;

impl UnaryService<RemoteCall<GenerateArgs>> for Generate {
    type Response = GenerateReply;
    type Future = BoxFuture<Result<Response<GenerateReply>, Status>>;

    fn call(&mut self, request: Request<RemoteCall<GenerateArgs>>) -> Self::Future {
        let call = request.into_inner();
        Box::pin(async move {
            let reply = call
                .run("Actor.generate", |args| async move {
                    let trace_id = Context::current().span().span_context().trace_id();
                    GenerateReply {
                        text: format!("{} ... ({} tokens)", args.prompt, args.max_tokens),
                        trace_id: trace_id.to_string(),
                    }
                })
                .await;
            Ok(Response::new(reply))
        })
    }
}

/// The actor as a gRPC service, routed by path as tonic's generated code does.
#[derive(Clone)]
struct ActorServer;

impl NamedService for ActorServer {
    const NAME: &'static str = "lens.example.Actor";
}

impl tower_service::Service<http::Request<Body>> for ActorServer {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<http::Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        match request.uri().path() {
            "/lens.example.Actor/Generate" => Box::pin(async move {
                let codec = JsonCodec::<GenerateReply, RemoteCall<GenerateArgs>>::new();
                Ok(tonic::server::Grpc::new(codec)
                    .unary(Generate, request)
                    .await)
            }),
            _ => Box::pin(async { Ok(Status::unimplemented("no such method").into_http()) }),
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Spans are kept in memory and printed at the end.
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    global::set_tracer_provider(provider.clone());

    // The actor: a tonic server with lens's SERVER-span layer, on a free loopback port.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(
        tonic::transport::Server::builder()
            .layer(ServerLayer::new())
            .add_service(ActorServer)
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );

    // The driver: a span of its own, then a remote call carrying its context.
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))?
        .connect()
        .await?;
    let channel = ClientLayer::new()
        .with_server_address("127.0.0.1", addr.port())
        .layer(channel);
    let mut grpc = tonic::client::Grpc::new(channel);

    let driver = provider.tracer("driver").start("driver.rollout");
    let cx = Context::current_with_span(driver);
    let reply = async {
        let call = dispatch_with_context(GenerateArgs {
            prompt: "The capital of France is".into(),
            max_tokens: 4,
        });
        println!("request: {}", serde_json::to_string(&call)?);
        grpc.ready().await?;
        let reply = grpc
            .unary(
                Request::new(call),
                http::uri::PathAndQuery::from_static("/lens.example.Actor/Generate"),
                JsonCodec::<RemoteCall<GenerateArgs>, GenerateReply>::new(),
            )
            .await?
            .into_inner();
        Ok::<_, Box<dyn std::error::Error>>(reply)
    }
    .with_context(cx.clone())
    .await?;
    cx.span().end();
    println!("reply:   {reply:?}");

    let spans = exporter.get_finished_spans()?;
    println!(
        "\n{:<28} {:<9} {:<32} {:<16} parent",
        "span", "kind", "trace", "span id"
    );
    for span in &spans {
        println!(
            "{:<28} {:<9} {:<32} {:<16} {}",
            span.name,
            format!("{:?}", span.span_kind),
            span.span_context.trace_id(),
            span.span_context.span_id(),
            span.parent_span_id
        );
    }
    let trace_id = cx.span().span_context().trace_id();
    assert_eq!(spans.len(), 4, "driver, CLIENT, SERVER, Actor.generate");
    assert!(spans.iter().all(|s| s.span_context.trace_id() == trace_id));
    assert_eq!(reply.trace_id, trace_id.to_string());
    println!("\none trace from driver to actor: {trace_id}");
    Ok(())
}
