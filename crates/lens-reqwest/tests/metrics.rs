//! `http.client.request.duration` (semantic conventions 1.42), one per attempt, through
//! opentelemetry_sdk's in-memory metric exporter.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;

use axum::http::StatusCode;
use axum::{Router, routing::get};
use lens_reqwest::ClientMiddleware;
use lens_testkit::metrics::{DURATION_BUCKETS_S, Metrics, Point};
use reqwest_middleware::ClientBuilder;

const DURATION: &str = "http.client.request.duration";

async fn serve(router: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    addr
}

fn one(points: &[Point], status: Option<&str>) -> Point {
    let found: Vec<&Point> = points
        .iter()
        .filter(|p| p.get("http.response.status_code") == status)
        .collect();
    assert_eq!(found.len(), 1, "{points:#?}");
    found[0].clone()
}

/// Method (`_OTHER` for an unknown one), `server.address`, `server.port`, the status code,
/// `error.type` on 4xx, 5xx (the code) and transport failures (its kind); never `url.full`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duration_per_attempt_with_the_conventions_attributes() {
    let addr = serve(
        Router::new()
            .route("/ok", get(|| async { "ok" }))
            .route("/boom", get(|| async { (StatusCode::BAD_GATEWAY, "boom") })),
    )
    .await;
    let metrics = Metrics::new();
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(ClientMiddleware::new().with_meter(metrics.meter("test")))
        .build();
    for path in ["/ok?secret=1", "/ok?secret=2", "/missing", "/boom"] {
        client
            .get(format!("http://{addr}{path}"))
            .send()
            .await
            .unwrap();
    }
    let brew = reqwest::Method::from_bytes(b"BREW").unwrap();
    client
        .request(brew, format!("http://{addr}/ok"))
        .send()
        .await
        .unwrap();
    // A port nothing listens on: a connect failure.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    assert!(
        client
            .get(format!("http://{closed}/"))
            .send()
            .await
            .is_err()
    );

    let points = metrics.series(DURATION);
    assert_eq!(points.len(), 5, "{points:#?}");
    for p in &points {
        assert_eq!(p.unit, "s");
        assert_eq!(p.bounds, DURATION_BUCKETS_S);
        assert_eq!(p.get("server.address"), Some("127.0.0.1"));
        assert_eq!(p.get("url.full"), None);
        assert_eq!(p.get("http.request.method_original"), None);
    }
    let ok = points
        .iter()
        .find(|p| {
            p.get("http.response.status_code") == Some("200")
                && p.get("http.request.method") == Some("GET")
        })
        .unwrap();
    assert_eq!(ok.value, 2.0);
    assert_eq!(
        ok.get("server.port"),
        Some(addr.port().to_string().as_str())
    );
    assert_eq!(ok.get("error.type"), None);
    let other = points
        .iter()
        .find(|p| p.get("http.request.method") == Some("_OTHER"))
        .unwrap();
    assert_eq!(other.value, 1.0);
    assert_eq!(one(&points, Some("404")).get("error.type"), Some("404"));
    assert_eq!(one(&points, Some("502")).get("error.type"), Some("502"));
    let failed = one(&points, None);
    assert_eq!(failed.get("error.type"), Some("connect"));
    assert_eq!(
        failed.get("server.port"),
        Some(closed.port().to_string().as_str())
    );
}

/// Without a meter, nothing: a global meter provider alone does not turn metrics on;
/// `with_global_meter` records under lens-reqwest's scope.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn off_by_default_and_the_global_meter_has_the_adapters_scope() {
    let addr = serve(Router::new().route("/ok", get(|| async { "ok" }))).await;
    let metrics = Metrics::new();
    opentelemetry::global::set_meter_provider(metrics.provider().clone());
    for middleware in [
        ClientMiddleware::new(),
        ClientMiddleware::new().with_global_meter(),
    ] {
        ClientBuilder::new(reqwest::Client::new())
            .with(middleware)
            .build()
            .get(format!("http://{addr}/ok"))
            .send()
            .await
            .unwrap();
    }
    let points = metrics.series(DURATION);
    assert_eq!(points.len(), 1, "{points:#?}");
    assert_eq!(points[0].value, 1.0);
    assert_eq!(points[0].scope.0, "lens-reqwest");
    assert_eq!(
        points[0].scope.1.as_deref(),
        Some(env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(
        points[0].scope.2.as_deref(),
        Some(lens_span::scope::SCHEMA_URL)
    );
}

/// A classifier of the user's decides the metric's `error.type` as it decides the span's: here a
/// 404 is not an error (a lookup that found nothing) and a 502 is `upstream`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_classifier_decides_the_metrics_error_type() {
    let addr =
        serve(Router::new().route("/boom", get(|| async { (StatusCode::BAD_GATEWAY, "boom") })))
            .await;
    let metrics = Metrics::new();
    let middleware = ClientMiddleware::new()
        .with_meter(metrics.meter("test"))
        .with_classifier(|status: &StatusCode| {
            if status.is_server_error() {
                lens_reqwest::Outcome::failure("upstream", "the upstream failed")
            } else {
                lens_reqwest::Outcome::Success
            }
        });
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(middleware)
        .build();
    for path in ["/missing", "/boom"] {
        client
            .get(format!("http://{addr}{path}"))
            .send()
            .await
            .unwrap();
    }
    let points = metrics.series(DURATION);
    assert_eq!(points.len(), 2, "{points:#?}");
    assert_eq!(one(&points, Some("404")).get("error.type"), None);
    assert_eq!(
        one(&points, Some("502")).get("error.type"),
        Some("upstream")
    );
}

