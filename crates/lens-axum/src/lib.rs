//! lens-axum: a tower [`Layer`](tower_layer::Layer) for axum 0.8 (and any tower HTTP service)
//! that continues W3C Trace Context and Baggage with lens-core and records one OpenTelemetry
//! SERVER span per request.
//!
//! ```
//! use axum::{Router, routing::get};
//! use lens_axum::{ServerLayer, RequestContext};
//! use opentelemetry::trace::TraceContextExt;
//!
//! async fn hello(cx: RequestContext) -> String {
//!     // The SERVER span is also `Context::current()` while the handler runs.
//!     assert!(opentelemetry::Context::current().span().span_context().is_valid()
//!         || !cx.context().span().span_context().is_valid());
//!     format!("trace {}", cx.trace_id().map(|t| t.to_string()).unwrap_or_default())
//! }
//!
//! // `Router::layer`, so that spans are named after the matched route: `GET /hello/{name}`.
//! let app: Router = Router::new()
//!     .route("/hello/{name}", get(hello))
//!     .layer(ServerLayer::new());
//! // axum::serve(listener, app.into_make_service_with_connect_info::<std::net::SocketAddr>())
//! ```
//!
//! Per request, the layer:
//! * extracts `traceparent`, `tracestate` and `baggage` with lens-core (docs/propagation-rules.md#traceparent, docs/propagation-rules.md#tracestate, docs/propagation-rules.md#baggage) through
//!   an [`InboundPolicy`](lens_core::policy::InboundPolicy): Trust makes the remote span the
//!   parent, Link starts a new trace with a link to it, Ignore starts a plain new trace;
//!   untrusted requests contribute no baggage;
//! * starts a SERVER span named `{METHOD} {route}` (route from axum's
//!   [`MatchedPath`](axum::extract::MatchedPath)) or `{METHOD}`, with the stable HTTP semantic
//!   convention attributes (`http.request.method`, `url.path`, `url.scheme`, `http.route`,
//!   `http.response.status_code`, `server.address`, `server.port`, `network.protocol.version`,
//!   `user_agent.original`, `client.address`, `url.query` with credential values redacted;
//!   on a span that starts a new trace, `lens.trace.new_root` says why: see
//!   [`lens_span::new_root`]), status Error and `error.type` on 5xx, failures and panics;
//! * makes that span the current [`Context`](opentelemetry::Context) while the inner service
//!   runs, so `Context::current()`, lens-reqwest calls and `tracing` spans (through
//!   tracing-opentelemetry) in the handler nest under it;
//! * ends the span when the response body has been sent in full (streaming included), failed,
//!   or was dropped.
//!
//! The span lifecycle itself (start, classification, end) is lens-span's, shared with
//! lens-reqwest and lens-tonic; [`ServerLayer`] has the same knobs under the same names as their
//! adapters (`with_tracer`, `with_propagator`, `with_global_propagator`, `with_inbound_policy`,
//! `with_filter`, `with_span_name`, `with_random_flag_on_new_traces`,
//! `with_request_attributes`, `with_response_attributes`, `with_classifier`, `with_on_failure`,
//! `with_meter`, `with_global_meter`, `with_baggage_keys`: the keys, never the values, of the
//! baggage a request brought, as `lens.baggage.keys`, off by default).
//!
//! What counts as an error is the classifier's: by default 5xx ([`HttpServerErrors`]), for
//! example 404s as errors too:
//!
//! ```
//! use lens_axum::{Classify, HttpServerErrors, Outcome, ServerLayer};
//!
//! let layer = ServerLayer::new().with_classifier(|status: &http::StatusCode| match status.as_u16() {
//!     404 => Outcome::failure("404", "not found"),
//!     _ => HttpServerErrors.classify(status),
//! });
//! # let _ = layer;
//! ```
//!
//! Request metrics (semantic conventions 1.42: `http.server.request.duration`, opt-in
//! `http.server.active_requests` and `http.server.{request,response}.body.size`) are off by
//! default; turn
//! them on with `with_meter` or `with_global_meter` (docs/metrics.md):
//!
//! ```
//! use axum::{Router, routing::get};
//! use lens_axum::ServerLayer;
//! use opentelemetry::metrics::MeterProvider as _;
//! use opentelemetry_sdk::metrics::SdkMeterProvider;
//!
//! let meters = SdkMeterProvider::builder().build(); // with your reader or exporter
//! let app: Router = Router::new()
//!     .route("/users/{id}", get(|| async { "hello" }))
//!     .layer(
//!         ServerLayer::new()
//!             .with_meter(meters.meter("my-service"))
//!             .with_active_requests(true)
//!             .with_body_sizes(true),
//!     );
//! # let _ = app;
//! ```
//!
//! `client.address` and [`InboundPolicy::trust_private_networks`](lens_core::policy::InboundPolicy::trust_private_networks)
//! need the peer address: serve with `into_make_service_with_connect_info::<SocketAddr>()`
//! (feature `connect-info`, on by default).
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod extract;
mod layer;
mod memo;

pub use extract::RequestContext;
pub use layer::{
    RequestInfo, ResponseBody, ResponseFuture, ResponseInfo, ServerLayer, ServerService,
};
/// What the knobs take: a filter's decision, a classifier and its outcome, what the failure hook
/// sees, and the default classifier (5xx are errors).
pub use lens_span::FilterDecision;
pub use lens_span::classify::{Classify, Failure, HttpServerErrors, Outcome};
/// What a call says it is with the GenAI opt-in (`with_gen_ai`, or per call: docs/streaming.md).
pub use lens_span::genai::GenAi;
