//! A handler that panics: its SERVER span still ends, with status Error when the application
//! turns the panic into a 500 (tower-http's `CatchPanicLayer` inside `ServerLayer`), and the
//! request's Context does not leak into the next request, nor into other code, on that thread.
//! Everything runs on one thread (a current-thread runtime), so a leaked Context would show.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use axum::Router;
use axum::routing::get;
use lens_axum::{RequestContext, ServerLayer};
use lens_core::LensContextExt;
use opentelemetry::Context;
use opentelemetry::trace::{SpanKind, Status};
use tower_http::catch_panic::CatchPanicLayer;

const PANICKED: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn current_trace() -> String {
    Context::map_current(|cx| cx.trace_id()).map_or_else(|| "-".to_owned(), |t| t.to_string())
}

async fn boom() -> &'static str {
    panic!("handler failure (expected by the test)")
}

/// Reports the request's trace id and the current Context's.
async fn probe(cx: RequestContext) -> String {
    let own = cx
        .trace_id()
        .map_or_else(|| "-".to_owned(), |t| t.to_string());
    format!("{own} {}", current_trace())
}

/// Outside any lens layer: what is current on the thread.
async fn bare() -> String {
    current_trace()
}

async fn get_text(url: String, traceparent: Option<&str>) -> Result<(u16, String), reqwest::Error> {
    let mut request = reqwest::Client::new().get(url);
    if let Some(tp) = traceparent {
        request = request.header("traceparent", tp);
    }
    let response = request.send().await?;
    let status = response.status().as_u16();
    Ok((status, response.text().await?))
}

/// After a panicking request: the next traced request has its own trace, current inside it,
/// and untraced code on the same thread sees no Context at all.
async fn assert_no_leak(addr: std::net::SocketAddr) {
    let (status, body) = get_text(format!("http://{addr}/probe"), None)
        .await
        .unwrap();
    assert_eq!(status, 200);
    let (own, current) = body.split_once(' ').unwrap();
    assert_ne!(
        own, PANICKED,
        "the next request continued the panicked one's trace"
    );
    assert_ne!(own, "-");
    assert_eq!(own, current, "the current Context inside the next request");
    let (_, bare) = get_text(format!("http://{addr}/bare"), None).await.unwrap();
    assert_eq!(bare, "-", "code outside lens sees a leftover Context");
    assert_eq!(
        current_trace(),
        "-",
        "the test's own thread has a leftover Context"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn with_catch_panic_the_server_span_ends_with_status_error() {
    let (_provider, tracer, recorder) = support::provider();
    let traced = Router::new()
        .route("/boom", get(boom))
        .route("/probe", get(probe))
        .layer(CatchPanicLayer::new())
        .layer(ServerLayer::new().with_tracer(tracer));
    let addr = support::serve(traced.route("/bare", get(bare))).await;

    let (status, _) = get_text(format!("http://{addr}/boom"), Some(TRACEPARENT))
        .await
        .unwrap();
    assert_eq!(status, 500);
    let spans = recorder.wait_for(1).await;
    let span = &spans[0];
    assert_eq!(span.span_kind, SpanKind::Server);
    assert_eq!(span.span_context.trace_id().to_string(), PANICKED);
    assert!(
        matches!(span.status, Status::Error { .. }),
        "status {:?}",
        span.status
    );
    assert_no_leak(addr).await;
}

#[tokio::test(flavor = "current_thread")]
async fn without_catch_panic_the_span_still_ends_and_nothing_leaks() {
    // The panic unwinds through the layer and kills the connection's task; the client sees the
    // connection close. The SERVER span is ended (not lost) as the request's future is dropped.
    let (_provider, tracer, recorder) = support::provider();
    let traced = Router::new()
        .route("/boom", get(boom))
        .route("/probe", get(probe))
        .layer(ServerLayer::new().with_tracer(tracer));
    let addr = support::serve(traced.route("/bare", get(bare))).await;

    let result = get_text(format!("http://{addr}/boom"), Some(TRACEPARENT)).await;
    assert!(result.is_err(), "{result:?}");
    let spans = recorder.wait_for(1).await;
    assert_eq!(spans[0].span_kind, SpanKind::Server);
    assert_eq!(spans[0].span_context.trace_id().to_string(), PANICKED);
    assert_no_leak(addr).await;
}

#[tokio::test(flavor = "current_thread")]
async fn without_catch_panic_the_server_span_ends_with_status_error() {
    let (_provider, tracer, recorder) = support::provider();
    let traced = Router::new()
        .route("/boom", get(boom))
        .layer(ServerLayer::new().with_tracer(tracer));
    let addr = support::serve(traced).await;
    let _ = get_text(format!("http://{addr}/boom"), Some(TRACEPARENT)).await;
    let spans = recorder.wait_for(1).await;
    assert!(
        matches!(spans[0].status, Status::Error { .. }),
        "status {:?}",
        spans[0].status
    );
}
