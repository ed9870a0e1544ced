//! lens-testkit's behaviour suite, run against [`ServerLayer`].
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Router, routing::get};
use bytes::Bytes;
use lens_axum::{Outcome, ServerLayer};
use lens_core::policy::InboundPolicy;
use lens_testkit::suite::{
    self, Call, Harness, Observed, Protocol, RESPOND, Respond, SKIP_HEADER, Setup, Side,
};
use opentelemetry::trace::SpanKind;
use tokio::sync::Semaphore;

struct Axum;

async fn handler(headers: HeaderMap, gate: Arc<Semaphore>) -> Response {
    let outgoing = suite::outgoing_of_current().to_json_bytes();
    let respond = headers
        .get(RESPOND)
        .and_then(|v| v.to_str().ok())
        .map_or(Respond::Ok, Respond::parse);
    match respond {
        Respond::Ok => outgoing.into_response(),
        Respond::CallerError => (StatusCode::NOT_FOUND, outgoing).into_response(),
        Respond::ServerError => (StatusCode::INTERNAL_SERVER_ERROR, outgoing).into_response(),
        Respond::Panic => panic!("the suite asked for a panic"),
        Respond::Cancel => {
            // A first part, then nothing: the caller goes away after it.
            let first =
                futures_util::stream::once(
                    async move { Ok::<_, Infallible>(Bytes::from(outgoing)) },
                );
            Body::from_stream(futures_util::StreamExt::chain(
                first,
                futures_util::stream::pending(),
            ))
            .into_response()
        }
        Respond::Stream => {
            let first =
                futures_util::stream::once(
                    async move { Ok::<_, Infallible>(Bytes::from(outgoing)) },
                );
            // The second part waits until the harness has checked the span is still open.
            let second = futures_util::stream::once(async move {
                let _permit = gate.acquire().await;
                Ok::<_, Infallible>(Bytes::from_static(b""))
            });
            Body::from_stream(futures_util::StreamExt::chain(first, second)).into_response()
        }
    }
}

impl Harness for Axum {
    fn side(&self) -> Side {
        Side::Server
    }

    fn protocol(&self) -> Protocol {
        Protocol::Http
    }

    fn supports(&self, _respond: Respond) -> bool {
        true
    }

    async fn run(&self, setup: Setup, call: Call, expect_spans: usize) -> Observed {
        let (_provider, tracer, recorder) = support::provider();
        let metrics = suite::metrics_for(&setup);
        let layer = lens_testkit::suite_knobs!(
            ServerLayer::new()
                .with_tracer(tracer)
                .with_inbound_policy(InboundPolicy::custom(move |_| setup.decision)),
            setup,
            |req| !req.headers.contains_key(SKIP_HEADER),
            |status: &StatusCode| match *status {
                StatusCode::NOT_FOUND => Outcome::failure(suite::CLASSIFIED_ERROR, ""),
                _ => Outcome::Success,
            },
            &metrics
        )
        .with_active_requests(setup.metrics)
        .with_body_sizes(setup.metrics);
        let gate = Arc::new(Semaphore::new(0));
        let handler_gate = Arc::clone(&gate);
        let router = Router::new()
            .route(
                "/",
                get(move |headers| handler(headers, handler_gate.clone())),
            )
            .layer(layer);
        let addr = support::serve(router).await;

        let client = reqwest::Client::new();
        let mut request = client
            .get(format!("http://{addr}/"))
            .header(RESPOND, call.respond.as_str());
        for (name, value) in &call.headers {
            request = request.header(*name, value);
        }
        if call.skip {
            request = request.header(SKIP_HEADER, "1");
        }
        let mut observed = Observed::default();
        let response = match request.send().await {
            Ok(response) => response,
            // The panic closed the connection (no CatchPanicLayer here): nothing to read.
            Err(_) if call.respond == Respond::Panic => {
                observed.spans = server_spans(recorder.wait_for(expect_spans).await);
                observed.metrics = suite::collected(&metrics);
                observed.response_bytes = Some(0);
                return observed;
            }
            Err(e) => panic!("request failed: {e}"),
        };
        let mut response = response;
        let first = response.chunk().await.unwrap().unwrap_or_default();
        let mut received = first.len();
        if call.respond == Respond::Stream {
            observed.open_after_first_part = Some(recorder.ended().is_empty());
            gate.add_permits(1);
        }
        if call.respond == Respond::Cancel {
            // The caller goes away: its connection closes, the server drops the response.
            drop(response);
        } else {
            while let Some(chunk) = response.chunk().await.unwrap() {
                received += chunk.len();
            }
        }
        let carrier = lens_core::Carrier::from_json_bytes(&first).unwrap();
        observed.outgoing = suite::carrier_lines(&carrier);
        observed.spans = server_spans(recorder.wait_for(expect_spans).await);
        observed.metrics = suite::collected(&metrics);
        observed.response_bytes = Some(received as u64);
        observed
    }
}

fn server_spans(
    spans: Vec<opentelemetry_sdk::trace::SpanData>,
) -> Vec<opentelemetry_sdk::trace::SpanData> {
    spans
        .into_iter()
        .filter(|s| s.span_kind == SpanKind::Server)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_layer_passes_the_behaviour_suite() {
    suite::run(&Axum).await;
}
