//! RPC call durations (semantic conventions 1.42 under `OTEL_SEMCONV_STABILITY_OPT_IN`, the
//! older milliseconds without it), server and client, through opentelemetry_sdk's in-memory
//! metric exporter.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use lens_span::rpc::RpcConventions;
use lens_testkit::metrics::{DURATION_BUCKETS_S, Metrics, Point};
use lens_testkit::recorder::Recorder;
use lens_tonic::{ClientLayer, JsonCodec, ServerLayer};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tonic::{Code, Request};
use tower_layer::Layer;

/// One call to `path` (an Echo call, or a method the server does not have).
async fn call<T>(grpc: &mut tonic::client::Grpc<T>, path: &'static str) -> Code
where
    T: tonic::client::GrpcService<tonic::body::Body>,
    T::ResponseBody: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    <T::ResponseBody as http_body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    T::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    grpc.ready().await.map_err(|e| e.into()).unwrap();
    let result = grpc
        .unary(
            Request::new("hi".to_owned()),
            http::uri::PathAndQuery::from_static(path),
            JsonCodec::<String, String>::new(),
        )
        .await;
    match result {
        Ok(_) => Code::Ok,
        Err(status) => status.code(),
    }
}

/// A tracer provider whose ended spans the recorder sees.
fn recorded() -> (Recorder, SdkTracerProvider) {
    let recorder = Recorder::default();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(recorder.clone())
        .build();
    (recorder, provider)
}

/// Echo twice, an unknown method and an unknown service, under `conventions`: the server's and
/// the client's series.
async fn calls_under(conventions: RpcConventions) -> (Vec<Point>, Vec<Point>) {
    let (recorder, provider) = recorded();
    let (server_metrics, client_metrics) = (Metrics::new(), Metrics::new());
    let addr = support::serve(
        ServerLayer::new()
            .with_tracer(provider.tracer("server"))
            .with_rpc_conventions(conventions)
            .with_meter(server_metrics.meter("server")),
    )
    .await;
    let channel = ClientLayer::new()
        .with_tracer(provider.tracer("client"))
        .with_meter(client_metrics.meter("client"))
        .with_rpc_conventions(conventions)
        .with_server_address("127.0.0.1", addr.port())
        .layer(support::channel(addr).await);
    let mut grpc = tonic::client::Grpc::new(channel);
    assert_eq!(call(&mut grpc, support::ECHO).await, Code::Ok);
    assert_eq!(call(&mut grpc, support::ECHO).await, Code::Ok);
    assert_eq!(
        call(&mut grpc, "/lens.test.Echo/NoSuchMethod").await,
        Code::Unimplemented
    );
    assert_eq!(
        call(&mut grpc, "/no.such.Service/Call").await,
        Code::Unimplemented
    );
    // Both spans of each call ended: their durations are recorded.
    recorder.wait_for(8).await;
    (server_metrics.collect(), client_metrics.collect())
}

fn named<'a>(points: &'a [Point], name: &str) -> Vec<&'a Point> {
    points.iter().filter(|p| p.name == name).collect()
}

fn ok_and_failed<'a>(
    points: &[&'a Point],
    code_key: &str,
    ok: &str,
) -> (&'a Point, Vec<&'a Point>) {
    let (oks, failed): (Vec<&Point>, Vec<&Point>) =
        points.iter().partition(|p| p.get(code_key) == Some(ok));
    assert_eq!(oks.len(), 1, "{points:#?}");
    assert_eq!(oks[0].value, 2.0);
    (oks[0], failed)
}

#[tokio::test]
async fn stable_conventions_record_call_durations_in_seconds() {
    let (server, client) = calls_under(RpcConventions::STABLE).await;
    assert!(
        named(&server, "rpc.server.duration").is_empty(),
        "{server:#?}"
    );
    assert!(
        named(&client, "rpc.client.duration").is_empty(),
        "{client:#?}"
    );

    let points = named(&server, "rpc.server.call.duration");
    let (ok, failed) = ok_and_failed(&points, "rpc.response.status_code", "OK");
    assert_eq!(ok.unit, "s");
    assert_eq!(ok.bounds, DURATION_BUCKETS_S);
    assert_eq!(ok.get("rpc.system.name"), Some("grpc"));
    assert_eq!(ok.get("rpc.method"), Some("lens.test.Echo/Echo"));
    assert_eq!(ok.get("error.type"), None);
    // Methods the server does not have are one series: `_OTHER`, whatever the caller sent.
    assert_eq!(failed.len(), 1, "{points:#?}");
    assert_eq!(failed[0].value, 2.0);
    assert_eq!(failed[0].get("rpc.method"), Some("_OTHER"));
    assert_eq!(
        failed[0].get("rpc.response.status_code"),
        Some("UNIMPLEMENTED")
    );
    assert_eq!(failed[0].get("error.type"), Some("UNIMPLEMENTED"));
    for p in &points {
        assert_eq!(p.get("server.address"), None, "opt-in on servers");
    }

    let points = named(&client, "rpc.client.call.duration");
    let (ok, failed) = ok_and_failed(&points, "rpc.response.status_code", "OK");
    assert_eq!(ok.unit, "s");
    assert_eq!(ok.get("server.address"), Some("127.0.0.1"));
    assert_eq!(failed.len(), 2, "{points:#?}");
    for p in failed {
        assert_eq!(p.get("error.type"), Some("UNIMPLEMENTED"));
    }
}

