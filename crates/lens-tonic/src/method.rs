//! [`GrpcMethod`]: a gRPC method as its request path names it, and the RPC attributes it gives a
//! call span.

use std::borrow::Cow;

use lens_span::rpc::RpcConventions;
use opentelemetry::KeyValue;

/// A gRPC method from its request path `/{package.Service}/{Method}`.
///
/// ```
/// use lens_tonic::GrpcMethod;
///
/// let m = GrpcMethod::from_path("/helloworld.Greeter/SayHello");
/// assert_eq!(m.span_name(), "helloworld.Greeter/SayHello");
/// assert_eq!(m.service(), Some("helloworld.Greeter"));
/// assert_eq!(m.method(), Some("SayHello"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrpcMethod<'a> {
    path: &'a str,
    service: Option<&'a str>,
    method: Option<&'a str>,
}

impl<'a> GrpcMethod<'a> {
    /// Parses a request path; a path that is not `/{service}/{method}` keeps no service or method.
    pub fn from_path(path: &'a str) -> Self {
        let parts = path
            .strip_prefix('/')
            .and_then(|rest| rest.split_once('/'))
            .filter(|(s, m)| !s.is_empty() && !m.is_empty() && !m.contains('/'));
        GrpcMethod {
            path,
            service: parts.map(|(s, _)| s),
            method: parts.map(|(_, m)| m),
        }
    }

    /// The fully qualified service name (`package.Service`).
    pub fn service(&self) -> Option<&'a str> {
        self.service
    }

    /// The method name.
    pub fn method(&self) -> Option<&'a str> {
        self.method
    }

    /// The span name: `{package.Service}/{Method}`, or the path for a path of another shape
    /// (`grpc` when it is empty).
    pub fn span_name(&self) -> Cow<'static, str> {
        let name = self.full_name();
        if name.is_empty() {
            Cow::Borrowed("grpc")
        } else {
            Cow::Owned(name.to_owned())
        }
    }

    /// `{package.Service}/{Method}` (the path without its leading `/`).
    pub fn full_name(&self) -> &'a str {
        self.path.strip_prefix('/').unwrap_or(self.path)
    }

    pub(crate) fn push_attributes(
        &self,
        conventions: RpcConventions,
        attributes: &mut Vec<KeyValue>,
    ) {
        conventions.push_method(attributes, self.service, self.method, self.full_name());
    }
}
