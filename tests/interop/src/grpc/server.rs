//! The Rust relay server: unary and server-streaming calls that report what their handler saw.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};

use lens_tonic::JsonCodec;
use opentelemetry::Context;
use serde_json::{Value, json};
use tonic::body::Body;
use tonic::codegen::http;
use tonic::server::{NamedService, ServerStreamingService, UnaryService};
use tonic::{Code, Request, Response, Status};

use super::wire::{SERVICE, STREAM, UNARY};
use crate::describe::seen;
use crate::error::Result;

/// The Rust relay: `Unary` answers `{"rust_server": what the handler saw}`; `Stream` sends
/// `items` such messages, then the status `code` (a number; without messages, a trailers-only
/// response).
#[derive(Clone)]
pub(super) struct Relay;

pub(super) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;
pub(super) type ItemStream =
    Pin<Box<dyn tokio_stream::Stream<Item = Result<Value, Status>> + Send>>;

pub(super) fn rust_server_seen() -> Value {
    json!({"rust_server": seen(&Context::current())})
}

impl UnaryService<Value> for Relay {
    type Response = Value;
    type Future = BoxFuture<Result<Response<Value>, Status>>;

    fn call(&mut self, _request: Request<Value>) -> Self::Future {
        let answer = rust_server_seen();
        Box::pin(async move { Ok(Response::new(answer)) })
    }
}

impl ServerStreamingService<Value> for Relay {
    type Response = Value;
    type ResponseStream = ItemStream;
    type Future = BoxFuture<Result<Response<ItemStream>, Status>>;

    fn call(&mut self, request: Request<Value>) -> Self::Future {
        let request = request.into_inner();
        let items = request["items"].as_u64().unwrap_or(0);
        let code = request["code"]
            .as_i64()
            .and_then(|c| i32::try_from(c).ok())
            .map_or(Code::Unknown, Code::from_i32);
        if items == 0 && code != Code::Ok {
            // Before any message: a trailers-only response.
            return Box::pin(async move { Err(Status::new(code, "as asked")) });
        }
        let mut out: Vec<Result<Value, Status>> =
            (0..items).map(|_| Ok(rust_server_seen())).collect();
        if code != Code::Ok {
            out.push(Err(Status::new(code, "as asked")));
        }
        let stream: ItemStream = Box::pin(tokio_stream::iter(out));
        Box::pin(async move { Ok(Response::new(stream)) })
    }
}

impl NamedService for Relay {
    const NAME: &'static str = SERVICE;
}

impl tower_service::Service<http::Request<Body>> for Relay {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<http::Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let codec = JsonCodec::<Value, Value>::new();
        match request.uri().path() {
            UNARY => {
                Box::pin(
                    async move { Ok(tonic::server::Grpc::new(codec).unary(Relay, request).await) },
                )
            }
            STREAM => Box::pin(async move {
                Ok(tonic::server::Grpc::new(codec)
                    .server_streaming(Relay, request)
                    .await)
            }),
            _ => Box::pin(async move { Ok(Status::unimplemented("no such method").into_http()) }),
        }
    }
}
