//! The middleware: one CLIENT span per attempt, its context injected (replacing what was there),
//! semantic-convention attributes, and the outbound policy per host.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::http::{HeaderMap, StatusCode};
use axum::{Router, routing::get};
use http::Extensions;
use lens_core::LensContextExt;
use lens_core::policy::OutboundPolicy;
use lens_reqwest::{ClientMiddleware, RequestBuilderExt};
use opentelemetry::Context;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracer, SdkTracerProvider, SpanData};
use reqwest_middleware::{ClientBuilder, ClientWithMiddleware, Middleware, Next};

fn provider() -> (SdkTracerProvider, SdkTracer, InMemorySpanExporter) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let tracer = provider.tracer("lens-reqwest-tests");
    (provider, tracer, exporter)
}

/// Answers with the propagation header lines it received, one `name: value` per line.
async fn echo(headers: HeaderMap) -> String {
    let mut out = String::new();
    for name in ["traceparent", "tracestate", "baggage"] {
        for value in headers.get_all(name) {
            out.push_str(&format!("{name}: {}\n", value.to_str().unwrap()));
        }
    }
    out
}

async fn serve(router: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    addr
}

fn client(mw: ClientMiddleware) -> ClientWithMiddleware {
    ClientBuilder::new(reqwest::Client::new()).with(mw).build()
}

fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.to_string())
}

fn lines<'a>(body: &'a str, name: &str) -> Vec<&'a str> {
    body.lines()
        .filter_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(": ")))
        .collect()
}

fn parent_context(tracer: &SdkTracer) -> Context {
    Context::current_with_span(tracer.start("parent"))
        .with_baggage_entry("tenant", "acme corp")
        .unwrap()
}

#[tokio::test]
async fn client_span_context_replaces_an_existing_traceparent() {
    let (_p, tracer, exporter) = provider();
    let addr = serve(Router::new().route("/", get(echo))).await;
    let parent = parent_context(&tracer);
    let body = client(ClientMiddleware::new().with_tracer(tracer.clone()))
        .get(format!("http://{addr}/"))
        .header(
            "traceparent",
            "00-11111111111111111111111111111111-2222222222222222-01",
        )
        .with_extension(parent.clone())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    assert_eq!(spans.len(), 1);
    let s = &spans[0];
    assert_eq!(s.span_kind, SpanKind::Client);
    assert_eq!(s.parent_span_id, parent.span().span_context().span_id());
    let expected = format!(
        "00-{}-{}-01",
        s.span_context.trace_id(),
        s.span_context.span_id()
    );
    assert_eq!(lines(&body, "traceparent"), [expected.as_str()]);
    assert_eq!(lines(&body, "baggage"), ["tenant=acme%20corp"]);
}

#[tokio::test]
async fn the_current_context_is_the_parent_by_default() {
    let (_p, tracer, exporter) = provider();
    let addr = serve(Router::new().route("/", get(echo))).await;
    let parent = parent_context(&tracer);
    let fut = client(ClientMiddleware::new().with_tracer(tracer.clone()))
        .get(format!("http://{addr}/"))
        .send();
    let res = opentelemetry::context::FutureExt::with_context(fut, parent.clone())
        .await
        .unwrap();
    let body = res.text().await.unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    assert_eq!(
        spans[0].parent_span_id,
        parent.span().span_context().span_id()
    );
    assert!(lines(&body, "traceparent")[0].contains(&spans[0].span_context.span_id().to_string()));
}

#[tokio::test]
async fn attributes_follow_the_http_client_conventions() {
    let (_p, tracer, exporter) = provider();
    let addr = serve(
        Router::new()
            .route("/ok", get(|| async { "ok" }))
            .route("/teapot", get(|| async { StatusCode::IM_A_TEAPOT })),
    )
    .await;
    let c = client(ClientMiddleware::new().with_tracer(tracer));
    let url = format!("http://user:secret@{addr}/ok?model=x&api_key=sk-123");
    c.get(&url).send().await.unwrap();
    c.get(format!("http://{addr}/teapot")).send().await.unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    let ok = &spans[0];
    assert_eq!(ok.name, "GET");
    assert_eq!(attr(ok, "http.request.method").as_deref(), Some("GET"));
    // reqwest moves user info into an Authorization header before middleware runs; whatever
    // reaches the span, the secrets do not.
    let full = attr(ok, "url.full").unwrap();
    assert!(
        full.ends_with(&format!("{addr}/ok?model=x&api_key=REDACTED")),
        "{full}"
    );
    assert!(
        !full.contains("secret") && !full.contains("sk-123"),
        "{full}"
    );
    assert_eq!(attr(ok, "server.address").as_deref(), Some("127.0.0.1"));
    assert_eq!(attr(ok, "server.port"), Some(addr.port().to_string()));
    assert_eq!(
        attr(ok, "http.response.status_code").as_deref(),
        Some("200")
    );
    assert_eq!(attr(ok, "http.request.resend_count"), None);
    assert_eq!(ok.status, Status::Unset);
    let teapot = &spans[1];
    assert_eq!(
        attr(teapot, "http.response.status_code").as_deref(),
        Some("418")
    );
    assert_eq!(attr(teapot, "error.type").as_deref(), Some("418"));
    assert!(matches!(teapot.status, Status::Error { .. }));
}

#[tokio::test]
async fn connection_failures_are_errors() {
    let (_p, tracer, exporter) = provider();
    // Bind and drop a listener: nothing listens on that port any more.
    let addr = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let result = client(ClientMiddleware::new().with_tracer(tracer))
        .get(format!("http://{addr}/"))
        .send()
        .await;
    assert!(result.is_err());
    let spans = exporter.get_finished_spans().unwrap();
    assert_eq!(attr(&spans[0], "error.type").as_deref(), Some("connect"));
    assert!(matches!(spans[0].status, Status::Error { .. }));
}

