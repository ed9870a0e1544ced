//! Request metrics (semantic conventions 1.42) through opentelemetry_sdk's in-memory metric
//! exporter: `http.server.request.duration` with its bounded attributes, the opt-in
//! `http.server.active_requests` back to 0 on every path out, and a bounded number of series
//! whatever the requests carry.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::collections::BTreeSet;
use std::convert::Infallible;
use std::future::Future;

use axum::body::Body;
use axum::{Router, routing::get};
use bytes::Bytes;
use futures_util::StreamExt;
use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use lens_axum::ServerLayer;
use lens_testkit::metrics::{DURATION_BUCKETS_S, Metrics, Point};
use tower::ServiceExt;

const DURATION: &str = "http.server.request.duration";
const ACTIVE: &str = "http.server.active_requests";

fn app(layer: ServerLayer) -> Router {
    Router::new()
        .route(
            "/users/{id}",
            get(|| async { "user" }).post(|| async { "made" }),
        )
        .route(
            "/fail",
            get(|| async { (StatusCode::SERVICE_UNAVAILABLE, "down") }),
        )
        .route("/static", get(|| async { "static" }))
        .layer(layer)
}

fn one(points: &[Point], pred: impl Fn(&Point) -> bool) -> &Point {
    let found: Vec<&Point> = points.iter().filter(|p| pred(p)).collect();
    assert_eq!(found.len(), 1, "{points:#?}");
    found[0]
}

/// Each attribute over HTTP/1.1: the method (`_OTHER` for an unknown one, no original), the
/// scheme, the protocol version, the status code, the matched route only (none for an
/// unmatched path), `error.type` on 5xx only; seconds with the conventions' buckets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duration_has_the_conventions_attributes() {
    let (_p, tracer, spans) = support::provider();
    let metrics = Metrics::new();
    let addr = support::serve(app(ServerLayer::new()
        .with_tracer(tracer)
        .with_meter(metrics.meter("test"))))
    .await;
    let client = reqwest::Client::new();
    let brew = Method::from_bytes(b"BREW").unwrap();
    for (method, path) in [
        (Method::GET, "/users/1?token=x"),
        (Method::GET, "/users/2"),
        (Method::POST, "/users/3"),
        (Method::GET, "/fail"),
        (Method::GET, "/no/such/path/4711"),
        (brew.clone(), "/users/5"),
    ] {
        let res = client
            .request(method, format!("http://{addr}{path}"))
            .send()
            .await
            .unwrap();
        res.bytes().await.unwrap();
    }
    spans.wait_for(6).await;

    let points = metrics.series(DURATION);
    assert_eq!(points.len(), 5, "{points:#?}");
    for p in &points {
        assert_eq!(p.unit, "s");
        assert_eq!(p.bounds, DURATION_BUCKETS_S);
        assert_eq!(p.get("url.scheme"), Some("http"));
        assert_eq!(p.get("network.protocol.version"), Some("1.1"));
        for absent in [
            "url.path",
            "url.query",
            "http.request.method_original",
            "server.address",
            "client.address",
            "user_agent.original",
        ] {
            assert_eq!(p.get(absent), None, "{absent} in {p:#?}");
        }
    }
    let get_user = one(&points, |p| {
        p.get("http.request.method") == Some("GET") && p.get("http.route") == Some("/users/{id}")
    });
    assert_eq!(get_user.value, 2.0);
    assert_eq!(get_user.get("http.response.status_code"), Some("200"));
    assert_eq!(get_user.get("error.type"), None);
    let post = one(&points, |p| p.get("http.request.method") == Some("POST"));
    assert_eq!(post.get("http.route"), Some("/users/{id}"));
    let fail = one(&points, |p| p.get("http.route") == Some("/fail"));
    assert_eq!(fail.get("http.response.status_code"), Some("503"));
    assert_eq!(fail.get("error.type"), Some("503"));
    let unmatched = one(&points, |p| {
        p.get("http.response.status_code") == Some("404")
    });
    assert_eq!(unmatched.get("http.route"), None, "{unmatched:#?}");
    assert_eq!(unmatched.get("error.type"), None);
    let other = one(&points, |p| p.get("http.request.method") == Some("_OTHER"));
    assert_eq!(other.value, 1.0);
}

