//! 500 concurrent requests with distinct trace ids: every handler and every outbound call sees
//! its own trace (no context bleeding between tasks).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use axum::http::HeaderMap;
use axum::{Router, routing::get};
use lens_axum::{RequestContext, ServerLayer};
use lens_reqwest::ClientMiddleware;
use opentelemetry::Context;
use opentelemetry::trace::TraceContextExt;
use reqwest_middleware::ClientBuilder;
use support::serve;

const REQUESTS: u64 = 500;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn five_hundred_requests_keep_their_own_trace() {
    let (_p, tracer, _recorder) = support::provider();
    let layer = ServerLayer::new().with_tracer(tracer.clone());
    // The downstream service answers with the trace id it received.
    let downstream = serve(
        Router::new()
            .route(
                "/echo",
                get(|headers: HeaderMap| async move {
                    headers["traceparent"].to_str().unwrap()[3..35].to_owned()
                }),
            )
            .layer(layer.clone()),
    )
    .await;
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(ClientMiddleware::new().with_tracer(tracer))
        .build();
    let front = serve(
        Router::new()
            .route(
                "/",
                get(move |cx: RequestContext, headers: HeaderMap| {
                    let client = client.clone();
                    async move {
                        let expected = headers["x-expected"].to_str().unwrap().to_owned();
                        let current = || {
                            Context::current()
                                .span()
                                .span_context()
                                .trace_id()
                                .to_string()
                        };
                        let mut seen = vec![current(), cx.trace_id().unwrap().to_string()];
                        tokio::task::yield_now().await;
                        seen.push(current());
                        let echoed = client
                            .get(format!("http://{downstream}/echo"))
                            .send()
                            .await
                            .unwrap()
                            .text()
                            .await
                            .unwrap();
                        seen.push(echoed);
                        seen.push(current());
                        if seen.iter().all(|s| *s == expected) {
                            "ok".to_owned()
                        } else {
                            format!("expected {expected}, saw {seen:?}")
                        }
                    }
                }),
            )
            .layer(layer),
    )
    .await;

    let driver = reqwest::Client::new();
    let mut tasks = Vec::new();
    for i in 1..=REQUESTS {
        let driver = driver.clone();
        tasks.push(tokio::spawn(async move {
            let trace = format!("{:032x}", 0xabc0_0000_0000_0000_u64 + i);
            driver
                .get(format!("http://{front}/"))
                .header("traceparent", format!("00-{trace}-00f067aa0ba902b7-01"))
                .header("x-expected", trace)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        }));
    }
    let mut failures = Vec::new();
    for task in tasks {
        let result = task.await.unwrap();
        if result != "ok" {
            failures.push(result);
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
}
