//! Receive OpenTelemetry traces over OTLP from every service, Python and Rust, assemble them by
//! trace with bounded memory, draw them as waterfalls, and diagnose where trace context was
//! lost between services (the propagation doctor): the library behind `lens watch`, `lens
//! check` and `lens demo`.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use lens_watch::decode;
//! use lens_watch::render::Output;
//! use lens_watch::session::{Session, SessionConfig};
//!
//! // One OTLP/JSON request (as `lens watch --save` or the Collector's file exporter write it).
//! let line = br#"{"resourceSpans":[{"resource":{"attributes":[
//!     {"key":"service.name","value":{"stringValue":"gateway"}}]},
//!   "scopeSpans":[{"scope":{"name":"demo"},"spans":[
//!     {"traceId":"4BF92F3577B34DA6A3CE929D0E0E4736","spanId":"00f067aa0ba902b7",
//!      "name":"GET /","kind":2,"startTimeUnixNano":"1700000000000000000",
//!      "endTimeUnixNano":1700000000001000000}]}]}]}"#;
//! let batch = decode::decode_json(line)?;
//! assert_eq!((batch.spans.len(), batch.rejected), (1, 0));
//!
//! // A session: a trace completes once quiet for the window (the clock is the caller's), with
//! // the doctor's findings on it.
//! let mut session = Session::new(SessionConfig::default());
//! let t0 = Instant::now();
//! session.ingest(batch, t0);
//! assert!(session.poll(t0 + Duration::from_secs(1)).is_empty());
//! let done = session.poll(t0 + Duration::from_secs(2));
//! assert_eq!(done.len(), 1);
//! assert!(done[0].findings.is_empty());
//!
//! // Render it as the terminal waterfall.
//! let mut text = String::new();
//! Output::Text { colour: false }.trace(&session.view_of(&done[0]).unwrap(), &mut text);
//! assert!(text.contains("GET /") && text.contains("gateway") && text.contains("SERVER"));
//! # Ok::<(), lens_watch::decode::DecodeError>(())
//! ```
//!
//! The data flows one way, a module a step: [`decode`] (OTLP/protobuf and OTLP/JSON to the
//! owned [`model`]) → [`assemble`] (by trace, quiet window, bounded) → [`diagnose`] (the
//! propagation doctor's findings on each completed trace) → [`render`] (text, JSON, HTML).
//! [`session`] joins them: batches in, completed traces with their findings out, a view of
//! each trace for the renderers, the list for a page, the status line. [`encode`] writes spans
//! back as OTLP (`--save`). With the `server` feature (on by default), [`receive`] runs the
//! OTLP/gRPC and OTLP/HTTP receivers.
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod assemble;
pub mod decode;
pub mod diagnose;
pub mod encode;
pub mod model;
pub mod probe;
#[cfg(feature = "server")]
#[cfg_attr(docsrs, doc(cfg(feature = "server")))]
pub mod receive;
pub mod render;
pub mod session;
pub mod stream;

#[cfg(test)]
pub(crate) mod testing;
