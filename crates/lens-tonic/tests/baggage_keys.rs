//! `with_baggage_keys`: the SERVER span records the keys of the baggage the call carried, the
//! CLIENT span the keys it sent, never the values; off by default.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use lens_core::LensContextExt as _;
use lens_testkit::baggage_keys::{assert_keys_only, assert_not_recorded};
use lens_tonic::{ClientLayer, ServerLayer};
use opentelemetry::Context;
use opentelemetry::trace::{FutureExt, SpanKind};
use support::{Spans, channel, serve, unary};
use tower_layer::Layer;

/// One call carrying baggage `a=1,b=2`, through a client and a server with the knob `on`.
async fn call(on: bool) -> Spans {
    let spans = Spans::new();
    let mut server = ServerLayer::new().with_tracer(spans.tracer("server"));
    let mut client = ClientLayer::new().with_tracer(spans.tracer("client"));
    if on {
        server = server.with_baggage_keys(true);
        client = client.with_baggage_keys(true);
    }
    let addr = serve(server).await;
    let mut grpc = tonic::client::Grpc::new(client.layer(channel(addr).await));
    let cx = Context::new()
        .with_baggage_entry("a", "1")
        .and_then(|cx| cx.with_baggage_entry("b", "2"))
        .unwrap();
    unary(&mut grpc, "m").with_context(cx).await.unwrap();
    spans
}

#[tokio::test]
async fn records_the_keys_and_no_values() {
    let spans = call(true).await;
    assert_keys_only(&spans.one(SpanKind::Server));
    assert_keys_only(&spans.one(SpanKind::Client));
}

#[tokio::test]
async fn off_by_default() {
    let spans = call(false).await;
    assert_not_recorded(&spans.one(SpanKind::Server));
    assert_not_recorded(&spans.one(SpanKind::Client));
}