/// Retries once when the answer is 503, like reqwest-retry: the same extensions for every attempt.
struct RetryOnce;

#[async_trait::async_trait]
impl Middleware for RetryOnce {
    async fn handle(
        &self,
        req: reqwest::Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        let retry = req.try_clone().unwrap();
        let res = next.clone().run(req, extensions).await?;
        if res.status() == StatusCode::SERVICE_UNAVAILABLE {
            return next.run(retry, extensions).await;
        }
        Ok(res)
    }
}

#[tokio::test]
async fn every_attempt_gets_its_own_span_and_traceparent() {
    let (_p, tracer, exporter) = provider();
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (calls2, seen2) = (calls.clone(), seen.clone());
    let addr = serve(Router::new().route(
        "/",
        get(move |headers: HeaderMap| {
            let (calls, seen) = (calls2.clone(), seen2.clone());
            async move {
                seen.lock()
                    .unwrap()
                    .push(headers["traceparent"].to_str().unwrap().to_owned());
                if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                    StatusCode::SERVICE_UNAVAILABLE
                } else {
                    StatusCode::OK
                }
            }
        }),
    ))
    .await;
    let c = ClientBuilder::new(reqwest::Client::new())
        .with(RetryOnce)
        .with(ClientMiddleware::new().with_tracer(tracer.clone()))
        .build();
    let res = c
        .get(format!("http://{addr}/"))
        .with_extension(parent_context(&tracer))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    drop(res); // the second attempt's span ends with its response
    let spans: Vec<SpanData> = exporter
        .get_finished_spans()
        .unwrap()
        .into_iter()
        .filter(|s| s.span_kind == SpanKind::Client)
        .collect();
    assert_eq!(spans.len(), 2);
    assert_eq!(attr(&spans[0], "http.request.resend_count"), None);
    assert_eq!(
        attr(&spans[1], "http.request.resend_count").as_deref(),
        Some("1")
    );
    assert_eq!(spans[0].parent_span_id, spans[1].parent_span_id);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    for (span, tp) in spans.iter().zip(seen.iter()) {
        assert_eq!(&tp[36..52], span.span_context.span_id().to_string());
    }
}

#[tokio::test]
async fn baggage_is_not_sent_outside_the_allowlist_while_trace_context_is() {
    let (_p, tracer, _exporter) = provider();
    let addr = serve(Router::new().route("/", get(echo))).await;
    let parent = parent_context(&tracer);
    let send = |policy: OutboundPolicy| {
        let c = client(
            ClientMiddleware::new()
                .with_tracer(tracer.clone())
                .with_outbound_policy(policy),
        );
        let parent = parent.clone();
        async move {
            c.get(format!("http://{addr}/"))
                .with_extension(parent)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        }
    };
    let outside =
        send(OutboundPolicy::send_everywhere().baggage_only_to(["*.internal.example"])).await;
    assert_eq!(lines(&outside, "traceparent").len(), 1);
    assert!(lines(&outside, "baggage").is_empty());
    let inside = send(OutboundPolicy::send_everywhere().baggage_only_to(["127.0.0.1"])).await;
    assert_eq!(lines(&inside, "baggage"), ["tenant=acme%20corp"]);
    let nothing = send(
        OutboundPolicy::send_everywhere()
            .trace_context_only_to(["localhost"])
            .no_baggage(),
    )
    .await;
    assert_eq!(nothing, "");
}

#[tokio::test]
async fn the_builder_extension_injects_the_current_context() {
    let (_p, tracer, _exporter) = provider();
    let addr = serve(Router::new().route("/", get(echo))).await;
    let parent = parent_context(&tracer)
        .with_baggage_entry("k", "v")
        .unwrap();
    let expected = format!(
        "00-{}-{}-01",
        parent.span().span_context().trace_id(),
        parent.span().span_context().span_id()
    );
    let builder = {
        let _guard = parent.clone().attach();
        reqwest::Client::new()
            .get(format!("http://{addr}/"))
            .header(
                "traceparent",
                "00-11111111111111111111111111111111-2222222222222222-01",
            )
            .inject_context()
    };
    let body = builder.send().await.unwrap().text().await.unwrap();
    assert_eq!(lines(&body, "traceparent"), [expected.as_str()]);
    assert_eq!(lines(&body, "baggage"), ["tenant=acme%20corp,k=v"]);
}

#[tokio::test]
async fn each_request_gets_its_own_url_full_whether_it_repeats_or_not() {
    let (_p, tracer, exporter) = provider();
    let addr = serve(Router::new().route("/{p}", get(|| async { "ok" }))).await;
    let c = client(ClientMiddleware::new().with_tracer(tracer));
    // The first URL is shared between the spans that repeat it; the others are their own.
    let urls = [
        format!("http://{addr}/a?x=1"),
        format!("http://{addr}/a?x=1"),
        format!("http://{addr}/b"),
        format!("http://{addr}/a?token=t1"),
        format!("http://{addr}/a?x=1"),
    ];
    for url in &urls {
        c.get(url).send().await.unwrap();
    }
    let spans = exporter.get_finished_spans().unwrap();
    let full: Vec<String> = spans.iter().map(|s| attr(s, "url.full").unwrap()).collect();
    let expected = [
        format!("http://{addr}/a?x=1"),
        format!("http://{addr}/a?x=1"),
        format!("http://{addr}/b"),
        format!("http://{addr}/a?token=REDACTED"),
        format!("http://{addr}/a?x=1"),
    ];
    assert_eq!(full, expected);
}
