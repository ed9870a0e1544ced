//! The CLIENT span lasts until the response body has been read to its end, has failed or has
//! been dropped, whatever the caller reads it with; a streamed response (chunked, server-sent
//! events) is marked with when its head and its first chunk arrived; a stream the caller
//! abandons, or the server breaks, ends the span with the marks it reached. Against a real
//! loopback axum server whose chunks the test releases one at a time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::time::SystemTime;

use axum::body::{Body, Bytes};
use axum::{Router, routing::get};
use futures_util::StreamExt as _;
use lens_reqwest::ClientMiddleware;
use lens_span::stream::{
    CHUNKS, END, FIRST_CHUNK_EVENT, HEAD_EVENT, TIME_TO_FIRST_CHUNK, TIME_TO_HEAD,
};
use opentelemetry::Value;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware};
use tokio::sync::mpsc;

type Chunk = Result<Bytes, std::io::Error>;

/// A server whose `/stream` sends what the test pushes into the returned sender, chunk by
/// chunk (an `Err` breaks the connection), and whose `/json` answers `[1,2,3]` in one frame.
async fn serve() -> (SocketAddr, mpsc::Sender<mpsc::Receiver<Chunk>>) {
    let (streams_tx, streams_rx) = mpsc::channel::<mpsc::Receiver<Chunk>>(4);
    let streams = std::sync::Arc::new(tokio::sync::Mutex::new(streams_rx));
    let router = Router::new()
        .route(
            "/stream",
            get(move || {
                let streams = streams.clone();
                async move {
                    let rx = streams.lock().await.recv().await.unwrap();
                    let chunks = futures_util::stream::unfold(rx, |mut rx| async move {
                        rx.recv().await.map(|chunk| (chunk, rx))
                    });
                    Body::from_stream(chunks)
                }
            }),
        )
        .route("/json", get(|| async { "[1,2,3]" }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (addr, streams_tx)
}

fn traced() -> (
    ClientWithMiddleware,
    InMemorySpanExporter,
    SdkTracerProvider,
) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let mw = ClientMiddleware::new().with_tracer(provider.tracer("test"));
    let client = ClientBuilder::new(reqwest::Client::new()).with(mw).build();
    (client, exporter, provider)
}

fn ended(exporter: &InMemorySpanExporter) -> Vec<SpanData> {
    exporter.get_finished_spans().unwrap()
}

fn attribute(span: &SpanData, key: &str) -> Option<Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
}

fn seconds(span: &SpanData, key: &str) -> f64 {
    match attribute(span, key) {
        Some(Value::F64(s)) => s,
        other => panic!("{key}: a figure in seconds, got {other:?}"),
    }
}

fn events(span: &SpanData) -> Vec<String> {
    span.events.iter().map(|e| e.name.to_string()).collect()
}

/// Opens a stream on the server: the sender of its chunks.
async fn open(streams: &mpsc::Sender<mpsc::Receiver<Chunk>>) -> mpsc::Sender<Chunk> {
    let (tx, rx) = mpsc::channel(16);
    streams.send(rx).await.unwrap();
    tx
}

fn chunk(text: &'static str) -> Chunk {
    Ok(Bytes::from_static(text.as_bytes()))
}

/// One way of reading a whole body.
async fn read_with(how: &str, response: reqwest::Response) {
    match how {
        "bytes" => assert_eq!(&response.bytes().await.unwrap()[..], b"[1,2,3]"),
        "text" => assert_eq!(response.text().await.unwrap(), "[1,2,3]"),
        "json" => assert_eq!(response.json::<Vec<u32>>().await.unwrap(), [1, 2, 3]),
        "chunk" => {
            let mut response = response;
            let mut all = Vec::new();
            while let Some(chunk) = response.chunk().await.unwrap() {
                all.extend_from_slice(&chunk);
            }
            assert_eq!(all, b"[1,2,3]");
        }
        "bytes_stream" => {
            let mut stream = response.bytes_stream();
            let mut all = Vec::new();
            while let Some(chunk) = stream.next().await {
                all.extend_from_slice(&chunk.unwrap());
            }
            assert_eq!(all, b"[1,2,3]");
        }
        other => panic!("{other}"),
    }
}

#[tokio::test]
async fn the_span_ends_when_the_body_is_read_whatever_reads_it() {
    let (addr, _streams) = serve().await;
    for how in ["bytes", "text", "json", "chunk", "bytes_stream"] {
        let (client, exporter, _provider) = traced();
        let response = client
            .get(format!("http://{addr}/json"))
            .send()
            .await
            .unwrap();
        assert!(
            ended(&exporter).is_empty(),
            "{how}: the span outlives the head"
        );
        read_with(how, response).await;
        let spans = ended(&exporter);
        assert_eq!(spans.len(), 1, "{how}: the span ends with the body");
        assert_eq!(
            attribute(&spans[0], "http.response.status_code"),
            Some(Value::I64(200))
        );
        // One data frame: nothing about streams.
        assert!(events(&spans[0]).is_empty(), "{how}: {:?}", spans[0].events);
        assert_eq!(attribute(&spans[0], CHUNKS), None, "{how}");
    }
}

