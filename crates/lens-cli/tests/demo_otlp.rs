//! `lens demo --otlp URL`: the spans go to an OTLP/HTTP collector (protobuf, one export per
//! service); a collector that is down or never answers gives a warning and exit status 0. The
//! `OTEL_EXPORTER_OTLP_*` variables configure the exporter as in any OpenTelemetry SDK.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod demo_support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, header};
use axum::routing::post;
use demo_support::{SPANS_PER_TRACE, run, run_with_env, stderr};

#[derive(Default)]
struct Received {
    content_types: Vec<String>,
    api_keys: Vec<String>,
    bodies: Vec<Vec<u8>>,
    /// The bodies of `/v1/metrics` (their content types and keys are not kept).
    metrics: Vec<Vec<u8>>,
}

/// A collector on 127.0.0.1 port 0 that keeps every export request: spans and metrics.
async fn collector() -> (SocketAddr, Arc<Mutex<Received>>) {
    let received = Arc::new(Mutex::new(Received::default()));
    let state = Arc::clone(&received);
    let metrics = Arc::clone(&received);
    let app = Router::new()
        .route(
            "/v1/metrics",
            post(move |body: Bytes| {
                let metrics = Arc::clone(&metrics);
                async move {
                    metrics.lock().unwrap().metrics.push(body.to_vec());
                    (
                        StatusCode::OK,
                        [(header::CONTENT_TYPE, "application/x-protobuf")],
                        "",
                    )
                }
            }),
        )
        .route(
            "/v1/traces",
            post(move |headers: HeaderMap, body: Bytes| {
                let state = Arc::clone(&state);
                async move {
                    let mut r = state.lock().unwrap();
                    r.content_types.push(
                        headers
                            .get(header::CONTENT_TYPE)
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("")
                            .to_owned(),
                    );
                    if let Some(key) = headers.get("x-api-key").and_then(|v| v.to_str().ok()) {
                        r.api_keys.push(key.to_owned());
                    }
                    r.bodies.push(body.to_vec());
                    // An empty ExportTraceServiceResponse.
                    (
                        StatusCode::OK,
                        [(header::CONTENT_TYPE, "application/x-protobuf")],
                        "",
                    )
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, received)
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_reach_the_collector_one_export_per_service() {
    let (addr, received) = collector().await;
    let url = format!("http://{addr}");
    let output = tokio::task::spawn_blocking(move || run(&["--otlp", &url]))
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains(&format!(
            "exported {SPANS_PER_TRACE} spans to http://{addr}/v1/traces"
        )),
        "{err}"
    );
    assert!(!err.contains("warning"), "{err}");

    let received = received.lock().unwrap();
    // lens-demo, gateway, planner, trainer, rollout-worker, 4 ranks.
    assert_eq!(received.bodies.len(), 9);
    assert!(
        received
            .content_types
            .iter()
            .all(|c| c == "application/x-protobuf")
    );
    let all: Vec<u8> = received.bodies.concat();
    for name in [
        "demo request",
        "POST /v1/train",
        "POST /plan",
        "lens.demo.Trainer/Step",
        "RolloutWorker.generate",
        "train_step",
        "pp_stage 0",
        "pp_stage 3",
    ] {
        assert!(contains(&all, name), "span {name} exported");
    }
    // Each export carries its own service.name resource.
    for service in [
        "lens-demo",
        "gateway",
        "planner",
        "trainer",
        "rollout-worker",
        "trainer-rank-2",
    ] {
        assert!(
            received.bodies.iter().any(|b| contains(b, service)),
            "{service}"
        );
    }
    let gateway = received
        .bodies
        .iter()
        .find(|b| contains(b, "POST /v1/train"))
        .unwrap();
    assert!(contains(gateway, "gateway") && !contains(gateway, "rollout-worker"));

    // The metrics beside them: one export per service that records any (lens-demo, gateway,
    // planner, trainer), each with its own service.name and its duration histograms.
    assert!(
        err.contains(&format!(
            "exported the metrics of 4 services to http://{addr}/v1/metrics"
        )),
        "{err}"
    );
    assert_eq!(received.metrics.len(), 4);
    for (service, instruments) in [
        ("lens-demo", &["http.client.request.duration"][..]),
        (
            "gateway",
            &[
                "http.server.request.duration",
                "http.client.request.duration",
            ][..],
        ),
        (
            "planner",
            &["http.server.request.duration", "rpc.client.duration"][..],
        ),
        ("trainer", &["rpc.server.duration"][..]),
    ] {
        let body = received
            .metrics
            .iter()
            .find(|b| contains(b, service) && !contains(b, "trainer-rank"))
            .unwrap_or_else(|| panic!("metrics of {service}"));
        for instrument in instruments {
            assert!(contains(body, instrument), "{service}: {instrument}");
        }
    }
}

#[test]
fn an_unreachable_collector_is_a_warning() {
    // Bind and drop: nothing listens on that port any more.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let output = run(&["--otlp", &format!("http://127.0.0.1:{port}")]);
    assert!(output.status.success(), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("warning: could not export spans"), "{err}");
    // The waterfall is still printed.
    assert!(String::from_utf8_lossy(&output.stdout).contains("complete"));
}

#[test]
fn a_collector_that_never_answers_is_a_warning_after_the_timeout() {
    // Accepts connections (the kernel does, from the backlog) but never reads or answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap();
    let started = std::time::Instant::now();
    let output = run(&["--otlp", &format!("http://{addr}"), "--otlp-timeout", "1"]);
    let took = started.elapsed();
    drop(silent);
    assert!(output.status.success(), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("warning: could not export spans"), "{err}");
    // Bounded by the timeout, not hanging: generous margin for a loaded machine.
    assert!(took < std::time::Duration::from_secs(30), "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_protobuf_from_the_environment_reaches_the_http_collector() {
    let (addr, received) = collector().await;
    let endpoint = format!("http://{addr}");
    // No --otlp: endpoint, protocol and headers all from the environment.
    let output = tokio::task::spawn_blocking(move || {
        run_with_env(
            &[],
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
                ("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=k1"),
            ],
        )
    })
    .await
    .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains(&format!("exported {SPANS_PER_TRACE} spans")),
        "{err}"
    );
    let received = received.lock().unwrap();
    assert_eq!(received.bodies.len(), 9);
    assert!(
        received
            .content_types
            .iter()
            .all(|c| c == "application/x-protobuf")
    );
    assert_eq!(received.api_keys, vec!["k1"; 9]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_protobuf_with_an_otlp_url_reaches_the_http_collector() {
    let (addr, received) = collector().await;
    let url = format!("http://{addr}");
    let output = tokio::task::spawn_blocking(move || {
        run_with_env(
            &["--otlp", &url],
            &[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")],
        )
    })
    .await
    .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(received.lock().unwrap().bodies.len(), 9);
}

#[test]
fn an_unreachable_grpc_collector_is_a_warning() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let output = run_with_env(
        &[
            "--otlp",
            &format!("http://127.0.0.1:{port}"),
            "--otlp-timeout",
            "2",
        ],
        &[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("warning: could not export spans"), "{err}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("complete"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_hop_is_exported_too() {
    let (addr, received) = collector().await;
    let url = format!("http://{addr}");
    let output = tokio::task::spawn_blocking(move || {
        run(&[
            "--otlp",
            &url,
            "--break",
            "gateway->planner",
            "--color",
            "never",
        ])
    })
    .await
    .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let err = stderr(&output);
    // The request's spans, now in two traces, all exported.
    assert!(
        err.contains(&format!(
            "exported {SPANS_PER_TRACE} spans to http://{addr}/v1/traces"
        )),
        "{err}"
    );
    assert!(!err.contains("warning"), "{err}");
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(
        out.contains("error[lost-context] context lost on gateway -> planner:"),
        "{out}"
    );
    let received = received.lock().unwrap();
    let planner = received
        .bodies
        .iter()
        .find(|b| contains(b, "POST /plan"))
        .unwrap();
    // The planner's new root says why it started a trace (lens.trace.new_root = none).
    assert!(contains(planner, "lens.trace.new_root"));
}
