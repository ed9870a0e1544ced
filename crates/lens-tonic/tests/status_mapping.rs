//! `rpc.grpc.status_code` and the span status on both sides, for unary and server-streaming
//! calls, with the status in the response headers (trailers-only) or in the trailers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use lens_tonic::{ClientLayer, ServerLayer};
use opentelemetry::Value;
use opentelemetry::trace::{SpanKind, Status};
use opentelemetry_sdk::trace::SpanData;
use support::{Spans, attr, channel, serve, stream, unary};
use tonic::Code;
use tower_layer::Layer;

struct Setup {
    spans: Spans,
    grpc: tonic::client::Grpc<lens_tonic::ClientService<tonic::transport::Channel>>,
}

async fn setup() -> Setup {
    let spans = Spans::new();
    let addr = serve(ServerLayer::new().with_tracer(spans.tracer("server"))).await;
    let channel = ClientLayer::new()
        .with_tracer(spans.tracer("client"))
        .layer(channel(addr).await);
    Setup {
        grpc: tonic::client::Grpc::new(channel),
        spans,
    }
}

fn code_of(span: &SpanData) -> Option<Value> {
    attr(span, "rpc.grpc.status_code")
}

fn is_error(span: &SpanData) -> bool {
    matches!(span.status, Status::Error { .. })
}

/// Both spans, after exactly one call.
fn both(spans: &Spans) -> (SpanData, SpanData) {
    (spans.one(SpanKind::Client), spans.one(SpanKind::Server))
}

#[tokio::test]
async fn unary_ok_comes_from_the_trailers() {
    let mut s = setup().await;
    unary(&mut s.grpc, "fine").await.unwrap();
    let (client, server) = both(&s.spans);
    for span in [&client, &server] {
        assert_eq!(code_of(span), Some(Value::I64(0)));
        assert_eq!(span.status, Status::Unset);
    }
}

