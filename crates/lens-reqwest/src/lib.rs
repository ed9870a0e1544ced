//! lens-reqwest: W3C Trace Context and Baggage on outgoing reqwest calls, with one
//! OpenTelemetry CLIENT span per attempt.
//!
//! ```
//! use lens_reqwest::LensMiddleware;
//!
//! # async fn run() -> Result<(), reqwest_middleware::Error> {
//! let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
//!     // after any retry middleware: one span and one fresh traceparent per attempt
//!     .with(LensMiddleware::new())
//!     .build();
//! // The CLIENT span is a child of `Context::current()` (or of an `opentelemetry::Context`
//! // given with `.with_extension(cx)`).
//! let response = client.get("http://localhost:8080/").send().await?;
//! # let _ = response; Ok(()) }
//! ```
//!
//! * [`LensMiddleware`]: a `reqwest_middleware::Middleware`. Per attempt it starts a CLIENT span
//!   named `{METHOD}` with `http.request.method`, `url.full` (user info and credential-like query
//!   values redacted), `server.address`, `server.port`, `http.response.status_code`,
//!   `error.type` and, on retries, `http.request.resend_count`; it injects that span's context
//!   with lens-core, replacing any `traceparent` already there, and an
//!   [`OutboundPolicy`](lens_core::policy::OutboundPolicy) decides per host whether trace
//!   context and, separately, baggage go out.
//! * [`RequestBuilderExt`]: for plain reqwest, `.inject_context()` on a `RequestBuilder`.
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod ext;
mod middleware;
mod url;

pub use ext::{RequestBuilderExt, inject_into_request};
pub use middleware::LensMiddleware;
pub use url::redacted_url;
