//! Calls made from inside a traced call: a gRPC hop (ServerLayer in, ClientLayer and
//! ClientInterceptor out) and a Ray-style remote call keep an incoming `-03` as `-03`, and the RPC
//! attributes follow the semantic-convention opt-in chosen.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::convert::Infallible;
use std::future::{Ready, ready};
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};

use bytes::Bytes;
use http_body_util::Empty;
use lens_core::Carrier;
use lens_span::rpc::RpcConventions;
use lens_testkit::recorder::Recorder;
use lens_tonic::{ClientInterceptor, ClientLayer, ServerLayer, traced_remote_call_with_tracer};
use opentelemetry::trace::{SpanKind, TraceContextExt as _, TracerProvider as _};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider, SpanData};
use tonic::service::Interceptor;
use tower_layer::Layer;
use tower_service::Service;

const INCOMING: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03";

fn provider() -> (SdkTracerProvider, SdkTracer, Recorder) {
    let recorder = Recorder::default();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(recorder.clone())
        .build();
    let tracer = provider.tracer("hop");
    (provider, tracer, recorder)
}

/// A gRPC peer in process: answers every call with `grpc-status` (trailers-only) and keeps the
/// `traceparent` each request carried.
#[derive(Clone)]
struct Peer {
    code: &'static str,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Peer {
    fn new(code: &'static str) -> Self {
        Peer {
            code,
            seen: Arc::default(),
        }
    }
}

impl<B> Service<http::Request<B>> for Peer {
    type Response = http::Response<Empty<Bytes>>;
    type Error = Infallible;
    type Future = Ready<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        if let Some(tp) = request.headers().get("traceparent") {
            self.seen
                .lock()
                .unwrap()
                .push(tp.to_str().unwrap().to_owned());
        }
        let response = http::Response::builder()
            .header("grpc-status", self.code)
            .body(Empty::new())
            .unwrap();
        ready(Ok(response))
    }
}

/// A handler that calls the peer through a ClientLayer and builds a request with the
/// ClientInterceptor, both from inside the SERVER span.
#[derive(Clone)]
struct Handler {
    client: lens_tonic::ClientService<Peer>,
    intercepted: Arc<Mutex<Option<String>>>,
}

impl<B> Service<http::Request<B>> for Handler {
    type Response = http::Response<Empty<Bytes>>;
    type Error = Infallible;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, Infallible>> + Send>,
    >;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _request: http::Request<B>) -> Self::Future {
        let request = ClientInterceptor::new()
            .call(tonic::Request::new(()))
            .unwrap();
        *self.intercepted.lock().unwrap() = request
            .metadata()
            .get("traceparent")
            .map(|v| v.to_str().unwrap().to_owned());
        let outgoing = http::Request::builder()
            .uri("/lens.test.Next/Call")
            .body(())
            .unwrap();
        let call = self.client.call(outgoing);
        Box::pin(async move {
            call.await.unwrap();
            Ok(http::Response::builder()
                .header("grpc-status", "0")
                .body(Empty::new())
                .unwrap())
        })
    }
}

#[tokio::test]
async fn a_grpc_hop_keeps_an_incoming_03() {
    let (_provider, tracer, recorder) = provider();
    let peer = Peer::new("0");
    let handler = Handler {
        client: ClientLayer::new()
            .with_tracer(tracer.clone())
            .layer(peer.clone()),
        intercepted: Arc::default(),
    };
    let mut server = ServerLayer::new()
        .with_tracer(tracer)
        .layer(handler.clone());
    let request = http::Request::builder()
        .uri("/lens.test.Echo/Echo")
        .header("traceparent", INCOMING)
        .body(())
        .unwrap();
    let _response = server.call(request).await.unwrap();
    let spans = recorder.wait_for(2).await;
    let client_span = spans
        .iter()
        .find(|s| s.span_kind == SpanKind::Client)
        .unwrap();
    let seen = peer.seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [format!(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-{}-03",
            client_span.span_context.span_id()
        )]
    );
    let intercepted = handler.intercepted.lock().unwrap().clone().unwrap();
    assert!(
        intercepted.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-")
            && intercepted.ends_with("-03"),
        "{intercepted}"
    );
}

#[tokio::test]
async fn a_ray_style_call_keeps_an_incoming_03() {
    let (_provider, tracer, recorder) = provider();
    let mut carrier = Carrier::new();
    carrier.insert("traceparent", INCOMING);
    let inside = traced_remote_call_with_tracer(&tracer, "Actor.generate", Some(&carrier), async {
        lens_tonic::inject_ray_context()
    })
    .await;
    let spans = recorder.wait_for(1).await;
    assert_eq!(
        inside.get("traceparent"),
        Some(
            format!(
                "00-4bf92f3577b34da6a3ce929d0e0e4736-{}-03",
                spans[0].span_context.span_id()
            )
            .as_str()
        )
    );
    // A call that starts a trace marks it random.
    let fresh = traced_remote_call_with_tracer(&tracer, "Actor.generate", None, async {
        lens_tonic::inject_ray_context()
    })
    .await;
    assert!(fresh.get("traceparent").unwrap().ends_with("-03"));
}

fn attributes(span: &SpanData) -> Vec<String> {
    let mut out: Vec<String> = span
        .attributes
        .iter()
        .filter(|kv| kv.key.as_str().starts_with("rpc.") || kv.key.as_str() == "error.type")
        .map(|kv| format!("{}={}", kv.key, kv.value))
        .collect();
    out.sort();
    out
}