#[tokio::test]
async fn unary_client_fault_is_an_error_only_for_the_client() {
    let mut s = setup().await;
    let err = unary(&mut s.grpc, "status:5").await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    let (client, server) = both(&s.spans);
    assert_eq!(code_of(&client), Some(Value::I64(5)));
    assert_eq!(code_of(&server), Some(Value::I64(5)));
    assert!(is_error(&client));
    assert!(!is_error(&server), "NOT_FOUND is not a server error");
    match &client.status {
        Status::Error { description } => assert!(description.contains("as asked"), "{description}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn every_code_maps_as_the_conventions_say() {
    let server_errors = [2, 4, 12, 13, 14, 15];
    for code in 1..=16 {
        let mut s = setup().await;
        let err = unary(&mut s.grpc, &format!("status:{code}"))
            .await
            .unwrap_err();
        assert_eq!(err.code() as i32, code);
        let (client, server) = both(&s.spans);
        assert_eq!(code_of(&client), Some(Value::I64(i64::from(code))));
        assert_eq!(code_of(&server), Some(Value::I64(i64::from(code))));
        assert!(is_error(&client), "client, code {code}");
        assert_eq!(
            is_error(&server),
            server_errors.contains(&code),
            "server, code {code}"
        );
    }
}

#[tokio::test]
async fn streaming_ok_after_messages() {
    let mut s = setup().await;
    let (items, end) = stream(&mut s.grpc, "items:3;status:0").await;
    assert_eq!(items.len(), 3);
    end.unwrap();
    let (client, server) = both(&s.spans);
    assert_eq!(code_of(&client), Some(Value::I64(0)));
    assert_eq!(code_of(&server), Some(Value::I64(0)));
    assert!(!is_error(&client) && !is_error(&server));
    // The stream's items were produced inside the SERVER span.
    let server_span_id = server.span_context.span_id().to_string();
    for item in &items {
        assert_eq!(
            item.split('|').nth(2),
            Some(server_span_id.as_str()),
            "{item}"
        );
    }
}

#[tokio::test]
async fn streaming_status_in_trailers_after_messages() {
    let mut s = setup().await;
    let (items, end) = stream(&mut s.grpc, "items:2;status:14").await;
    assert_eq!(items.len(), 2);
    assert_eq!(end.unwrap_err().code(), Code::Unavailable);
    let (client, server) = both(&s.spans);
    assert_eq!(code_of(&client), Some(Value::I64(14)));
    assert_eq!(code_of(&server), Some(Value::I64(14)));
    assert!(is_error(&client) && is_error(&server));

    let mut s = setup().await;
    let (_, end) = stream(&mut s.grpc, "items:1;status:3").await;
    assert_eq!(end.unwrap_err().code(), Code::InvalidArgument);
    let (client, server) = both(&s.spans);
    assert_eq!(code_of(&server), Some(Value::I64(3)));
    assert!(is_error(&client) && !is_error(&server));
}

#[tokio::test]
async fn streaming_failure_before_any_message_is_trailers_only() {
    let mut s = setup().await;
    let (items, end) = stream(&mut s.grpc, "early:13").await;
    assert!(items.is_empty());
    assert_eq!(end.unwrap_err().code(), Code::Internal);
    let (client, server) = both(&s.spans);
    assert_eq!(code_of(&client), Some(Value::I64(13)));
    assert_eq!(code_of(&server), Some(Value::I64(13)));
    assert!(is_error(&client) && is_error(&server));
}

#[tokio::test]
async fn unknown_method_is_unimplemented() {
    let mut s = setup().await;
    s.grpc.ready().await.unwrap();
    let err = s
        .grpc
        .unary(
            tonic::Request::new(String::from("x")),
            http::uri::PathAndQuery::from_static("/lens.test.Echo/Missing"),
            lens_tonic::JsonCodec::<String, String>::new(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unimplemented);
    let (client, server) = both(&s.spans);
    assert_eq!(server.name, "lens.test.Echo/Missing");
    assert_eq!(code_of(&server), Some(Value::I64(12)));
    assert!(is_error(&client) && is_error(&server));
}

/// Classifiers of the user's on both layers, applied when the status arrives in the trailers at
/// the end of a stream: INVALID_ARGUMENT becomes a server error under its own `error.type`, and
/// UNAVAILABLE is no error for the client; the failure hook sees each failure.
#[tokio::test]
async fn streaming_status_is_classified_by_the_users_classifier_at_end_of_stream() {
    use lens_tonic::{Classify, Outcome, SpanSide};
    use opentelemetry::KeyValue;

    let spans = Spans::new();
    let server = ServerLayer::new()
        .with_tracer(spans.tracer("server"))
        .with_classifier(|code: &Code| match code {
            Code::InvalidArgument => Outcome::failure("bad_input", ""),
            other => SpanSide::Server.classify(other),
        })
        .with_on_failure(|failure, span| {
            span.set_attribute(KeyValue::new("test.failure", failure.error_type.clone()))
        });
    let addr = serve(server).await;
    let client = ClientLayer::new()
        .with_tracer(spans.tracer("client"))
        .with_classifier(|code: &Code| match code {
            Code::Unavailable => Outcome::Success,
            other => SpanSide::Client.classify(other),
        });
    let mut grpc = tonic::client::Grpc::new(client.layer(channel(addr).await));

    let (items, end) = stream(&mut grpc, "items:2;status:3").await;
    assert_eq!(items.len(), 2);
    assert_eq!(end.unwrap_err().code(), Code::InvalidArgument);
    let (client, server) = both(&spans);
    assert!(is_error(&server) && is_error(&client));
    assert_eq!(attr(&server, "error.type"), Some(Value::from("bad_input")));
    assert_eq!(
        attr(&server, "test.failure"),
        Some(Value::from("bad_input"))
    );
    match &server.status {
        // The code's description and the grpc-message, as for the default classifier.
        Status::Error { description } => {
            assert!(description.contains("in trailers"), "{description}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        attr(&client, "error.type"),
        Some(Value::from("INVALID_ARGUMENT"))
    );

    spans.exporter.reset();
    let (_, end) = stream(&mut grpc, "items:1;status:14").await;
    assert_eq!(end.unwrap_err().code(), Code::Unavailable);
    let (client, server) = both(&spans);
    assert!(
        !is_error(&client),
        "UNAVAILABLE is no error for this client"
    );
    assert_eq!(attr(&client, "error.type"), None);
    assert!(is_error(&server));
    assert_eq!(
        attr(&server, "test.failure"),
        Some(Value::from("UNAVAILABLE"))
    );
}
