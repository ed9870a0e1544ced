//! lens-reqwest: W3C Trace Context and Baggage on outgoing reqwest calls, with one
//! OpenTelemetry CLIENT span per attempt.
//!
//! ```
//! use lens_reqwest::ClientMiddleware;
//!
//! # async fn run() -> Result<(), reqwest_middleware::Error> {
//! let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
//!     // after any retry middleware: one span and one fresh traceparent per attempt
//!     .with(ClientMiddleware::new())
//!     .build();
//! // The CLIENT span is a child of `Context::current()` (or of an `opentelemetry::Context`
//! // given with `.with_extension(cx)`).
//! let response = client.get("http://localhost:8080/").send().await?;
//! # let _ = response; Ok(()) }
//! ```
//!
//! * [`ClientMiddleware`]: a `reqwest_middleware::Middleware`. Per attempt it starts a CLIENT span
//!   named `{METHOD}` with `http.request.method`, `url.full` (user info and credential-like query
//!   values redacted), `server.address`, `server.port`, `http.response.status_code`,
//!   `error.type` and, on retries, `http.request.resend_count`; it injects that span's context
//!   with lens-core, replacing any `traceparent` already there, and an
//!   [`OutboundPolicy`](lens_core::policy::OutboundPolicy) decides per host whether trace
//!   context and, separately, baggage go out.
//!
//!   The span lifecycle (start, classification: 4xx, 5xx and transport failures are errors;
//!   end) is lens-span's, shared with lens-axum and lens-tonic, and so are the knobs and their
//!   names: `with_tracer`, `with_propagator`, `with_global_propagator`,
//!   `with_outbound_policy`, `with_filter` (span or not, inject or not), `with_span_name`,
//!   `with_random_flag_on_new_traces`, `with_request_attributes`, `with_response_attributes`,
//!   `with_classifier` (which statuses are errors: by default 4xx and 5xx, [`HttpClientErrors`]),
//!   `with_on_failure`, `with_baggage_keys` (the keys, never the values, of the baggage sent,
//!   as `lens.baggage.keys`; off by default).
//! * [`RequestBuilderExt`]: for plain reqwest, `.inject_context()` on a `RequestBuilder`.
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod ext;
mod middleware;
mod url;

pub use ext::{RequestBuilderExt, inject_into_request};
/// What the knobs take: a filter's decision, a classifier and its outcome, what the failure hook
/// sees, and the default classifier (4xx and 5xx are errors).
pub use lens_span::FilterDecision;
pub use lens_span::classify::{Classify, Failure, HttpClientErrors, Outcome};
/// What a call says it is with the GenAI opt-in (`with_gen_ai`, or per call: docs/streaming.md).
pub use lens_span::genai::GenAi;
pub use middleware::ClientMiddleware;
pub use url::redacted_url;