#[tokio::test]
#[allow(deprecated)]
async fn without_the_opt_in_the_older_durations_in_milliseconds() {
    let (server, client) = calls_under(RpcConventions::LEGACY).await;
    assert!(named(&server, "rpc.server.call.duration").is_empty());
    assert!(named(&client, "rpc.client.call.duration").is_empty());
    let points = named(&server, "rpc.server.duration");
    let (ok, failed) = ok_and_failed(&points, "rpc.grpc.status_code", "0");
    assert_eq!(ok.unit, "ms");
    assert_eq!(ok.bounds.first(), Some(&5.0));
    assert_eq!(ok.get("rpc.system"), Some("grpc"));
    assert_eq!(ok.get("rpc.service"), Some("lens.test.Echo"));
    assert_eq!(ok.get("rpc.method"), Some("Echo"));
    assert_eq!(failed.len(), 1, "{points:#?}");
    assert_eq!(failed[0].get("rpc.method"), Some("_OTHER"));
    assert_eq!(failed[0].get("rpc.service"), None);
    let points = named(&client, "rpc.client.duration");
    let (ok, _) = ok_and_failed(&points, "rpc.grpc.status_code", "0");
    assert_eq!(ok.unit, "ms");
}

#[tokio::test]
async fn rpc_dup_records_both() {
    let (server, client) = calls_under(RpcConventions::DUPLICATE).await;
    for (points, names) in [
        (&server, ["rpc.server.call.duration", "rpc.server.duration"]),
        (&client, ["rpc.client.call.duration", "rpc.client.duration"]),
    ] {
        for name in names {
            let of = named(points, name);
            let total: f64 = of.iter().map(|p| p.value).sum();
            assert_eq!(total, 4.0, "{name}: {of:#?}");
        }
    }
}

/// Classifiers of the user's decide the metrics' `error.type` as they decide the spans': here
/// UNIMPLEMENTED is no error on the server, and `missing_method` on the client.
#[tokio::test]
async fn users_classifiers_decide_the_metrics_error_type() {
    use lens_tonic::{Classify, Outcome, SpanSide};

    let (recorder, provider) = recorded();
    let (server_metrics, client_metrics) = (Metrics::new(), Metrics::new());
    let addr = support::serve(
        ServerLayer::new()
            .with_tracer(provider.tracer("server"))
            .with_rpc_conventions(RpcConventions::STABLE)
            .with_meter(server_metrics.meter("server"))
            .with_classifier(|code: &Code| match code {
                Code::Unimplemented => Outcome::Success,
                other => SpanSide::Server.classify(other),
            }),
    )
    .await;
    let channel = ClientLayer::new()
        .with_tracer(provider.tracer("client"))
        .with_meter(client_metrics.meter("client"))
        .with_rpc_conventions(RpcConventions::STABLE)
        .with_classifier(|code: &Code| match code {
            Code::Unimplemented => Outcome::failure("missing_method", ""),
            other => SpanSide::Client.classify(other),
        })
        .layer(support::channel(addr).await);
    let mut grpc = tonic::client::Grpc::new(channel);
    assert_eq!(
        call(&mut grpc, "/lens.test.Echo/NoSuchMethod").await,
        Code::Unimplemented
    );
    recorder.wait_for(2).await;

    let server = server_metrics.collect();
    let points = named(&server, "rpc.server.call.duration");
    assert_eq!(points.len(), 1, "{points:#?}");
    assert_eq!(
        points[0].get("rpc.response.status_code"),
        Some("UNIMPLEMENTED")
    );
    assert_eq!(points[0].get("error.type"), None, "{points:#?}");
    let client = client_metrics.collect();
    let points = named(&client, "rpc.client.call.duration");
    assert_eq!(points.len(), 1, "{points:#?}");
    assert_eq!(points[0].get("error.type"), Some("missing_method"));
}
