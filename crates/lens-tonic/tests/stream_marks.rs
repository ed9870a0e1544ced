//! gRPC streams, both sides: a server stream and a bidirectional stream mark when their first
//! message went out (SERVER) and arrived (CLIENT, after the response head), how many went
//! through and how the stream ended; a client that stops after three messages and a server
//! that resets the stream end both spans with the marks they reached. Over real loopback HTTP/2,
//! each message released by the test.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    unreachable_pub
)]

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};

use bytes::Bytes;
use http_body::Frame;
use lens_span::stream::{CHUNKS, END, FIRST_CHUNK_EVENT, HEAD_EVENT};
use lens_testkit::recorder::Recorder;
use lens_tonic::{ClientLayer, JsonCodec, ServerLayer};
use opentelemetry::Value;
use opentelemetry::trace::{SpanKind, TracerProvider as _};
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData};
use tokio::sync::mpsc;
use tonic::body::Body;
use tonic::server::{NamedService, StreamingService};
use tonic::transport::{Endpoint, Server};
use tonic::{Request, Response, Status, Streaming};
use tower_layer::Layer;

const GENERATE: &str = "/lens.test.Tokens/Generate";
const CHAT: &str = "/lens.test.Tokens/Chat";

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
type RawFrames = mpsc::Receiver<Result<Frame<Bytes>, Status>>;

/// `Generate` answers with the raw HTTP/2 frames the test releases (gRPC messages, trailers, or
/// an error: the stream reset); `Chat` echoes each message as it arrives.
#[derive(Clone)]
struct Tokens {
    generate: Arc<Mutex<Option<RawFrames>>>,
}

impl NamedService for Tokens {
    const NAME: &'static str = "lens.test.Tokens";
}

#[derive(Clone)]
struct Echo;

type EchoStream = Pin<Box<dyn tokio_stream::Stream<Item = Result<String, Status>> + Send>>;

impl StreamingService<String> for Echo {
    type Response = String;
    type ResponseStream = EchoStream;
    type Future = BoxFuture<Result<Response<EchoStream>, Status>>;

    fn call(&mut self, request: Request<Streaming<String>>) -> Self::Future {
        let incoming = request.into_inner();
        Box::pin(async move {
            let echoes = futures_util::stream::unfold(incoming, |mut incoming| async move {
                match incoming.message().await {
                    Ok(Some(text)) => Some((Ok(format!("echo: {text}")), incoming)),
                    Ok(None) => None,
                    Err(status) => Some((Err(status), incoming)),
                }
            });
            let echoes: EchoStream = Box::pin(echoes);
            Ok(Response::new(echoes))
        })
    }
}

impl tower_service::Service<http::Request<Body>> for Tokens {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<http::Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        match request.uri().path() {
            GENERATE => {
                let frames = self.generate.lock().unwrap().take().unwrap();
                Box::pin(async move {
                    let frames = futures_util::stream::unfold(frames, |mut rx| async move {
                        rx.recv().await.map(|frame| (frame, rx))
                    });
                    let body = Body::new(http_body_util::StreamBody::new(frames));
                    Ok(http::Response::builder()
                        .header("content-type", "application/grpc")
                        .body(body)
                        .unwrap())
                })
            }
            CHAT => Box::pin(async move {
                let mut grpc = tonic::server::Grpc::new(JsonCodec::<String, String>::new());
                Ok(grpc.streaming(Echo, request).await)
            }),
            _ => Box::pin(async move { Ok(Status::unimplemented("no such method").into_http()) }),
        }
    }
}

/// A gRPC message frame: `text` as JSON behind the 5-byte prefix.
fn message(text: &str) -> Result<Frame<Bytes>, Status> {
    let json = serde_json::to_vec(text).unwrap();
    let mut bytes = Vec::with_capacity(5 + json.len());
    bytes.push(0);
    bytes.extend_from_slice(&u32::try_from(json.len()).unwrap().to_be_bytes());
    bytes.extend_from_slice(&json);
    Ok(Frame::data(Bytes::from(bytes)))
}

fn trailers_ok() -> Result<Frame<Bytes>, Status> {
    let mut trailers = http::HeaderMap::new();
    trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
    Ok(Frame::trailers(trailers))
}

type Client = tonic::client::Grpc<lens_tonic::ClientService<tonic::transport::Channel>>;

struct Setup {
    recorder: Recorder,
    server_metrics: lens_testkit::metrics::Metrics,
    client_metrics: lens_testkit::metrics::Metrics,
    grpc: Client,
    generate: Arc<Mutex<Option<RawFrames>>>,
    _provider: SdkTracerProvider,
}

async fn setup() -> Setup {
    setup_with(None).await
}

