//! The SERVER span is the current Context while the handler runs, and the extractor gives it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use axum::{Router, routing::get};
use lens_axum::{RequestContext, ServerLayer};
use opentelemetry::Context;
use opentelemetry::trace::{SpanKind, TraceContextExt};
use support::{serve, span};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handler_sees_the_server_span_as_current_and_through_the_extractor() {
    let (_p, tracer, recorder) = support::provider();
    async fn handler(cx: RequestContext) -> String {
        let before = Context::current().span().span_context().span_id();
        // Across an await point the span stays current.
        tokio::task::yield_now().await;
        let after = Context::current().span().span_context().span_id();
        let extracted = cx.context().span().span_context().span_id();
        format!("{before} {after} {extracted} {}", cx.trace_id().unwrap())
    }
    let addr = serve(
        Router::new()
            .route("/", get(handler))
            .layer(ServerLayer::new().with_tracer(tracer)),
    )
    .await;
    let body = reqwest::Client::new()
        .get(format!("http://{addr}/"))
        .header("traceparent", support::TRACEPARENT)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let spans = recorder.wait_for(1).await;
    let s = span(&spans, "GET /", SpanKind::Server);
    let id = s.span_context.span_id().to_string();
    assert_eq!(body, format!("{id} {id} {id} {}", support::TRACE_ID));
}

/// `GET /` from `app` behind a `ServerLayer` with `tracer`.
async fn get_root(app: Router, tracer: opentelemetry_sdk::trace::SdkTracer) -> reqwest::Response {
    let addr = serve(app.layer(ServerLayer::new().with_tracer(tracer))).await;
    reqwest::Client::new()
        .get(format!("http://{addr}/"))
        .send()
        .await
        .unwrap()
}

/// The span's id as the extractor gives it, or `none`.
fn span_id_of(cx: &RequestContext) -> String {
    let sc = cx.context().span().span_context().clone();
    if sc.is_valid() {
        sc.span_id().to_string()
    } else {
        "none".to_owned()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layer_between_the_server_layer_and_the_handler_extracts_the_server_span_too() {
    use axum::extract::Request;
    use axum::middleware::{Next, from_fn};
    use axum::response::Response;

    let (_p, tracer, recorder) = support::provider();
    async fn inner_layer(cx: RequestContext, req: Request, next: Next) -> Response {
        let seen = span_id_of(&cx);
        let mut res = next.run(req).await;
        res.headers_mut()
            .insert("x-seen-by-layer", seen.parse().unwrap());
        res
    }
    async fn handler(cx: RequestContext) -> String {
        span_id_of(&cx)
    }
    let app = Router::new().route("/", get(handler));
    let res = get_root(app.layer(from_fn(inner_layer)), tracer).await;
    let seen = res.headers()["x-seen-by-layer"]
        .to_str()
        .unwrap()
        .to_owned();
    let body = res.text().await.unwrap();
    let spans = recorder.wait_for(1).await;
    let id = span(&spans, "GET /", SpanKind::Server)
        .span_context
        .span_id()
        .to_string();
    assert_eq!((seen.as_str(), body.as_str()), (id.as_str(), id.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_context_put_in_the_extensions_takes_precedence() {
    use axum::extract::Request;
    use axum::middleware::{Next, from_fn};
    use axum::response::Response;

    let (_p, tracer, recorder) = support::provider();
    // A layer of the application's that hands the handler a Context of its own.
    async fn own_context(mut req: Request, next: Next) -> Response {
        req.extensions_mut().insert(RequestContext(Context::new()));
        next.run(req).await
    }
    async fn handler(cx: RequestContext) -> String {
        let current = Context::current().span().span_context().span_id();
        format!("{} {current}", span_id_of(&cx))
    }
    let app = Router::new().route("/", get(handler));
    let res = get_root(app.layer(from_fn(own_context)), tracer).await;
    let body = res.text().await.unwrap();
    let spans = recorder.wait_for(1).await;
    let id = span(&spans, "GET /", SpanKind::Server)
        .span_context
        .span_id();
    // The inserted Context, while the server span is still the current one.
    assert_eq!(body, format!("none {id}"));
}
