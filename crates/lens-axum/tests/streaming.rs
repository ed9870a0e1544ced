//! The SERVER span ends only when a streaming response body has been sent in full.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::convert::Infallible;

use axum::body::Body;
use axum::{Router, routing::get};
use bytes::Bytes;
use lens_axum::ServerLayer;
use opentelemetry::trace::SpanKind;
use support::{serve, span};
use tokio::sync::mpsc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn span_ends_after_the_last_chunk() {
    let (_p, tracer, recorder) = support::provider();
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(4);
    let rx = std::sync::Mutex::new(Some(rx));
    let rx = std::sync::Arc::new(rx);
    let addr = serve(
        Router::new()
            .route(
                "/stream",
                get(move || {
                    let rx = rx.lock().unwrap().take().unwrap();
                    async move {
                        let stream = futures_util::stream::unfold(rx, |mut rx| async move {
                            rx.recv().await.map(|chunk| (chunk, rx))
                        });
                        Body::from_stream(stream)
                    }
                }),
            )
            .layer(ServerLayer::new().with_tracer(tracer)),
    )
    .await;

    let res = reqwest::Client::new()
        .get(format!("http://{addr}/stream"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let mut res = res;
    tx.send(Ok(Bytes::from_static(b"first"))).await.unwrap();
    assert_eq!(res.chunk().await.unwrap().unwrap(), "first");
    // Response head and a first chunk are out; the span must still be open.
    assert!(recorder.ended().is_empty(), "span ended before the body");
    let before_last = std::time::SystemTime::now();
    tx.send(Ok(Bytes::from_static(b"last"))).await.unwrap();
    drop(tx);
    assert_eq!(res.chunk().await.unwrap().unwrap(), "last");
    assert!(res.chunk().await.unwrap().is_none());
    let spans = recorder.wait_for(1).await;
    let s = span(&spans, "GET /stream", SpanKind::Server);
    assert!(s.end_time >= before_last);
}
