//! The Rust client calls the Python peer's server, one call per case, and what each call answered.

use lens_tonic::{ClientInterceptor, ClientLayer, JsonCodec};
use opentelemetry::trace::{FutureExt as _, TraceContextExt, Tracer};
use opentelemetry_sdk::trace::SdkTracer;
use serde::Deserialize;
use serde_json::{Value, json};
use tonic::body::Body;
use tonic::codegen::http;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Endpoint;
use tonic::{Code, Request, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};
use tower_layer::Layer;

use super::case::{Case, Direction, Target, Via, code_name};
use super::handler_checks::{Observed, check_handler, label};
use super::wire::CALL_TIMEOUT;
use crate::check::Checks;
use crate::describe::Seen;
use crate::error::{Error, Result};

#[derive(Deserialize)]
pub(super) struct CallAnswer {
    pub(super) client: Seen,
    pub(super) metadata: serde_json::Map<String, Value>,
    pub(super) answers: Vec<Value>,
    pub(super) code: String,
}

/// The Rust client calls the Python peer's server, one call per case.
pub(super) async fn rust_to_python(
    port: &str,
    tracer: &SdkTracer,
    cases: &[Case],
    checks: &mut Checks,
) -> Result<Vec<Observed>> {
    let channel = Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
        .map_err(Error::http("python gRPC endpoint"))?
        .timeout(CALL_TIMEOUT)
        .connect()
        .await
        .map_err(Error::http(format!("connecting to 127.0.0.1:{port}")))?;
    let layered_channel = ClientLayer::new()
        .with_tracer(tracer.clone())
        .layer(channel.clone());
    let mut health = HealthClient::new(layered_channel.clone());
    let mut layered = tonic::client::Grpc::new(layered_channel);
    let mut intercepted =
        tonic::client::Grpc::new(InterceptedService::new(channel, ClientInterceptor::new()));

    let mut observed = Vec::new();
    for case in cases {
        let label = |what: &str| label(Direction::RustToPython, case, what);
        let mut cx = case.parent.build()?;
        if case.caller_span {
            let span = tracer.start_with_context("rust.caller", &cx);
            cx = cx.with_span(span);
        }
        let request = json!({"items": case.items, "code": code_name(case.code)});
        let Answered {
            answers,
            status,
            in_headers,
        } = match (case.target, case.via) {
            (Target::Health, _) => {
                let check = health.check(HealthCheckRequest {
                    service: String::new(),
                });
                match check.with_context(cx.clone()).await {
                    Ok(r) => {
                        Answered::messages(vec![json!({"status": r.into_inner().status})], Ok(()))
                    }
                    Err(status) => Answered::before_any_message(status),
                }
            }
            (Target::Relay, Via::Layer) => {
                call(&mut layered, case, request)
                    .with_context(cx.clone())
                    .await
            }
            (Target::Relay, Via::Interceptor) => {
                call(&mut intercepted, case, request)
                    .with_context(cx.clone())
                    .await
            }
        };
        let caller = case
            .caller_span
            .then(|| cx.span().span_context().span_id().to_string());
        cx.span().end();
        checks.eq(
            &label("rust client: final status"),
            &status.as_ref().err().map_or(Code::Ok, Status::code),
            &case.code,
        );
        if case.streaming && case.code != Code::Ok {
            checks.eq(
                &label("the status came in the response headers (trailers-only)"),
                &in_headers,
                &(case.items == 0),
            );
        }
        let handler = match case.target {
            Target::Relay => {
                let seen: Vec<Seen> = answers
                    .iter()
                    .filter_map(|a| serde_json::from_value(a["python_server"].clone()).ok())
                    .collect();
                check_handler(checks, Direction::RustToPython, case, &seen)
            }
            Target::Health => {
                checks.eq(
                    &label("the generated client reads SERVING"),
                    &answers,
                    &vec![json!({"status": ServingStatus::Serving as i32})],
                );
                // What the handler saw is in its span, checked with the spans.
                None
            }
        };
        observed.push(Observed { caller, handler });
    }
    Ok(observed)
}

/// One call of `case` through `grpc`: the messages, then the final status.
pub(super) async fn call<T>(
    grpc: &mut tonic::client::Grpc<T>,
    case: &Case,
    request: Value,
) -> Answered
where
    T: tonic::client::GrpcService<Body>,
    T::ResponseBody: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    <T::ResponseBody as http_body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    T::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if let Err(e) = grpc.ready().await {
        return Answered::before_any_message(Status::unknown(e.into().to_string()));
    }
    let path = http::uri::PathAndQuery::from_static(case.method());
    let codec = JsonCodec::<Value, Value>::new();
    if !case.streaming {
        return match grpc.unary(Request::new(request), path, codec).await {
            Ok(r) => Answered::messages(vec![r.into_inner()], Ok(())),
            Err(status) => Answered::before_any_message(status),
        };
    }
    let mut stream = match grpc
        .server_streaming(Request::new(request), path, codec)
        .await
    {
        Ok(r) => r.into_inner(),
        Err(status) => return Answered::before_any_message(status),
    };
    let mut items = Vec::new();
    loop {
        match stream.message().await {
            Ok(Some(item)) => items.push(item),
            Ok(None) => return Answered::messages(items, Ok(())),
            Err(status) => return Answered::messages(items, Err(status)),
        }
    }
}

/// What a Rust call received: the messages, the final status, and whether that status came with
/// the response headers (a trailers-only response, or no response) rather than in trailers.
pub(super) struct Answered {
    pub(super) answers: Vec<Value>,
    pub(super) status: std::result::Result<(), Status>,
    pub(super) in_headers: bool,
}

impl Answered {
    pub(super) fn messages(answers: Vec<Value>, status: std::result::Result<(), Status>) -> Self {
        Answered {
            answers,
            status,
            in_headers: false,
        }
    }

    pub(super) fn before_any_message(status: Status) -> Self {
        Answered {
            answers: Vec::new(),
            status: Err(status),
            in_headers: true,
        }
    }
}
