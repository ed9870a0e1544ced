//! lens-tonic around a service and a client generated from protobuf by tonic's codegen:
//! tonic-health's `grpc.health.v1.Health` (`Check` unary, `Watch` server-streaming) behind
//! `ServerLayer`, called through its generated `HealthClient` over `ClientLayer` or with
//! `ClientInterceptor`, on 127.0.0.1 port 0.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::net::SocketAddr;
use std::pin::Pin;

use lens_core::LensContextExt;
use lens_tonic::{ClientInterceptor, ClientLayer, RequestInfo, ServerLayer};
use opentelemetry::trace::{FutureExt, SpanKind, Status as SpanStatus, TraceContextExt, Tracer};
use opentelemetry::{Context, Value};
use opentelemetry_sdk::trace::SpanData;
use support::{EchoServer, Spans, attr, unary};
use tonic::transport::{Channel, Server};
use tonic::{Code, Request, Response, Status};
use tonic_health::ServingStatus;
use tonic_health::pb::health_check_response::ServingStatus as WireStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};
use tower_layer::Layer;

const HEALTH: &str = "grpc.health.v1.Health";

/// Serves `health` (and the Echo service) behind `layer` on 127.0.0.1, port 0.
async fn serve<H: Health>(layer: ServerLayer, health: HealthServer<H>) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        Server::builder()
            .layer(layer)
            .add_service(health)
            .add_service(EchoServer)
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener))
            .await
            .unwrap();
    });
    addr
}

fn request(service: &str) -> Request<HealthCheckRequest> {
    Request::new(HealthCheckRequest {
        service: service.to_owned(),
    })
}

fn serving(response: &HealthCheckResponse) -> WireStatus {
    WireStatus::try_from(response.status).unwrap()
}

fn is_error(span: &SpanData) -> bool {
    matches!(span.status, SpanStatus::Error { .. })
}

fn code_of(span: &SpanData) -> Option<Value> {
    attr(span, "rpc.grpc.status_code")
}

/// Spans with tonic-health's reporter behind the server layer and a generated client over the
/// client layer.
struct Setup {
    spans: Spans,
    reporter: tonic_health::server::HealthReporter,
    client: HealthClient<lens_tonic::ClientService<Channel>>,
}

async fn setup() -> Setup {
    let spans = Spans::new();
    let (reporter, health) = tonic_health::server::health_reporter();
    let addr = serve(
        ServerLayer::new().with_tracer(spans.tracer("server")),
        health,
    )
    .await;
    let channel = ClientLayer::new()
        .with_tracer(spans.tracer("client"))
        .with_server_address("127.0.0.1", addr.port())
        .layer(support::channel(addr).await);
    Setup {
        spans,
        reporter,
        client: HealthClient::new(channel),
    }
}

/// The caller's span with baggage, as the Context a call runs in.
fn caller(spans: &Spans) -> Context {
    Context::new()
        .with_span(spans.tracer("caller").start("caller"))
        .with_baggage_entry("tenant", "acme corp")
        .unwrap()
}

#[tokio::test]
async fn check_is_one_trace_across_the_generated_client_and_server() {
    let mut s = setup().await;
    let cx = caller(&s.spans);
    let answer = s
        .client
        .check(request(""))
        .with_context(cx.clone())
        .await
        .unwrap();
    cx.span().end();
    assert_eq!(serving(answer.get_ref()), WireStatus::Serving);

    let caller = s.spans.one(SpanKind::Internal);
    let client = s.spans.one(SpanKind::Client);
    let server = s.spans.one(SpanKind::Server);
    let trace_id = caller.span_context.trace_id();
    assert_eq!(client.span_context.trace_id(), trace_id);
    assert_eq!(server.span_context.trace_id(), trace_id);
    assert_eq!(client.parent_span_id, caller.span_context.span_id());
    assert!(!client.parent_span_is_remote);
    assert_eq!(server.parent_span_id, client.span_context.span_id());
    assert!(server.parent_span_is_remote);
    for span in [&client, &server] {
        assert_eq!(span.name, "grpc.health.v1.Health/Check");
        assert_eq!(attr(span, "rpc.system"), Some(Value::from("grpc")));
        assert_eq!(attr(span, "rpc.service"), Some(Value::from(HEALTH)));
        assert_eq!(attr(span, "rpc.method"), Some(Value::from("Check")));
        assert_eq!(code_of(span), Some(Value::I64(0)));
        assert_eq!(span.status, SpanStatus::Unset);
    }
    assert_eq!(
        attr(&client, "server.address"),
        Some(Value::from("127.0.0.1"))
    );
}