/// Off by default: a layer without a meter records nothing, even with a global meter
/// provider; `with_global_meter` records under the adapter's scope (name, version, schema URL).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn off_by_default_and_the_global_meter_has_the_adapters_scope() {
    let metrics = Metrics::new();
    opentelemetry::global::set_meter_provider(metrics.provider().clone());
    let request = || Request::get("/static").body(Body::empty()).unwrap();

    let res = app(ServerLayer::new()).oneshot(request()).await.unwrap();
    res.into_body().collect().await.unwrap();
    assert!(metrics.collect().is_empty(), "{:#?}", metrics.collect());

    let res = app(ServerLayer::new().with_global_meter())
        .oneshot(request())
        .await
        .unwrap();
    res.into_body().collect().await.unwrap();
    let points = metrics.series(DURATION);
    assert_eq!(points.len(), 1);
    assert_eq!(
        points[0].scope,
        (
            "lens-axum".to_owned(),
            Some(env!("CARGO_PKG_VERSION").to_owned()),
            Some(lens_span::scope::SCHEMA_URL.to_owned())
        )
    );
    // In-process: no scheme in the URI is `http`, and the route is the matched one.
    assert_eq!(points[0].get("http.route"), Some("/static"));
}

fn active(metrics: &Metrics) -> Vec<(String, f64)> {
    metrics
        .series(ACTIVE)
        .into_iter()
        .map(|p| {
            assert_eq!(p.unit, "{request}");
            assert_eq!(p.attributes.len(), 2, "{p:#?}");
            (
                p.get("http.request.method").unwrap_or("").to_owned(),
                p.value,
            )
        })
        .collect()
}