/// One UNAVAILABLE call through ServerLayer with `conventions`: the span's RPC attributes.
async fn server_span_with(conventions: Option<RpcConventions>) -> Vec<String> {
    let (_provider, tracer, recorder) = provider();
    let mut layer = ServerLayer::new().with_tracer(tracer);
    if let Some(conventions) = conventions {
        layer = layer.with_rpc_conventions(conventions);
    }
    let mut server = layer.layer(Peer::new("14"));
    let request = http::Request::builder()
        .uri("/lens.test.Echo/Echo")
        .body(())
        .unwrap();
    let _response = server.call(request).await.unwrap();
    attributes(&recorder.wait_for(1).await[0])
}

#[tokio::test]
async fn each_semconv_opt_in_has_its_rpc_attributes() {
    assert_eq!(
        server_span_with(Some(RpcConventions::LEGACY)).await,
        [
            "error.type=UNAVAILABLE",
            "rpc.grpc.status_code=14",
            "rpc.method=Echo",
            "rpc.service=lens.test.Echo",
            "rpc.system=grpc",
        ]
    );
    assert_eq!(
        server_span_with(Some(RpcConventions::STABLE)).await,
        [
            "error.type=UNAVAILABLE",
            "rpc.method=lens.test.Echo/Echo",
            "rpc.response.status_code=UNAVAILABLE",
            "rpc.system.name=grpc",
        ]
    );
    assert_eq!(
        server_span_with(Some(RpcConventions::DUPLICATE)).await,
        [
            "error.type=UNAVAILABLE",
            "rpc.grpc.status_code=14",
            "rpc.method=lens.test.Echo/Echo",
            "rpc.response.status_code=UNAVAILABLE",
            "rpc.service=lens.test.Echo",
            "rpc.system.name=grpc",
            "rpc.system=grpc",
        ]
    );
}

#[test]
fn the_interceptor_replaces_a_stale_traceparent_and_obeys_its_filter() {
    let (_provider, tracer, _recorder) = provider();
    let cx = opentelemetry::Context::new()
        .with_span(opentelemetry::trace::Tracer::start(&tracer, "caller"));
    let _guard = cx.clone().attach();
    let expected = format!(
        "00-{}-{}-01",
        cx.span().span_context().trace_id(),
        cx.span().span_context().span_id()
    );
    let mut stale = tonic::Request::new(());
    stale.metadata_mut().insert(
        "traceparent",
        "00-11111111111111111111111111111111-2222222222222222-01"
            .parse()
            .unwrap(),
    );
    let request = ClientInterceptor::new().call(stale).unwrap();
    let lines: Vec<_> = request.metadata().get_all("traceparent").iter().collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0].to_str().unwrap(), expected);

    let skipped = ClientInterceptor::new()
        .with_filter(|_| false)
        .call(tonic::Request::new(()))
        .unwrap();
    assert!(skipped.metadata().get("traceparent").is_none());
}

fn server_address(span: &SpanData) -> (Option<String>, Option<i64>) {
    let get = |key: &str| {
        span.attributes
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| kv.value.clone())
    };
    (
        get("server.address").map(|v| v.as_str().into_owned()),
        get("server.port").and_then(|v| match v {
            opentelemetry::Value::I64(port) => Some(port),
            _ => None,
        }),
    )
}

/// One call to `uri` (with a `Host` header when given) through `service`.
async fn call_once<S>(service: &mut S, uri: &str, host: Option<&str>)
where
    S: Service<http::Request<()>>,
    S::Error: std::fmt::Debug,
{
    let mut request = http::Request::builder().uri(uri);
    if let Some(host) = host {
        request = request.header("host", host);
    }
    let _response = service.call(request.body(()).unwrap()).await.unwrap();
}

/// `server.address` of an IPv6 authority is the address without brackets on both sides, as
/// lens-axum and lens-reqwest write it (one splitter, lens-span's `split_host_port`).
#[tokio::test]
async fn ipv6_authorities_lose_their_brackets_on_both_sides() {
    let (_provider, tracer, recorder) = provider();
    let mut server = ServerLayer::new()
        .with_tracer(tracer.clone())
        .layer(Peer::new("0"));
    call_once(&mut server, "http://[::1]:50051/lens.test.Echo/Echo", None).await;
    // The Host header, when the URI has no authority.
    call_once(
        &mut server,
        "/lens.test.Echo/Echo",
        Some("[2001:db8::7]:8443"),
    )
    .await;

    let mut client = ClientLayer::new()
        .with_tracer(tracer.clone())
        .layer(Peer::new("0"));
    call_once(&mut client, "http://[::1]:50052/lens.test.Echo/Echo", None).await;
    // Given with or without brackets, the same text.
    for host in ["[::2]", "::2"] {
        let mut client = ClientLayer::new()
            .with_tracer(tracer.clone())
            .with_server_address(host, 7)
            .layer(Peer::new("0"));
        call_once(&mut client, "/lens.test.Echo/Echo", None).await;
    }

    let spans = recorder.wait_for(5).await;
    let addresses: Vec<_> = spans.iter().map(server_address).collect();
    let expected = |host: &str, port: i64| (Some(host.to_owned()), Some(port));
    assert_eq!(
        addresses,
        [
            expected("::1", 50051),
            expected("2001:db8::7", 8443),
            expected("::1", 50052),
            expected("::2", 7),
            expected("::2", 7),
        ]
    );
}