/// Both layers with metrics on, and with `gen_ai` when given.
async fn setup_with(gen_ai: Option<lens_tonic::GenAi>) -> Setup {
    let server_metrics = lens_testkit::metrics::Metrics::new();
    let client_metrics = lens_testkit::metrics::Metrics::new();
    let recorder = Recorder::default();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(recorder.clone())
        .build();
    let generate = Arc::new(Mutex::new(None));
    let service = Tokens {
        generate: generate.clone(),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let mut layer = ServerLayer::new()
        .with_tracer(provider.tracer("server"))
        .with_meter(server_metrics.meter("server"));
    if let Some(gen_ai) = &gen_ai {
        layer = layer.with_gen_ai(gen_ai.clone());
    }
    tokio::spawn(async move {
        Server::builder()
            .layer(layer)
            .add_service(service)
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener))
            .await
            .unwrap();
    });
    let channel = Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut client_layer = ClientLayer::new()
        .with_tracer(provider.tracer("client"))
        .with_meter(client_metrics.meter("client"));
    if let Some(gen_ai) = gen_ai {
        client_layer = client_layer.with_gen_ai(gen_ai);
    }
    let channel = client_layer.layer(channel);
    Setup {
        recorder,
        server_metrics,
        client_metrics,
        grpc: tonic::client::Grpc::new(channel),
        generate,
        _provider: provider,
    }
}

fn of_kind(spans: &[SpanData], kind: SpanKind) -> &SpanData {
    let mut found = spans.iter().filter(|s| s.span_kind == kind);
    let span = found.next().unwrap_or_else(|| panic!("no {kind:?} span"));
    assert!(found.next().is_none(), "one {kind:?} span: {spans:#?}");
    span
}

fn attr(span: &SpanData, key: &str) -> Option<Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
}

fn marks(span: &SpanData) -> Vec<(String, std::time::SystemTime)> {
    span.events
        .iter()
        .map(|e| (e.name.to_string(), e.timestamp))
        .collect()
}

/// The client's and the server's marks agree: the server sent its first message before the
/// client received it, after the client received the head.
fn assert_marks_agree(client: &SpanData, server: &SpanData) {
    let client_marks = marks(client);
    let server_marks = marks(server);
    let names: Vec<_> = client_marks.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, [HEAD_EVENT, FIRST_CHUNK_EVENT]);
    let names: Vec<_> = server_marks.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, [FIRST_CHUNK_EVENT]);
    let (head, client_first) = (client_marks[0].1, client_marks[1].1);
    let server_first = server_marks[0].1;
    assert!(head <= client_first);
    assert!(server_first <= client_first, "sent before it arrived");
}

async fn generate(
    setup: &mut Setup,
) -> (
    mpsc::Sender<Result<Frame<Bytes>, Status>>,
    Streaming<String>,
) {
    let (tx, rx) = mpsc::channel(4);
    *setup.generate.lock().unwrap() = Some(rx);
    setup.grpc.ready().await.unwrap();
    let response = setup
        .grpc
        .server_streaming(
            Request::new("prompt".to_owned()),
            http::uri::PathAndQuery::from_static(GENERATE),
            JsonCodec::<String, String>::new(),
        )
        .await
        .unwrap();
    (tx, response.into_inner())
}

#[tokio::test]
async fn a_server_stream_is_marked_on_both_sides() {
    let mut setup = setup().await;
    let (tx, mut stream) = generate(&mut setup).await;
    for text in ["token 1", "token 2", "token 3"] {
        tx.send(message(text)).await.unwrap();
        assert_eq!(stream.message().await.unwrap().as_deref(), Some(text));
    }
    assert!(
        setup.recorder.ended().is_empty(),
        "both spans last the stream"
    );
    tx.send(trailers_ok()).await.unwrap();
    assert_eq!(stream.message().await.unwrap(), None);
    let spans = setup.recorder.wait_for(2).await;
    let (client, server) = (
        of_kind(&spans, SpanKind::Client),
        of_kind(&spans, SpanKind::Server),
    );
    assert_marks_agree(client, server);
    for span in [client, server] {
        assert_eq!(attr(span, CHUNKS), Some(Value::I64(3)));
        assert_eq!(attr(span, END), Some(Value::from("complete")));
        assert_eq!(attr(span, "rpc.grpc.status_code"), Some(Value::I64(0)));
    }
}

#[tokio::test]
async fn a_client_that_stops_after_three_messages_ends_both_spans_abandoned() {
    let mut setup = setup().await;
    let (tx, mut stream) = generate(&mut setup).await;
    for text in ["token 1", "token 2", "token 3"] {
        tx.send(message(text)).await.unwrap();
        assert!(stream.message().await.unwrap().is_some());
    }
    drop(stream); // the client goes away: RST_STREAM(CANCEL)
    let spans = setup.recorder.wait_for(2).await;
    let (client, server) = (
        of_kind(&spans, SpanKind::Client),
        of_kind(&spans, SpanKind::Server),
    );
    assert_marks_agree(client, server);
    for span in [client, server] {
        assert_eq!(attr(span, CHUNKS), Some(Value::I64(3)));
        assert_eq!(attr(span, END), Some(Value::from("abandoned")));
        assert_eq!(
            attr(span, "rpc.grpc.status_code"),
            Some(Value::I64(1)),
            "CANCELLED"
        );
    }
    drop(tx);
}