/// The opt-in body sizes, with the duration's attributes: a buffered request body by its length,
/// no body as 0, a streaming one of unknown length not at all; a response body by the bytes the
/// caller read (chunked without `Content-Length` in full, one dropped after its first chunk up
/// to there), the response otherwise unchanged (URL, `Content-Length`, peer address).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_sizes_count_what_is_sent_and_read() {
    use axum::body::{Body, Bytes};
    use futures_util::StreamExt as _;
    use std::convert::Infallible;

    let chunks = |parts: &'static [&'static str]| {
        futures_util::stream::iter(
            parts
                .iter()
                .map(|c| Ok::<_, Infallible>(Bytes::from_static(c.as_bytes()))),
        )
    };
    let addr = serve(
        Router::new()
            .route(
                "/upload",
                axum::routing::post(|body: Bytes| async move { body.len().to_string() }),
            )
            .route("/fixed", get(|| async { (StatusCode::CREATED, "hello") }))
            .route(
                "/stream",
                get(move || async move {
                    (
                        StatusCode::ACCEPTED,
                        Body::from_stream(chunks(&["abc", "defgh"])),
                    )
                }),
            )
            .route(
                "/cut",
                get(move || async move {
                    let endless = chunks(&["first"]).chain(futures_util::stream::pending());
                    (
                        StatusCode::NON_AUTHORITATIVE_INFORMATION,
                        Body::from_stream(endless),
                    )
                }),
            ),
    )
    .await;
    let metrics = Metrics::new();
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(
            ClientMiddleware::new()
                .with_meter(metrics.meter("test"))
                .with_body_sizes(true),
        )
        .build();
    let url = |path: &str| format!("http://{addr}{path}");

    let res = client
        .post(url("/upload"))
        .body("0123456789")
        .send()
        .await
        .unwrap();
    assert_eq!(res.text().await.unwrap(), "10");
    let frames = ["ab", "cd"].map(|c| Ok::<_, Infallible>(http_body::Frame::data(Bytes::from(c))));
    let streamed = reqwest::Body::wrap(http_body_util::StreamBody::new(
        futures_util::stream::iter(frames),
    ));
    let res = client
        .post(url("/upload"))
        .body(streamed)
        .send()
        .await
        .unwrap();
    assert_eq!(res.text().await.unwrap(), "4");

    let res = client.get(url("/fixed")).send().await.unwrap();
    assert_eq!(res.url().as_str(), url("/fixed"));
    assert_eq!(res.content_length(), Some(5));
    assert_eq!(res.remote_addr(), Some(addr));
    assert_eq!(res.text().await.unwrap(), "hello");
    let res = client.get(url("/stream")).send().await.unwrap();
    assert_eq!(res.headers().get("content-length"), None);
    assert_eq!(res.bytes().await.unwrap(), "abcdefgh");
    let mut res = client.get(url("/cut")).send().await.unwrap();
    assert_eq!(res.chunk().await.unwrap().unwrap(), "first");
    drop(res);

    let by_status = |name: &str, status: &str| -> Option<Point> {
        let points: Vec<Point> = metrics
            .series(name)
            .into_iter()
            .filter(|p| p.get("http.response.status_code") == Some(status))
            .collect();
        assert!(points.len() <= 1, "{points:#?}");
        points.into_iter().next()
    };
    const REQUEST: &str = "http.client.request.body.size";
    const RESPONSE: &str = "http.client.response.body.size";
    for p in metrics
        .series(REQUEST)
        .iter()
        .chain(&metrics.series(RESPONSE))
    {
        assert_eq!(p.unit, "By");
        assert_eq!(p.get("server.address"), Some("127.0.0.1"));
        assert!(p.get("http.request.method").is_some(), "{p:#?}");
        assert_eq!(p.get("url.full"), None);
    }
    // Two uploads, the streaming one of unknown length not recorded.
    let upload = by_status(REQUEST, "200").unwrap();
    assert_eq!((upload.value, upload.sum), (1.0, 10.0));
    let answers = by_status(RESPONSE, "200").unwrap();
    assert_eq!((answers.value, answers.sum), (2.0, 3.0), "\"10\" and \"4\"");
    for (status, sent, read) in [("201", 0.0, 5.0), ("202", 0.0, 8.0), ("203", 0.0, 5.0)] {
        assert_eq!(by_status(REQUEST, status).unwrap().sum, sent, "{status}");
        let response = by_status(RESPONSE, status).unwrap();
        assert_eq!((response.value, response.sum), (1.0, read), "{status}");
    }
}

/// Body sizes are opt-in: a meter alone records the duration only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_sizes_are_off_by_default() {
    let addr = serve(Router::new().route("/ok", axum::routing::post(|| async { "ok" }))).await;
    let metrics = Metrics::new();
    let client = ClientBuilder::new(reqwest::Client::new())
        .with(ClientMiddleware::new().with_meter(metrics.meter("test")))
        .build();
    let res = client
        .post(format!("http://{addr}/ok"))
        .body("abc")
        .send()
        .await
        .unwrap();
    assert_eq!(res.text().await.unwrap(), "ok");
    let names: Vec<String> = metrics.collect().into_iter().map(|p| p.name).collect();
    assert_eq!(names, [DURATION]);
}
