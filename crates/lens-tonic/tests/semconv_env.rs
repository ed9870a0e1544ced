//! `OTEL_SEMCONV_STABILITY_OPT_IN` is read once, when a layer is built: its own test binary, the
//! only one that sets the variable.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::convert::Infallible;
use std::future::{Ready, ready};
use std::task::{Context as TaskContext, Poll};

use bytes::Bytes;
use http_body_util::Empty;
use lens_testkit::recorder::Recorder;
use lens_tonic::ServerLayer;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tower_layer::Layer;
use tower_service::Service;

#[derive(Clone)]
struct Ok0;

impl<B> Service<http::Request<B>> for Ok0 {
    type Response = http::Response<Empty<Bytes>>;
    type Error = Infallible;
    type Future = Ready<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Request<B>) -> Self::Future {
        ready(Ok(http::Response::builder()
            .header("grpc-status", "0")
            .body(Empty::new())
            .unwrap()))
    }
}

fn set_opt_in(value: Option<&str>) {
    // SAFETY: this test binary has one test, and no other thread reads or writes the
    // environment while it runs.
    #[allow(unsafe_code)]
    unsafe {
        match value {
            Some(v) => std::env::set_var("OTEL_SEMCONV_STABILITY_OPT_IN", v),
            None => std::env::remove_var("OTEL_SEMCONV_STABILITY_OPT_IN"),
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_opt_in_is_read_when_the_layer_is_built() {
    let recorder = Recorder::default();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(recorder.clone())
        .build();
    set_opt_in(Some("http,rpc/dup"));
    let layer = ServerLayer::new().with_tracer(provider.tracer("env"));
    // Changed after the layer was built: no effect on it.
    set_opt_in(None);
    let mut server = layer.layer(Ok0);
    let request = http::Request::builder()
        .uri("/lens.test.Echo/Echo")
        .body(())
        .unwrap();
    let _response = server.call(request).await.unwrap();
    let span = &recorder.wait_for(1).await[0];
    let keys: Vec<&str> = span.attributes.iter().map(|kv| kv.key.as_str()).collect();
    for key in [
        "rpc.system",
        "rpc.system.name",
        "rpc.grpc.status_code",
        "rpc.response.status_code",
    ] {
        assert!(keys.contains(&key), "{key} in {keys:?}");
    }
    // Built now, with the variable unset: the legacy attributes alone.
    let mut server = ServerLayer::new()
        .with_tracer(provider.tracer("env"))
        .layer(Ok0);
    let request = http::Request::builder()
        .uri("/lens.test.Echo/Echo")
        .body(())
        .unwrap();
    let _response = server.call(request).await.unwrap();
    let span = &recorder.wait_for(2).await[1];
    let keys: Vec<&str> = span.attributes.iter().map(|kv| kv.key.as_str()).collect();
    assert!(
        keys.contains(&"rpc.system") && !keys.contains(&"rpc.system.name"),
        "{keys:?}"
    );
}
