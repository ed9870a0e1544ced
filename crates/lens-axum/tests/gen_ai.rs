//! The GenAI opt-in over a real streamed call: an axum route that says it is a GenAI operation
//! (a `GenAi` in its response's extensions) streams server-sent events to a lens-reqwest client
//! set up with `with_gen_ai`; both spans carry the GenAI attributes and the time to the first
//! chunk, and the conventions' histograms (units, buckets, attributes) are recorded from the
//! same marks; a response of one chunk records no GenAI figure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::convert::Infallible;

use axum::Extension;
use axum::response::sse::{Event, Sse};
use axum::{Router, routing::get};
use lens_axum::{GenAi, ServerLayer};
use lens_reqwest::ClientMiddleware;
use lens_span::genai::{
    CLIENT_TIME_PER_OUTPUT_CHUNK, CLIENT_TIME_TO_FIRST_CHUNK, RESPONSE_TIME_TO_FIRST_CHUNK,
    SERVER_TIME_PER_OUTPUT_TOKEN, SERVER_TIME_TO_FIRST_TOKEN, TIME_PER_OUTPUT_BUCKETS_S,
    TIME_TO_FIRST_BUCKETS_S,
};
use lens_span::stream::TIME_TO_FIRST_CHUNK;
use lens_testkit::metrics::{Metrics, Point};
use opentelemetry::Value;
use opentelemetry::trace::SpanKind;
use opentelemetry_sdk::trace::SpanData;
use reqwest_middleware::ClientBuilder;
use support::{serve, span};

fn attribute(span: &SpanData, key: &str) -> Option<Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
}

fn seconds(span: &SpanData, key: &str) -> f64 {
    match attribute(span, key) {
        Some(Value::F64(s)) => s,
        other => panic!("{key}: {other:?}"),
    }
}

fn one(points: &[Point], name: &str) -> Point {
    let found: Vec<&Point> = points.iter().filter(|p| p.name == name).collect();
    assert_eq!(found.len(), 1, "{name}: {points:#?}");
    found[0].clone()
}

fn assert_gen_ai_span(span: &SpanData) {
    assert_eq!(
        attribute(span, "gen_ai.operation.name"),
        Some(Value::from("chat"))
    );
    assert_eq!(
        attribute(span, "gen_ai.provider.name"),
        Some(Value::from("vllm"))
    );
    assert_eq!(
        attribute(span, "gen_ai.request.model"),
        Some(Value::from("llama-3.1-8b"))
    );
    let gen_ai = seconds(span, RESPONSE_TIME_TO_FIRST_CHUNK);
    assert_eq!(
        gen_ai,
        seconds(span, TIME_TO_FIRST_CHUNK),
        "one figure, two names"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_gen_ai_call_records_the_conventions_figures_on_both_sides() {
    let (_p, tracer, recorder) = support::provider();
    let server_metrics = Metrics::new();
    let client_metrics = Metrics::new();
    let op = GenAi::new("chat", "vllm").with_model("llama-3.1-8b");
    let route_op = op.clone();
    let addr = serve(
        Router::new()
            .route(
                "/generate",
                get(move || {
                    let op = route_op.clone();
                    async move {
                        let tokens = futures_util::stream::iter(
                            ["a", "b", "c", "d"]
                                .map(|t| Ok::<_, Infallible>(Event::default().data(t))),
                        );
                        (Extension(op), Sse::new(tokens))
                    }
                }),
            )
            .route(
                "/embed",
                get(|| async { (Extension(GenAi::new("embeddings", "vllm")), "[0.1]") }),
            )
            .layer(
                ServerLayer::new()
                    .with_tracer(tracer.clone())
                    .with_meter(server_metrics.meter("server")),
            ),
    )
    .await;
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(
            ClientMiddleware::new()
                .with_tracer(tracer)
                .with_meter(client_metrics.meter("client"))
                .with_gen_ai(op),
        )
        .build();
    let text = client
        .get(format!("http://{addr}/generate"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.contains("data: d"), "{text}");
    let spans = recorder.wait_for(2).await;
    let server = span(&spans, "GET /generate", SpanKind::Server);
    let client_span = span(&spans, "GET", SpanKind::Client);
    assert_gen_ai_span(server);
    assert_gen_ai_span(client_span);

    let points = server_metrics.collect();
    let first = one(&points, SERVER_TIME_TO_FIRST_TOKEN);
    assert_eq!((first.unit.as_str(), first.value), ("s", 1.0));
    assert!((first.sum - seconds(server, TIME_TO_FIRST_CHUNK)).abs() < 1e-9);
    assert_eq!(first.bounds, TIME_TO_FIRST_BUCKETS_S);
    assert_eq!(first.get("gen_ai.operation.name"), Some("chat"));
    assert_eq!(first.get("gen_ai.provider.name"), Some("vllm"));
    assert_eq!(first.get("gen_ai.request.model"), Some("llama-3.1-8b"));
    let per = one(&points, SERVER_TIME_PER_OUTPUT_TOKEN);
    assert_eq!((per.unit.as_str(), per.value), ("s", 1.0));
    assert_eq!(per.bounds, TIME_PER_OUTPUT_BUCKETS_S);

    let points = client_metrics.collect();
    let first = one(&points, CLIENT_TIME_TO_FIRST_CHUNK);
    assert!((first.sum - seconds(client_span, TIME_TO_FIRST_CHUNK)).abs() < 1e-9);
    assert_eq!(first.get("server.address"), Some("127.0.0.1"));
    assert_eq!(
        first.get("server.port"),
        Some(addr.port().to_string().as_str())
    );
    assert_eq!(first.bounds, TIME_TO_FIRST_BUCKETS_S);
    let per = one(&points, CLIENT_TIME_PER_OUTPUT_CHUNK);
    assert_eq!(per.value, 1.0);
    assert!(first.get("url.full").is_none());

    // One chunk: the GenAI attributes, no figure.
    let body = reqwest::get(format!("http://{addr}/embed"))
        .await
        .unwrap()
        .text()
        .await;
    assert_eq!(body.unwrap(), "[0.1]");
    let spans = recorder.wait_for(3).await;
    let embed = span(&spans, "GET /embed", SpanKind::Server);
    assert_eq!(
        attribute(embed, "gen_ai.operation.name"),
        Some(Value::from("embeddings"))
    );
    assert_eq!(attribute(embed, RESPONSE_TIME_TO_FIRST_CHUNK), None);
    let points = server_metrics.collect();
    assert_eq!(
        one(&points, SERVER_TIME_TO_FIRST_TOKEN).value,
        1.0,
        "still only the stream's"
    );
}
