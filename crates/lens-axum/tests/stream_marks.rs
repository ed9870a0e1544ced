//! The SERVER span of a streamed response (server-sent events) records when its first event
//! was sent, how many chunks went out and how the stream ended: in full, abandoned by a client
//! that went away after three events, or broken by the handler's stream; a one-chunk response
//! records none of it. Over a real loopback connection.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::SystemTime;

use axum::response::sse::{Event, Sse};
use axum::{Router, routing::get};
use lens_axum::ServerLayer;
use lens_span::stream::{CHUNKS, END, FIRST_CHUNK_EVENT, TIME_TO_FIRST_CHUNK};
use opentelemetry::Value;
use opentelemetry::trace::SpanKind;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData};
use support::{serve, span};
use tokio::sync::mpsc;

type Item = Result<Event, std::io::Error>;

/// A server whose `/events` streams what the test sends (one stream, taken by the first
/// request) and whose `/one` answers in one chunk.
async fn server() -> (
    std::net::SocketAddr,
    mpsc::Sender<Item>,
    support::Recorder,
    SdkTracerProvider,
) {
    let (provider, tracer, recorder) = support::provider();
    let (tx, rx) = mpsc::channel::<Item>(1);
    let rx = std::sync::Arc::new(std::sync::Mutex::new(Some(rx)));
    let addr = serve(
        Router::new()
            .route(
                "/events",
                get(move || {
                    let rx = rx.lock().unwrap().take().unwrap();
                    async move {
                        Sse::new(futures_util::stream::unfold(rx, |mut rx| async move {
                            rx.recv().await.map(|item| (item, rx))
                        }))
                    }
                }),
            )
            .route("/one", get(|| async { "one chunk" }))
            .layer(ServerLayer::new().with_tracer(tracer)),
    )
    .await;
    (addr, tx, recorder, provider)
}

fn attribute(span: &SpanData, key: &str) -> Option<Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
}

fn event(text: &str) -> Item {
    Ok(Event::default().data(text))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_event_sent_is_marked() {
    let (addr, tx, recorder, _provider) = server().await;
    let mut res = reqwest::get(format!("http://{addr}/events")).await.unwrap();
    let released = SystemTime::now();
    tx.send(event("token 1")).await.unwrap();
    assert!(
        res.chunk()
            .await
            .unwrap()
            .unwrap()
            .starts_with(b"data: token 1")
    );
    let received = SystemTime::now();
    for text in ["token 2", "token 3"] {
        tx.send(event(text)).await.unwrap();
        assert!(res.chunk().await.unwrap().is_some());
    }
    drop(tx);
    assert!(res.chunk().await.unwrap().is_none());
    let spans = recorder.wait_for(1).await;
    let s = span(&spans, "GET /events", SpanKind::Server);
    let marks: Vec<_> = s.events.iter().map(|e| e.name.to_string()).collect();
    assert_eq!(marks, [FIRST_CHUNK_EVENT]);
    let sent = s.events[0].timestamp;
    assert!(
        released <= sent && sent <= received,
        "marked when it went out"
    );
    let Some(Value::F64(figure)) = attribute(s, TIME_TO_FIRST_CHUNK) else {
        panic!("no {TIME_TO_FIRST_CHUNK}");
    };
    let expected = sent.duration_since(s.start_time).unwrap().as_secs_f64();
    assert!((figure - expected).abs() < 1e-6);
    assert_eq!(attribute(s, CHUNKS), Some(Value::I64(3)));
    assert_eq!(attribute(s, END), Some(Value::from("complete")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_chunk_response_records_nothing_extra() {
    let (addr, _tx, recorder, _provider) = server().await;
    let body = reqwest::get(format!("http://{addr}/one"))
        .await
        .unwrap()
        .text()
        .await;
    assert_eq!(body.unwrap(), "one chunk");
    let spans = recorder.wait_for(1).await;
    let s = span(&spans, "GET /one", SpanKind::Server);
    assert!(s.events.is_empty(), "{:?}", s.events);
    assert_eq!(attribute(s, CHUNKS), None);
    assert_eq!(attribute(s, END), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_gone_after_three_events_ends_the_span_abandoned() {
    let (addr, tx, recorder, _provider) = server().await;
    let mut res = reqwest::get(format!("http://{addr}/events")).await.unwrap();
    for text in ["token 1", "token 2", "token 3"] {
        tx.send(event(text)).await.unwrap();
        assert!(res.chunk().await.unwrap().is_some());
    }
    drop(res); // the client disconnects
    // The server finds out when a write fails, and drops the body (and its stream): keep the
    // engine producing until then.
    let producer = tokio::spawn(async move {
        let mut sent = 0u32;
        while tx.send(event("more")).await.is_ok() {
            sent += 1;
        }
        sent
    });
    let spans = recorder.wait_for(1).await;
    let s = span(&spans, "GET /events", SpanKind::Server);
    assert_eq!(attribute(s, END), Some(Value::from("abandoned")));
    let Some(Value::I64(chunks)) = attribute(s, CHUNKS) else {
        panic!("no {CHUNKS}");
    };
    assert!(chunks >= 3, "{chunks}");
    let marks: Vec<_> = s.events.iter().map(|e| e.name.to_string()).collect();
    assert_eq!(marks, [FIRST_CHUNK_EVENT]);
    producer.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_the_handler_breaks_ends_the_span_failed() {
    let (addr, tx, recorder, _provider) = server().await;
    let mut res = reqwest::get(format!("http://{addr}/events")).await.unwrap();
    for text in ["token 1", "token 2"] {
        tx.send(event(text)).await.unwrap();
        assert!(res.chunk().await.unwrap().is_some());
    }
    tx.send(Err(std::io::Error::other("engine crashed")))
        .await
        .unwrap();
    assert!(res.chunk().await.is_err(), "the client sees the stream cut");
    let spans = recorder.wait_for(1).await;
    let s = span(&spans, "GET /events", SpanKind::Server);
    assert_eq!(attribute(s, CHUNKS), Some(Value::I64(2)));
    assert_eq!(attribute(s, END), Some(Value::from("failed")));
    assert!(attribute(s, "error.type").is_some());
}
