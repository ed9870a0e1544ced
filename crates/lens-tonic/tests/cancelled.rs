//! A call dropped before its status (the client stops reading a stream, or gives up on a unary
//! call) ends both spans with `rpc.grpc.status_code` = 1 (`CANCELLED`): what the client sees. An
//! error for the client, not for the server (the conventions' server errors).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use lens_testkit::recorder::Recorder;
use lens_tonic::{ClientLayer, JsonCodec, ServerLayer};
use opentelemetry::Value;
use opentelemetry::trace::{SpanKind, Status, TracerProvider as _};
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData};
use support::{ECHO, HOLDING, STREAM, attr, channel, serve};
use tonic::Request;
use tower_layer::Layer;

type Client = tonic::client::Grpc<lens_tonic::ClientService<tonic::transport::Channel>>;

async fn setup() -> (Recorder, Client) {
    let recorder = Recorder::default();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(recorder.clone())
        .build();
    let addr = serve(ServerLayer::new().with_tracer(provider.tracer("server"))).await;
    let channel = ClientLayer::new()
        .with_tracer(provider.tracer("client"))
        .layer(channel(addr).await);
    (recorder, tonic::client::Grpc::new(channel))
}

fn of_kind(spans: &[SpanData], kind: SpanKind) -> &SpanData {
    let mut found = spans.iter().filter(|s| s.span_kind == kind);
    let span = found.next().unwrap_or_else(|| panic!("no {kind:?} span"));
    assert!(found.next().is_none(), "one {kind:?} span: {spans:#?}");
    span
}

/// Both spans say CANCELLED; only the client's is an error.
fn assert_cancelled(spans: &[SpanData]) {
    assert_eq!(spans.len(), 2, "{spans:#?}");
    let client = of_kind(spans, SpanKind::Client);
    let server = of_kind(spans, SpanKind::Server);
    for span in [client, server] {
        assert_eq!(attr(span, "rpc.grpc.status_code"), Some(Value::I64(1)));
    }
    match &client.status {
        Status::Error { description } => {
            assert!(description.contains("cancelled"), "{description}");
        }
        other => panic!("the client's span: {other:?}"),
    }
    assert!(attr(client, "error.type").is_some());
    assert_eq!(server.status, Status::Unset);
    assert_eq!(attr(server, "error.type"), None);
    assert_eq!(
        client.span_context.trace_id(),
        server.span_context.trace_id()
    );
}

#[tokio::test]
async fn a_stream_the_client_stops_reading_ends_cancelled() {
    let (recorder, mut grpc) = setup().await;
    grpc.ready().await.unwrap();
    let response = grpc
        .server_streaming(
            Request::new("items:1;hold".to_owned()),
            http::uri::PathAndQuery::from_static(STREAM),
            JsonCodec::<String, String>::new(),
        )
        .await
        .unwrap();
    let mut stream = response.into_inner();
    assert!(stream.message().await.unwrap().is_some());
    assert!(
        recorder.ended().is_empty(),
        "both spans last while the stream is open"
    );
    drop(stream);
    assert_cancelled(&recorder.wait_for(2).await);
}

#[tokio::test]
async fn a_unary_call_dropped_before_its_answer_ends_cancelled() {
    let (recorder, mut grpc) = setup().await;
    grpc.ready().await.unwrap();
    let call = grpc.unary(
        Request::new("hold".to_owned()),
        http::uri::PathAndQuery::from_static(ECHO),
        JsonCodec::<String, String>::new(),
    );
    tokio::select! {
        result = call => panic!("a held call answered: {result:?}"),
        () = HOLDING.notified() => {}
    }
    // The call future is dropped here: the client resets the stream, the server drops its
    // response future.
    assert_cancelled(&recorder.wait_for(2).await);
}
