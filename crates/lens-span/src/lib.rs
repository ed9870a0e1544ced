//! lens-span: the span lifecycle that every lens adapter (lens-axum, lens-reqwest, lens-tonic)
//! shares, written once, in the spirit of tower-http's `trace` module: each adapter keeps only
//! its framework's glue.
//!
//! ```
//! use lens_core::policy::InboundPolicy;
//! use lens_span::classify::HttpServerErrors;
//! use lens_span::{Adapter, SpanOptions, httpconv};
//! use opentelemetry::trace::{TraceContextExt, TracerProvider};
//! use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
//!
//! // What the hooks of this (made-up) adapter see.
//! struct Demo;
//! impl Adapter for Demo {
//!     type Request<'a> = http::Request<()>;
//!     type Response<'a> = http::StatusCode;
//! }
//!
//! let exporter = InMemorySpanExporter::default();
//! let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
//! let options: SpanOptions<Demo, InboundPolicy> =
//!     SpanOptions::new(provider.tracer("demo"), InboundPolicy::trust_all());
//!
//! let request = http::Request::builder()
//!     .header("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
//!     .body(())
//!     .unwrap();
//! // Start: the policy decides, the propagator extracts, the span starts under the parent.
//! let inbound = options.extract_inbound(request.headers(), None);
//! let mut attributes = Vec::new();
//! httpconv::push_method(&mut attributes, request.method());
//! let name = options.span_name(&request, || "GET".into());
//! let span = options.start_server(name, attributes, inbound);
//! // The service's work, with the span's Context current.
//! let traced = span.in_scope(|| opentelemetry::Context::current().has_active_span());
//! assert!(traced);
//! // Classify and end.
//! httpconv::record_status(&span, http::StatusCode::BAD_GATEWAY, &HttpServerErrors);
//! span.end();
//!
//! let spans = exporter.get_finished_spans().unwrap();
//! assert_eq!(spans[0].parent_span_id.to_string(), "00f067aa0ba902b7");
//! assert!(spans[0].attributes.iter().any(|kv| kv.key.as_str() == "error.type" && kv.value.as_str() == "502"));
//! ```
//!
//! - [`SpanOptions`]: the knobs (tracer, propagator, policy, random flag on new traces, filter,
//!   span name, request and response attribute hooks), set through the `with_*` methods
//!   [`span_knobs!`] writes into each adapter, under the same names everywhere.
//! - [`Propagation`]: lens's propagator or the globally installed one; extraction through the
//!   inbound policy, injection that replaces a stale `traceparent`.
//! - [`LiveSpan`]: a started span, ended exactly once (end of body, drop, panic through
//!   [`poll_in`]); [`TracedBody`] ends it at the end of a response body.
//! - [`classify`]: what is an error, per kind of span (HTTP server 5xx, HTTP client 4xx/5xx,
//!   gRPC server codes per the conventions, gRPC client any non-OK).
//! - [`rpc`]: the gRPC attributes and the `OTEL_SEMCONV_STABILITY_OPT_IN` choice; [`httpconv`]:
//!   the HTTP ones; [`redact`]: credentials kept out of `url.full` / `url.query`; [`scope`]: the
//!   instrumentation scope.
#![forbid(unsafe_code)]

pub mod body;
pub mod classify;
pub mod httpconv;
mod knobs;
pub mod lifecycle;
pub mod propagation;
pub mod redact;
pub mod rpc;
pub mod scope;

pub use body::{AtLastFrame, BodyEnd, TracedBody};
pub use lifecycle::{Adapter, FilterDecision, InSpan, LiveSpan, SpanOptions, poll_in};
pub use propagation::{HeaderInjector, Propagation};

/// What [`span_knobs!`] needs to name from the crates this one depends on.
#[doc(hidden)]
pub mod __private {
    pub use lens_core::W3cPropagator;
    pub use opentelemetry::KeyValue;
    pub use opentelemetry::trace::{SpanRef, Tracer};
}