#[tokio::test]
async fn a_response_dropped_unread_ends_the_span() {
    let (addr, _streams) = serve().await;
    let (client, exporter, _provider) = traced();
    let response = client
        .get(format!("http://{addr}/json"))
        .send()
        .await
        .unwrap();
    assert!(ended(&exporter).is_empty());
    drop(response);
    assert_eq!(ended(&exporter).len(), 1);
}

#[tokio::test]
async fn a_stream_marks_its_head_and_first_chunk() {
    let (addr, streams) = serve().await;
    let (client, exporter, _provider) = traced();
    let request = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .get(format!("http://{addr}/stream"))
                .send()
                .await
                .unwrap()
        }
    });
    let chunks = open(&streams).await;
    let mut response = request.await.unwrap();
    let head_seen = SystemTime::now();
    // The first chunk leaves the server only now, after the head arrived.
    let first_sent = SystemTime::now();
    chunks.send(chunk("data: 1\n\n")).await.unwrap();
    assert_eq!(
        &response.chunk().await.unwrap().unwrap()[..],
        b"data: 1\n\n"
    );
    let first_read = SystemTime::now();
    for text in ["data: 2\n\n", "data: 3\n\n"] {
        chunks.send(chunk(text)).await.unwrap();
        assert_eq!(
            &response.chunk().await.unwrap().unwrap()[..],
            text.as_bytes()
        );
    }
    assert!(ended(&exporter).is_empty(), "the span lasts the stream");
    drop(chunks); // the server ends the stream
    assert!(response.chunk().await.unwrap().is_none());

    let spans = ended(&exporter);
    assert_eq!(spans.len(), 1);
    let span = &spans[0];
    assert_eq!(events(span), [HEAD_EVENT, FIRST_CHUNK_EVENT]);
    let head = span.events[0].timestamp;
    let first = span.events[1].timestamp;
    assert!(head <= head_seen, "the head is marked when it arrived");
    assert!(
        first_sent <= first && first <= first_read,
        "the first chunk when it arrived"
    );
    let since_start = |t: SystemTime| t.duration_since(span.start_time).unwrap().as_secs_f64();
    assert!((seconds(span, TIME_TO_HEAD) - since_start(head)).abs() < 1e-6);
    assert!((seconds(span, TIME_TO_FIRST_CHUNK) - since_start(first)).abs() < 1e-6);
    assert_eq!(attribute(span, CHUNKS), Some(Value::I64(3)));
    assert_eq!(attribute(span, END), Some(Value::from("complete")));
    assert!(span.end_time >= first_read, "the span ends with the stream");
}

#[tokio::test]
async fn a_client_that_stops_after_three_chunks_ends_the_span_abandoned() {
    let (addr, streams) = serve().await;
    let (client, exporter, _provider) = traced();
    let request = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .get(format!("http://{addr}/stream"))
                .send()
                .await
                .unwrap()
        }
    });
    let chunks = open(&streams).await;
    let mut response = request.await.unwrap();
    for text in ["data: 1\n\n", "data: 2\n\n", "data: 3\n\n"] {
        chunks.send(chunk(text)).await.unwrap();
        assert!(response.chunk().await.unwrap().is_some());
    }
    chunks.send(chunk("data: 4\n\n")).await.unwrap();
    drop(response); // the caller goes away mid-stream
    let spans = ended(&exporter);
    assert_eq!(spans.len(), 1);
    assert_eq!(events(&spans[0]), [HEAD_EVENT, FIRST_CHUNK_EVENT]);
    assert_eq!(attribute(&spans[0], CHUNKS), Some(Value::I64(3)));
    assert_eq!(attribute(&spans[0], END), Some(Value::from("abandoned")));
    assert_eq!(
        attribute(&spans[0], "error.type"),
        None,
        "the caller's choice, not an error"
    );
}

#[tokio::test]
async fn a_server_that_breaks_the_stream_ends_the_span_failed() {
    let (addr, streams) = serve().await;
    let (client, exporter, _provider) = traced();
    let request = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .get(format!("http://{addr}/stream"))
                .send()
                .await
                .unwrap()
        }
    });
    let chunks = open(&streams).await;
    let mut response = request.await.unwrap();
    for text in ["data: 1\n\n", "data: 2\n\n"] {
        chunks.send(chunk(text)).await.unwrap();
        assert!(response.chunk().await.unwrap().is_some());
    }
    chunks
        .send(Err(std::io::Error::other("engine crashed")))
        .await
        .unwrap();
    assert!(
        response.chunk().await.is_err(),
        "the connection is cut mid-body"
    );
    let spans = ended(&exporter);
    assert_eq!(spans.len(), 1);
    assert_eq!(attribute(&spans[0], CHUNKS), Some(Value::I64(2)));
    assert_eq!(attribute(&spans[0], END), Some(Value::from("failed")));
    assert!(attribute(&spans[0], "error.type").is_some());
}
