//! lens-testkit's behaviour suite, run against [`ClientMiddleware`].
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::net::SocketAddr;

use axum::http::{HeaderMap, StatusCode};
use axum::{Router, routing::get};
use lens_reqwest::{ClientMiddleware, Outcome};
use lens_testkit::suite::{
    self, Call, Harness, Observed, Protocol, RESPOND, Respond, SKIP_HEADER, Setup, Side,
};
use opentelemetry::trace::{SpanKind, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};

/// The peer: answers as asked, with the propagation lines it received (`name: value`).
async fn peer(headers: HeaderMap) -> (StatusCode, String) {
    let mut body = String::new();
    for (name, lines) in suite::propagation_lines(&headers) {
        for line in lines {
            body.push_str(&format!("{name}: {line}\n"));
        }
    }
    let status = match headers
        .get(RESPOND)
        .and_then(|v| v.to_str().ok())
        .map_or(Respond::Ok, Respond::parse)
    {
        Respond::CallerError => StatusCode::NOT_FOUND,
        Respond::ServerError => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::OK,
    };
    (status, body)
}

async fn serve() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = Router::new().route("/", get(peer));
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    addr
}

struct Reqwest;

impl Harness for Reqwest {
    fn side(&self) -> Side {
        Side::Client
    }

    fn protocol(&self) -> Protocol {
        Protocol::Http
    }

    fn supports(&self, respond: Respond) -> bool {
        // The CLIENT span ends with the response head: a stream does not keep it open, and a
        // caller that goes away mid-body has not cancelled the attempt.
        !matches!(respond, Respond::Panic | Respond::Stream | Respond::Cancel)
    }

    async fn run(&self, setup: Setup, call: Call, _expect_spans: usize) -> Observed {
        let exporter = InMemorySpanExporter::default();
        let metrics = suite::metrics_for(&setup);
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let middleware = lens_testkit::suite_knobs!(
            ClientMiddleware::new().with_tracer(provider.tracer("suite")),
            setup,
            |req| !req.headers().contains_key(SKIP_HEADER),
            |status: &StatusCode| match *status {
                StatusCode::NOT_FOUND => Outcome::failure(suite::CLASSIFIED_ERROR, ""),
                _ => Outcome::Success,
            },
            &metrics
        )
        .with_body_sizes(setup.metrics);
        let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
            .with(middleware)
            .build();
        let addr = serve().await;
        let mut request = client
            .get(format!("http://{addr}/"))
            .header(RESPOND, call.respond.as_str())
            .with_extension(suite::caller_context(&call.headers));
        for (name, value) in &call.preset {
            request = request.header(*name, value);
        }
        if call.skip {
            request = request.header(SKIP_HEADER, "1");
        }
        let body = request.send().await.unwrap().text().await.unwrap();
        let mut outgoing: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for line in body.lines() {
            if let Some((name, value)) = line.split_once(": ") {
                outgoing
                    .entry(name.to_owned())
                    .or_default()
                    .push(value.to_owned());
            }
        }
        // The span has ended when `send` returned (simple exporter: exported at once).
        let spans = exporter
            .get_finished_spans()
            .unwrap()
            .into_iter()
            .filter(|s| s.span_kind == SpanKind::Client)
            .collect();
        Observed {
            spans,
            outgoing,
            open_after_first_part: None,
            // The response body was read to its end: its size is recorded.
            metrics: suite::collected(&metrics),
            response_bytes: Some(body.len() as u64),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_middleware_passes_the_behaviour_suite() {
    suite::run(&Reqwest).await;
}