#[tokio::test]
async fn an_unknown_service_is_not_found_an_error_only_for_the_client() {
    let mut s = setup().await;
    let err = s
        .client
        .check(request("no.such.Service"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    // Watch refuses it before any message: a trailers-only response.
    let err = s
        .client
        .watch(request("no.such.Service"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);

    let spans = s.spans.finished();
    assert_eq!(spans.len(), 4, "{spans:#?}");
    for method in ["Check", "Watch"] {
        let name = format!("{HEALTH}/{method}");
        let of = |kind: SpanKind| {
            spans
                .iter()
                .find(|s| s.name == name && s.span_kind == kind)
                .unwrap_or_else(|| panic!("no {kind:?} span {name}"))
        };
        let (client, server) = (of(SpanKind::Client), of(SpanKind::Server));
        assert_eq!(server.parent_span_id, client.span_context.span_id());
        assert_eq!(code_of(client), Some(Value::I64(5)), "{name}");
        assert_eq!(code_of(server), Some(Value::I64(5)), "{name}");
        assert!(is_error(client), "{name}");
        assert_eq!(attr(client, "error.type"), Some(Value::from("NOT_FOUND")));
        match &client.status {
            SpanStatus::Error { description } => {
                assert!(
                    description.contains("service not registered"),
                    "{description}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(!is_error(server), "NOT_FOUND is the caller's fault: {name}");
        assert_eq!(attr(server, "error.type"), None);
    }
}

#[tokio::test]
async fn watch_spans_end_when_the_stream_ends() {
    let mut s = setup().await;
    s.reporter
        .set_service_status("lens.Model", ServingStatus::Serving)
        .await;
    let cx = caller(&s.spans);
    let mut stream = s
        .client
        .watch(request("lens.Model"))
        .with_context(cx.clone())
        .await
        .unwrap()
        .into_inner();
    let first = stream.message().await.unwrap().unwrap();
    assert_eq!(serving(&first), WireStatus::Serving);
    s.reporter
        .set_service_status("lens.Model", ServingStatus::NotServing)
        .await;
    let second = stream.message().await.unwrap().unwrap();
    assert_eq!(serving(&second), WireStatus::NotServing);
    // Two messages in, the call is still open: neither the CLIENT nor the SERVER span has ended.
    assert!(
        s.spans
            .finished()
            .iter()
            .all(|span| span.span_kind == SpanKind::Internal),
        "{:#?}",
        s.spans.finished()
    );

    // Clearing the service ends the server's stream: OK in the trailers.
    s.reporter.clear_service_status("lens.Model").await;
    assert!(stream.message().await.unwrap().is_none());
    cx.span().end();

    let caller = s.spans.one(SpanKind::Internal);
    let client = s.spans.one(SpanKind::Client);
    let server = s.spans.one(SpanKind::Server);
    assert_eq!(client.parent_span_id, caller.span_context.span_id());
    assert_eq!(server.parent_span_id, client.span_context.span_id());
    assert_eq!(
        server.span_context.trace_id(),
        caller.span_context.trace_id()
    );
    for span in [&client, &server] {
        assert_eq!(span.name, "grpc.health.v1.Health/Watch");
        assert_eq!(code_of(span), Some(Value::I64(0)));
        assert_eq!(span.status, SpanStatus::Unset);
    }
}

/// A `Health` implementation on the generated trait: `Watch` sends SERVING, then ends with the
/// code named by the requested service (`"14"`: UNAVAILABLE) in the trailers.
struct FailingWatch;

type WatchStream =
    Pin<Box<dyn tokio_stream::Stream<Item = Result<HealthCheckResponse, Status>> + Send>>;

#[tonic::async_trait]
impl Health for FailingWatch {
    async fn check(
        &self,
        _request: Request<HealthCheckRequest>,
    ) -> Result<Response<HealthCheckResponse>, Status> {
        Ok(Response::new(HealthCheckResponse {
            status: WireStatus::Serving as i32,
        }))
    }

    type WatchStream = WatchStream;

    async fn watch(
        &self,
        request: Request<HealthCheckRequest>,
    ) -> Result<Response<WatchStream>, Status> {
        let code = Code::from_i32(request.get_ref().service.parse().unwrap_or(2));
        let items = vec![
            Ok(HealthCheckResponse {
                status: WireStatus::Serving as i32,
            }),
            Err(Status::new(code, "draining: going away")),
        ];
        Ok(Response::new(Box::pin(tokio_stream::iter(items))))
    }
}

async fn failing_watch(code: Code) -> (SpanData, SpanData) {
    let spans = Spans::new();
    let addr = serve(
        ServerLayer::new().with_tracer(spans.tracer("server")),
        HealthServer::new(FailingWatch),
    )
    .await;
    let channel = ClientLayer::new()
        .with_tracer(spans.tracer("client"))
        .layer(support::channel(addr).await);
    let mut client = HealthClient::new(channel);
    let mut stream = client
        .watch(request(&(code as i32).to_string()))
        .await
        .unwrap()
        .into_inner();
    // A message first: the status can only come in the trailers.
    let first = stream.message().await.unwrap().unwrap();
    assert_eq!(serving(&first), WireStatus::Serving);
    let err = stream.message().await.unwrap_err();
    assert_eq!(err.code(), code);
    (spans.one(SpanKind::Client), spans.one(SpanKind::Server))
}

#[tokio::test]
async fn a_watch_error_after_a_message_is_read_from_the_trailers() {
    let (client, server) = failing_watch(Code::Unavailable).await;
    assert_eq!(server.parent_span_id, client.span_context.span_id());
    for span in [&client, &server] {
        assert_eq!(span.name, "grpc.health.v1.Health/Watch");
        assert_eq!(code_of(span), Some(Value::I64(14)));
        assert_eq!(attr(span, "error.type"), Some(Value::from("UNAVAILABLE")));
        match &span.status {
            SpanStatus::Error { description } => {
                assert!(
                    description.contains("draining: going away"),
                    "{description}"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    // A caller's fault in the trailers: an error for the client only.
    let (client, server) = failing_watch(Code::FailedPrecondition).await;
    assert_eq!(code_of(&client), Some(Value::I64(9)));
    assert_eq!(code_of(&server), Some(Value::I64(9)));
    assert_eq!(
        attr(&client, "error.type"),
        Some(Value::from("FAILED_PRECONDITION"))
    );
    assert!(is_error(&client));
    assert!(!is_error(&server));
    assert_eq!(attr(&server, "error.type"), None);
}

fn not_health(call: &RequestInfo<'_>) -> bool {
    call.method.service() != Some(HEALTH)
}

#[tokio::test]
async fn the_health_check_filter_skips_health_spans_only() {
    let spans = Spans::new();
    let (_reporter, health) = tonic_health::server::health_reporter();
    let addr = serve(
        ServerLayer::new()
            .with_tracer(spans.tracer("server"))
            .with_filter(not_health),
        health,
    )
    .await;
    let channel = ClientLayer::new()
        .with_tracer(spans.tracer("client"))
        .with_filter(not_health)
        .layer(support::channel(addr).await);
    let mut health = HealthClient::new(channel.clone());
    let mut grpc = tonic::client::Grpc::new(channel);

    let cx = caller(&spans);
    async {
        health.check(request("")).await.unwrap();
        let mut watch = health.watch(request("")).await.unwrap().into_inner();
        assert!(watch.message().await.unwrap().is_some());
        drop(watch);
        unary(&mut grpc, "work").await.unwrap();
        health.check(request("")).await.unwrap();
    }
    .with_context(cx.clone())
    .await;
    cx.span().end();

    let caller = spans.one(SpanKind::Internal);
    let client = spans.one(SpanKind::Client);
    let server = spans.one(SpanKind::Server);
    assert_eq!(client.name, "lens.test.Echo/Echo");
    assert_eq!(server.name, "lens.test.Echo/Echo");
    assert_eq!(client.parent_span_id, caller.span_context.span_id());
    assert_eq!(server.parent_span_id, client.span_context.span_id());
}

#[tokio::test]
async fn the_interceptor_on_a_generated_client_parents_the_server_span() {
    let spans = Spans::new();
    let (_reporter, health) = tonic_health::server::health_reporter();
    let addr = serve(
        ServerLayer::new().with_tracer(spans.tracer("server")),
        health,
    )
    .await;
    let channel = support::channel(addr).await;

    let cx = caller(&spans);
    let mut client = HealthClient::with_interceptor(channel.clone(), ClientInterceptor::new());
    client
        .check(request(""))
        .with_context(cx.clone())
        .await
        .unwrap();
    // A filter on the method the generated client names in the request's extensions.
    let skip_health = ClientInterceptor::new().with_filter(|req: &tonic::Request<()>| {
        req.extensions()
            .get::<tonic::GrpcMethod<'static>>()
            .is_none_or(|m| m.service() != HEALTH)
    });
    let mut skipping = HealthClient::with_interceptor(channel, skip_health);
    skipping
        .check(request(""))
        .with_context(cx.clone())
        .await
        .unwrap();
    cx.span().end();

    let caller = spans.one(SpanKind::Internal);
    let servers: Vec<SpanData> = spans
        .finished()
        .into_iter()
        .filter(|s| s.span_kind == SpanKind::Server)
        .collect();
    assert_eq!(servers.len(), 2, "{servers:#?}");
    // The interceptor starts no span: the caller's span is the remote parent.
    assert_eq!(servers[0].parent_span_id, caller.span_context.span_id());
    assert!(servers[0].parent_span_is_remote);
    assert_eq!(
        servers[0].span_context.trace_id(),
        caller.span_context.trace_id()
    );
    // Filtered out, nothing was injected: the server started a trace of its own.
    assert_eq!(
        servers[1].parent_span_id,
        opentelemetry::trace::SpanId::INVALID
    );
    assert_ne!(
        servers[1].span_context.trace_id(),
        caller.span_context.trace_id()
    );
}

#[tokio::test]
async fn a_watch_the_client_drops_ends_both_spans() {
    let recorder = lens_testkit::recorder::Recorder::default();
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_span_processor(recorder.clone())
        .build();
    let tracer = opentelemetry::trace::TracerProvider::tracer(&provider, "watch");
    let (_reporter, health) = tonic_health::server::health_reporter();
    let addr = serve(ServerLayer::new().with_tracer(tracer.clone()), health).await;
    let channel = ClientLayer::new()
        .with_tracer(tracer)
        .layer(support::channel(addr).await);
    let mut client = HealthClient::new(channel);
    let mut stream = client.watch(request("")).await.unwrap().into_inner();
    assert!(stream.message().await.unwrap().is_some());
    assert!(recorder.ended().is_empty());
    // The client goes away mid-stream (the usual end of a Watch): the server's response is
    // dropped when the stream is reset, and both spans end.
    drop(stream);
    let spans = recorder.wait_for(2).await;
    assert_eq!(spans.len(), 2, "{spans:#?}");
    let of = |kind: SpanKind| spans.iter().find(|s| s.span_kind == kind).unwrap();
    let (client, server) = (of(SpanKind::Client), of(SpanKind::Server));
    assert_eq!(server.parent_span_id, client.span_context.span_id());
    for span in [client, server] {
        assert_eq!(span.name, "grpc.health.v1.Health/Watch");
    }
}
