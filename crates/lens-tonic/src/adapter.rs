//! lens-tonic as a lens-span adapter: what the hooks of the gRPC layers see of a call
//! ([`RequestInfo`], [`ResponseInfo`]) and the adapter type that names them.

use http::{HeaderMap, Uri};
use lens_span::Adapter;
use tonic::Code;

use crate::method::GrpcMethod;

/// What the filter, the span-name callback and the request-attribute hook of the gRPC layers
/// see of a call.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct RequestInfo<'a> {
    /// The method called.
    pub method: GrpcMethod<'a>,
    /// The request URI (a path only, on a tonic channel).
    pub uri: &'a Uri,
    /// The request metadata, as HTTP/2 headers.
    pub headers: &'a HeaderMap,
}

impl<'a> RequestInfo<'a> {
    /// The view of `request`.
    pub(crate) fn of<B>(request: &'a http::Request<B>) -> Self {
        RequestInfo {
            method: GrpcMethod::from_path(request.uri().path()),
            uri: request.uri(),
            headers: request.headers(),
        }
    }
}

/// What the response-attribute hook of the gRPC layers sees: the call's status, and the headers
/// or trailers it came in.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct ResponseInfo<'a> {
    /// The gRPC status code.
    pub code: Code,
    /// The response headers (trailers-only responses) or trailers holding `grpc-status`; empty
    /// for a call dropped before its status (`code` is then `CANCELLED`).
    pub metadata: &'a HeaderMap,
}

/// The hooks of the gRPC layers see [`RequestInfo`] and [`ResponseInfo`].
pub(crate) struct Grpc;

impl Adapter for Grpc {
    type Request<'a> = RequestInfo<'a>;
    type Response<'a> = ResponseInfo<'a>;
    type Status = Code;
}