/// `http.server.active_requests` (opt-in) goes up when a request starts and back to 0 on every
/// way out: a response sent, a streaming body dropped mid-stream, a request cancelled before
/// its response, a panicking handler, a failing service.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn active_requests_return_to_zero_on_every_path_out() {
    let metrics = Metrics::new();
    let layer = ServerLayer::new()
        .with_meter(metrics.meter("test"))
        .with_active_requests(true);
    let router = Router::new()
        .route("/ok", get(|| async { "ok" }))
        .route(
            "/stream",
            get(|| async {
                let chunks =
                    futures_util::stream::iter([Ok::<_, Infallible>(Bytes::from_static(b"first"))])
                        .chain(futures_util::stream::pending());
                Body::from_stream(chunks)
            }),
        )
        .route("/hang", get(std::future::pending::<&'static str>))
        .route(
            "/panic",
            get(|| async {
                if true {
                    panic!("handler panicked");
                }
                "never"
            }),
        )
        .layer(layer.clone());
    let get = |path: &str| Request::get(path).body(Body::empty()).unwrap();

    // A response sent in full.
    let res = router.clone().oneshot(get("/ok")).await.unwrap();
    assert_eq!(active(&metrics), [("GET".to_owned(), 1.0)]);
    res.into_body().collect().await.unwrap();
    assert_eq!(active(&metrics), [("GET".to_owned(), 0.0)]);

    // A streaming body dropped after its first chunk (the peer went away).
    let res = router.clone().oneshot(get("/stream")).await.unwrap();
    let mut body = res.into_body();
    let first = body.frame().await.unwrap().unwrap();
    assert_eq!(first.into_data().unwrap(), "first");
    assert_eq!(active(&metrics), [("GET".to_owned(), 1.0)]);
    // The duration ends with the span, not with the response head: nothing recorded yet.
    let stream_durations = || {
        metrics
            .series(DURATION)
            .into_iter()
            .filter(|p| p.get("http.route") == Some("/stream"))
            .count()
    };
    assert_eq!(stream_durations(), 0);
    drop(body);
    assert_eq!(active(&metrics), [("GET".to_owned(), 0.0)]);
    assert_eq!(stream_durations(), 1);

    // A request cancelled before its response: the future is polled, then dropped.
    let mut pending = Box::pin(router.clone().oneshot(get("/hang")));
    let polled = std::future::poll_fn(|cx| std::task::Poll::Ready(pending.as_mut().poll(cx))).await;
    assert!(polled.is_pending());
    assert_eq!(active(&metrics), [("GET".to_owned(), 1.0)]);
    drop(pending);
    assert_eq!(active(&metrics), [("GET".to_owned(), 0.0)]);

    // A panicking handler.
    let panicked = tokio::spawn(router.clone().oneshot(get("/panic"))).await;
    assert!(panicked.unwrap_err().is_panic());
    assert_eq!(active(&metrics), [("GET".to_owned(), 0.0)]);

    // A failing service (not a handler: axum's handlers cannot fail).
    let failing = tower::service_fn(|_req: Request<Body>| async {
        Err::<http::Response<Body>, _>(std::io::Error::other("down"))
    });
    let err = tower::Layer::layer(&layer, failing)
        .oneshot(
            Request::builder()
                .method("DELETE")
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert!(err.is_err());
    let mut after = active(&metrics);
    after.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(after, [("DELETE".to_owned(), 0.0), ("GET".to_owned(), 0.0)]);

    // Every duration was recorded: one per request, with `error.type` for the panic and the
    // failed service.
    let durations = metrics.series(DURATION);
    let total: f64 = durations.iter().map(|p| p.value).sum();
    assert_eq!(total, 5.0, "{durations:#?}");
    let panic = one(&durations, |p| p.get("http.route") == Some("/panic"));
    assert_eq!(panic.get("error.type"), Some("panic"));
    let failed = one(&durations, |p| {
        p.get("http.request.method") == Some("DELETE")
    });
    assert_eq!(failed.get("error.type"), Some("std::io::error::Error"));
}

/// A small deterministic generator (xorshift64*): the test needs variety, not quality.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn token(&mut self, len: usize) -> String {
        (0..len)
            .map(|_| char::from(b'A' + self.below(26) as u8))
            .collect()
    }
}

