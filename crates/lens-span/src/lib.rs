//! lens-span: the span lifecycle that every lens adapter (lens-axum, lens-reqwest, lens-tonic)
//! shares, written once, in the spirit of tower-http's `trace` module: each adapter keeps only
//! its framework's glue. Its public items are what an adapter author needs; users of an adapter
//! name only what the adapter re-exports (`FilterDecision`, the classifier types).
//!
//! ```
//! use lens_core::policy::InboundPolicy;
//! use lens_span::classify::{Classify, HttpServerErrors, Outcome};
//! use lens_span::{Adapter, SpanOptions, httpconv};
//! use opentelemetry::trace::{TraceContextExt, TracerProvider};
//! use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
//!
//! // What the hooks of this (made-up) adapter see.
//! struct Demo;
//! impl Adapter for Demo {
//!     type Request<'a> = http::Request<()>;
//!     type Response<'a> = http::StatusCode;
//!     type Status = http::StatusCode;
//! }
//!
//! let exporter = InMemorySpanExporter::default();
//! let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
//! let mut options: SpanOptions<Demo, InboundPolicy> =
//!     SpanOptions::new(provider.tracer("demo"), InboundPolicy::trust_all());
//! // A user's knob: 404 is an error too.
//! options.set_classifier(|status: &http::StatusCode| match status.as_u16() {
//!     404 => Outcome::failure("404", ""),
//!     _ => HttpServerErrors.classify(status),
//! });
//!
//! let request = http::Request::builder()
//!     .header("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
//!     .body(())
//!     .unwrap();
//! // Start: the filter, the policy and the propagator decide, the span starts under the parent
//! // with the adapter's attributes and name (the hooks' when set).
//! assert!(options.filter_decision(&request).span);
//! let inbound = options.extract_inbound(request.headers(), None);
//! let mut attributes = Vec::new();
//! httpconv::push_method(&mut attributes, request.method());
//! let span = options.start_server(&request, || "GET".into(), attributes, inbound);
//! // The service's work, with the span's Context current.
//! let traced = span.in_scope(|| opentelemetry::Context::current().has_active_span());
//! assert!(traced);
//! // Classify (the user's classifier, else the adapter's default) and end.
//! let status = http::StatusCode::NOT_FOUND;
//! let mut span = span;
//! span.set_attribute(httpconv::status_code(status));
//! options.responder().respond(&mut span, &status, &status, &HttpServerErrors);
//! span.end();
//!
//! let spans = exporter.get_finished_spans().unwrap();
//! assert_eq!(spans[0].parent_span_id.to_string(), "00f067aa0ba902b7");
//! assert!(spans[0].attributes.iter().any(|kv| kv.key.as_str() == "error.type" && kv.value.as_str() == "404"));
//! ```
//!
//! - [`SpanOptions`]: the knobs (tracer, propagator, policy, random flag on new traces, filter,
//!   span name, request and response attribute hooks, classifier, failure hook), set through
//!   the `with_*` methods [`span_knobs!`] writes into each adapter, under the same names
//!   everywhere; read only by the lifecycle.
//! - [`Propagation`]: lens's propagator or the globally installed one; extraction through the
//!   inbound policy, injection that replaces a stale `traceparent`.
//! - [`LiveSpan`]: a started span, ended exactly once (end of body, drop, panic through
//!   [`poll_in`]); [`TracedBody`] ends it at the end of a response body, as its [`BodyEnd`]
//!   says; [`CountedBody`] counts a body's bytes for the body-size [`metrics`];
//!   [`Responder`] records what a response means (classifier, response hook);
//!   [`in_span`] runs a future inside a span of its own.
//! - [`stream`]: the marks of a streamed response (when its head and its first chunk passed),
//!   recorded by [`TracedBody`]; [`genai`]: the GenAI opt-in (attributes and metrics from
//!   the same marks).
//! - [`classify`]: what is an error, per kind of span (HTTP server 5xx, HTTP client 4xx/5xx,
//!   gRPC server codes per the conventions, gRPC client any non-OK): the defaults.
//! - [`rpc`]: the gRPC attributes and the `OTEL_SEMCONV_STABILITY_OPT_IN` choice; [`httpconv`]:
//!   the HTTP ones (and the host/port rule of every adapter); [`redact`]: credentials kept out
//!   of `url.full` / `url.query`; [`scope`]: the instrumentation scope; [`new_root`]: why a
//!   SERVER span starts a new trace (the `lens.trace.new_root` attribute); [`messaging`]: the
//!   messaging lifecycle (send, receive, process, settle) for message-queue adapters;
//!   [`baggage_keys`]: the keys (never the values) of the baggage a call carried, the opt-in
//!   `lens.baggage.keys` attribute.
#![forbid(unsafe_code)]

pub mod baggage_keys;
mod body;
pub mod classify;
mod destination_rules;
pub mod genai;
pub mod httpconv;
mod knobs;
mod lifecycle;
pub mod messaging;
pub mod metrics;
pub mod new_root;
mod propagation;
pub mod redact;
mod rejected_carrier;
pub mod rpc;
pub mod scope;
pub mod stream;

pub use body::{AtLastFrame, BodyEnd, CountedBody, TracedBody};
pub use lifecycle::{
    Adapter, FilterDecision, InSpan, LiveSpan, Responder, SpanOptions, in_span, poll_in,
};
pub use propagation::{HeaderInjector, MessageCarrier, Propagation};

/// What [`span_knobs!`] needs to name from the crates this one depends on.
#[doc(hidden)]
pub mod __private;