#[tokio::test]
async fn a_server_that_resets_the_stream_ends_both_spans_failed() {
    let mut setup = setup().await;
    let (tx, mut stream) = generate(&mut setup).await;
    for text in ["token 1", "token 2"] {
        tx.send(message(text)).await.unwrap();
        assert!(stream.message().await.unwrap().is_some());
    }
    tx.send(Err(Status::internal("engine crashed")))
        .await
        .unwrap();
    assert!(stream.message().await.is_err(), "the client sees the reset");
    let spans = setup.recorder.wait_for(2).await;
    let (client, server) = (
        of_kind(&spans, SpanKind::Client),
        of_kind(&spans, SpanKind::Server),
    );
    assert_marks_agree(client, server);
    for span in [client, server] {
        assert_eq!(attr(span, CHUNKS), Some(Value::I64(2)));
        assert_eq!(attr(span, END), Some(Value::from("failed")));
        assert!(attr(span, "error.type").is_some(), "{span:#?}");
    }
}

#[tokio::test]
async fn a_bidirectional_stream_is_marked_on_both_sides() {
    let mut setup = setup().await;
    let (tx, rx) = mpsc::channel::<String>(4);
    setup.grpc.ready().await.unwrap();
    let response = setup.grpc.streaming(
        Request::new(tokio_stream::wrappers::ReceiverStream::new(rx)),
        http::uri::PathAndQuery::from_static(CHAT),
        JsonCodec::<String, String>::new(),
    );
    tx.send("hello".to_owned()).await.unwrap();
    let mut replies = response.await.unwrap().into_inner();
    assert_eq!(
        replies.message().await.unwrap().as_deref(),
        Some("echo: hello")
    );
    for text in ["how", "are you"] {
        tx.send(text.to_owned()).await.unwrap();
        assert_eq!(
            replies.message().await.unwrap(),
            Some(format!("echo: {text}"))
        );
    }
    drop(tx);
    assert_eq!(replies.message().await.unwrap(), None);
    let spans = setup.recorder.wait_for(2).await;
    let (client, server) = (
        of_kind(&spans, SpanKind::Client),
        of_kind(&spans, SpanKind::Server),
    );
    assert_marks_agree(client, server);
    for span in [client, server] {
        assert_eq!(attr(span, CHUNKS), Some(Value::I64(3)));
        assert_eq!(attr(span, END), Some(Value::from("complete")));
    }
}

#[tokio::test]
async fn a_gen_ai_server_stream_records_the_conventions_figures_on_both_sides() {
    let op = lens_tonic::GenAi::new("chat", "triton").with_model("llama");
    let mut setup = setup_with(Some(op)).await;
    let (tx, mut stream) = generate(&mut setup).await;
    for text in ["token 1", "token 2", "token 3"] {
        tx.send(message(text)).await.unwrap();
        assert!(stream.message().await.unwrap().is_some());
    }
    tx.send(trailers_ok()).await.unwrap();
    assert_eq!(stream.message().await.unwrap(), None);
    let spans = setup.recorder.wait_for(2).await;
    for kind in [SpanKind::Client, SpanKind::Server] {
        let span = of_kind(&spans, kind.clone());
        assert_eq!(
            attr(span, "gen_ai.operation.name"),
            Some(Value::from("chat"))
        );
        assert_eq!(
            attr(span, "gen_ai.provider.name"),
            Some(Value::from("triton"))
        );
        assert_eq!(
            attr(span, "gen_ai.response.time_to_first_chunk"),
            attr(span, lens_span::stream::TIME_TO_FIRST_CHUNK),
            "{kind:?}"
        );
    }
    let points = setup.server_metrics.collect();
    let first: Vec<_> = points
        .iter()
        .filter(|p| p.name == "gen_ai.server.time_to_first_token")
        .collect();
    assert_eq!(first.len(), 1, "{points:#?}");
    assert_eq!(
        (first[0].value, first[0].get("gen_ai.request.model")),
        (1.0, Some("llama"))
    );
    assert!(
        points
            .iter()
            .any(|p| p.name == "gen_ai.server.time_per_output_token")
    );
    let points = setup.client_metrics.collect();
    let first: Vec<_> = points
        .iter()
        .filter(|p| p.name == "gen_ai.client.operation.time_to_first_chunk")
        .collect();
    assert_eq!(first.len(), 1, "{points:#?}");
    // (No `server.address` here: a channel hides it unless `with_server_address` says it.)
    assert_eq!(first[0].get("gen_ai.operation.name"), Some("chat"));
    assert!(
        points
            .iter()
            .any(|p| p.name == "gen_ai.client.operation.time_per_output_chunk")
    );
}