/// 10,000 requests with random paths, random unknown methods and random query strings: the
/// series are exactly the (method or `_OTHER`, matched route or none, status) triples seen, so
/// no more than routes × known methods × statuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn series_stay_bounded_under_random_requests() {
    let metrics = Metrics::new();
    let router = app(ServerLayer::new().with_meter(metrics.meter("test")));
    let known = [
        Method::GET,
        Method::POST,
        Method::PUT,
        Method::DELETE,
        Method::PATCH,
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut seen = BTreeSet::new();
    for _ in 0..10_000 {
        let method = if rng.below(4) == 0 {
            let len = 3 + rng.below(6) as usize;
            Method::from_bytes(rng.token(len).as_bytes()).unwrap()
        } else {
            known[rng.below(known.len() as u64) as usize].clone()
        };
        let (path, route) = match rng.below(4) {
            0 => (format!("/users/{}", rng.next()), Some("/users/{id}")),
            1 => ("/static".to_owned(), Some("/static")),
            _ => (format!("/{}/{}", rng.token(5), rng.next()), None),
        };
        let uri = match rng.below(2) {
            0 => format!("{path}?{}={}", rng.token(4), rng.next()),
            _ => path,
        };
        let res = router
            .clone()
            .oneshot(
                Request::builder()
                    .method(method.clone())
                    .uri(uri)
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        let status = res.status().as_u16();
        res.into_body().collect().await.unwrap();
        let name = lens_span::httpconv::known_http_method(&method).unwrap_or("_OTHER");
        // axum answers a method a route lacks with 405 through the route (matched), and a path
        // no route has with 404 (no route).
        let route = if status == 404 { None } else { route };
        seen.insert((
            name.to_owned(),
            route.map(str::to_owned),
            status.to_string(),
        ));
    }
    let points = metrics.series(DURATION);
    let got: BTreeSet<(String, Option<String>, String)> = points
        .iter()
        .map(|p| {
            (
                p.get("http.request.method").unwrap().to_owned(),
                p.get("http.route").map(str::to_owned),
                p.get("http.response.status_code").unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(got.len(), points.len());
    assert_eq!(got, seen);
    // 3 routes and none, 5 known methods and `_OTHER`, a handful of statuses.
    assert!(points.len() <= 4 * 6 * 3, "{} series", points.len());
    let total: f64 = points.iter().map(|p| p.value).sum();
    assert_eq!(total, 10_000.0);
}

/// `http.server.response.body.size` (opt-in) counts the bytes actually sent: a streaming body
/// without `Content-Length` in full, and one dropped mid-stream up to where it stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn body_sizes_count_the_bytes_sent() {
    let metrics = Metrics::new();
    let router = Router::new()
        .route("/fixed", get(|| async { "user" }))
        .route(
            "/stream",
            get(|| async {
                let chunks =
                    ["abc", "defgh"].map(|c| Ok::<_, Infallible>(Bytes::from_static(c.as_bytes())));
                Body::from_stream(futures_util::stream::iter(chunks))
            }),
        )
        .route(
            "/cut",
            get(|| async {
                let first =
                    futures_util::stream::iter([Ok::<_, Infallible>(Bytes::from_static(b"first"))]);
                Body::from_stream(first.chain(futures_util::stream::pending()))
            }),
        )
        .layer(
            ServerLayer::new()
                .with_meter(metrics.meter("test"))
                .with_body_sizes(true),
        );
    let get = |path: &str| Request::get(path).body(Body::empty()).unwrap();
    for path in ["/fixed", "/stream"] {
        let res = router.clone().oneshot(get(path)).await.unwrap();
        res.into_body().collect().await.unwrap();
    }
    let res = router.clone().oneshot(get("/cut")).await.unwrap();
    assert_eq!(res.headers().get("content-length"), None);
    let mut body = res.into_body();
    body.frame().await.unwrap().unwrap();
    drop(body);

    let sizes = metrics.series("http.server.response.body.size");
    assert_eq!(sizes.len(), 3, "{sizes:#?}");
    for p in &sizes {
        assert_eq!(p.unit, "By");
        assert_eq!(p.value, 1.0, "one request per route");
    }
    let sum = |route: &str| one(&sizes, |p| p.get("http.route") == Some(route)).sum;
    assert_eq!(sum("/fixed"), 4.0);
    assert_eq!(sum("/stream"), 8.0);
    assert_eq!(sum("/cut"), 5.0);
}

/// A classifier of the user's decides the metric's `error.type` as it decides the span's: here a
/// 404 is an error (`error.type` = `not_found`) and a 503 is not (no `error.type`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_classifier_decides_the_metrics_error_type() {
    let metrics = Metrics::new();
    let layer = ServerLayer::new()
        .with_meter(metrics.meter("test"))
        .with_classifier(|status: &StatusCode| {
            if *status == StatusCode::NOT_FOUND {
                lens_axum::Outcome::failure("not_found", "no such user")
            } else {
                lens_axum::Outcome::Success
            }
        });
    let router = app(layer);
    for path in ["/fail", "/no/such/path"] {
        let res = router
            .clone()
            .oneshot(Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        res.into_body().collect().await.unwrap();
    }
    let points = metrics.series(DURATION);
    assert_eq!(points.len(), 2, "{points:#?}");
    let fail = one(&points, |p| p.get("http.route") == Some("/fail"));
    assert_eq!(fail.get("http.response.status_code"), Some("503"));
    assert_eq!(fail.get("error.type"), None, "{fail:#?}");
    let unmatched = one(&points, |p| {
        p.get("http.response.status_code") == Some("404")
    });
    assert_eq!(
        unmatched.get("error.type"),
        Some("not_found"),
        "{unmatched:#?}"
    );
}

/// `http.server.request.body.size` (opt-in) counts the bytes the handler read, frame by frame:
/// a chunked request body without `Content-Length` over HTTP/1.1 in full, a body the handler
/// read one frame of up to there, a body it never read as 0, an empty body as 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_body_size_counts_the_bytes_the_handler_read() {
    let metrics = Metrics::new();
    let router = Router::new()
        .route(
            "/all",
            axum::routing::post(|body: Bytes| async move { body.len().to_string() }),
        )
        .route(
            "/part",
            axum::routing::post(|body: Body| async move {
                let mut body = body;
                let first = body.frame().await.unwrap().unwrap();
                first.into_data().unwrap().len().to_string()
            }),
        )
        .route("/ignore", axum::routing::post(|| async { "ignored" }))
        .route("/empty", get(|| async { "empty" }))
        .layer(
            ServerLayer::new()
                .with_meter(metrics.meter("test"))
                .with_body_sizes(true),
        );

    // Over the network: reqwest sends a streaming body as chunked transfer coding.
    let addr = support::serve(router.clone()).await;
    let chunks = ["chunk-one|", "chunk-two|", "three"]
        .map(|c| Ok::<_, Infallible>(http_body::Frame::data(Bytes::from_static(c.as_bytes()))));
    let streamed = reqwest::Body::wrap(http_body_util::StreamBody::new(
        futures_util::stream::iter(chunks),
    ));
    let res = reqwest::Client::new()
        .post(format!("http://{addr}/all"))
        .body(streamed)
        .send()
        .await
        .unwrap();
    assert_eq!(res.text().await.unwrap(), "25");

    let two_frames = || {
        let chunks =
            ["hello", "world!"].map(|c| Ok::<_, Infallible>(Bytes::from_static(c.as_bytes())));
        Body::from_stream(futures_util::stream::iter(chunks))
    };
    for (path, body) in [
        ("/part", two_frames()),
        ("/ignore", two_frames()),
        ("/empty", Body::empty()),
    ] {
        let method = if path == "/empty" {
            Method::GET
        } else {
            Method::POST
        };
        let req = Request::builder()
            .method(method)
            .uri(path)
            .body(body)
            .unwrap();
        let res = router.clone().oneshot(req).await.unwrap();
        res.into_body().collect().await.unwrap();
    }

    let sizes = metrics.series("http.server.request.body.size");
    assert_eq!(sizes.len(), 4, "{sizes:#?}");
    for p in &sizes {
        assert_eq!(p.unit, "By");
        assert_eq!(p.value, 1.0, "one request per route");
        assert!(p.get("http.request.method").is_some(), "{p:#?}");
        assert!(p.get("http.response.status_code").is_some(), "{p:#?}");
    }
    let sum = |route: &str| one(&sizes, |p| p.get("http.route") == Some(route)).sum;
    assert_eq!(sum("/all"), 25.0);
    assert_eq!(sum("/part"), 5.0);
    assert_eq!(sum("/ignore"), 0.0);
    assert_eq!(sum("/empty"), 0.0);
}

/// A request body of a type other than axum's `Body` (a layer outside axum) is left as it is:
/// no request body size is recorded for it, the rest is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_body_of_another_type_records_no_size() {
    use tower::Layer as _;
    let metrics = Metrics::new();
    let svc = ServerLayer::new()
        .with_meter(metrics.meter("test"))
        .with_body_sizes(true)
        .layer(tower::service_fn(|req: Request<String>| async move {
            Ok::<_, Infallible>(http::Response::new(Body::from(req.into_body())))
        }));
    let res = svc
        .oneshot(Request::post("/echo").body("abc".to_owned()).unwrap())
        .await
        .unwrap();
    res.into_body().collect().await.unwrap();
    assert!(metrics.series("http.server.request.body.size").is_empty());
    let sizes = metrics.series("http.server.response.body.size");
    assert_eq!(sizes.len(), 1, "{sizes:#?}");
    assert_eq!(sizes[0].sum, 3.0);
}
