//! [`RequestContext`]: the request's Context as an axum extractor.

use std::convert::Infallible;

use axum::extract::FromRequestParts;
use http::request::Parts;
use opentelemetry::{Context, TraceId};

use lens_core::LensContextExt;

/// The request's OpenTelemetry [`Context`] (its SERVER span, baggage from a trusted caller), as an
/// axum extractor.
///
/// It is the Context current when the handler's extractors run. Under
/// [`ServerLayer`](crate::ServerLayer) that is the Context the layer built: the layer makes it
/// current around the inner service's `call` and every poll of its future, so a handler (and any
/// layer between `ServerLayer` and the handler) sees it, across `.await`s too. Without the layer,
/// or for a request its filter skipped, it is whatever Context is current there.
///
/// The layer stores nothing in the request's extensions (that would cost every request an
/// allocation). A `RequestContext` that a layer of yours inserted into the request's extensions
/// takes precedence, for a handler that runs where the layer's Context is not current.
///
/// ```
/// use axum::{Router, routing::get};
/// use lens_axum::{ServerLayer, RequestContext};
///
/// async fn handler(cx: RequestContext) -> String {
///     cx.trace_id().map(|id| id.to_string()).unwrap_or_default()
/// }
/// let app: Router = Router::new().route("/", get(handler)).layer(ServerLayer::new());
/// ```
#[derive(Clone, Debug)]
pub struct RequestContext(pub Context);

impl RequestContext {
    /// The Context.
    pub fn context(&self) -> &Context {
        &self.0
    }

    /// The Context, by value.
    pub fn into_context(self) -> Context {
        self.0
    }

    /// The trace id of the request's span, when it has a valid one.
    pub fn trace_id(&self) -> Option<TraceId> {
        self.0.trace_id()
    }
}

impl<S: Send + Sync> FromRequestParts<S> for RequestContext {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(parts
            .extensions
            .get::<RequestContext>()
            .cloned()
            .unwrap_or_else(|| RequestContext(Context::current())))
    }
}
