//! Receive OpenTelemetry traces over OTLP from every service, Python and Rust, assemble them by
//! trace with bounded memory, and draw them as waterfalls: the library behind `lens watch` and
//! `lens check`.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use lens_watch::{assemble::{Assembler, Config}, decode, render};
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
//! // Assemble: a trace is complete once quiet for the window. The clock is the caller's.
//! let mut assembler = Assembler::new(Config::default());
//! let t0 = Instant::now();
//! assembler.insert(batch.spans, t0);
//! assert!(assembler.poll(t0 + Duration::from_secs(1)).is_empty());
//! let done = assembler.poll(t0 + Duration::from_secs(2));
//! assert_eq!(done.len(), 1);
//!
//! // Render it as the terminal waterfall.
//! let spans = &assembler.trace(&done[0]).unwrap().spans;
//! let layout = render::layout(done[0], spans.iter().collect());
//! let mut text = String::new();
//! render::text::render(&layout, &render::index(spans), render::HopNames::default(), false, &mut text);
//! assert!(text.contains("GET /") && text.contains("gateway") && text.contains("SERVER"));
//! # Ok::<(), lens_watch::decode::DecodeError>(())
//! ```
//!
//! The data flows one way, a module a step: [`decode`] (OTLP/protobuf and OTLP/JSON to the
//! owned [`model`]) → [`assemble`] (by trace, quiet window, bounded) → [`diagnose`] (the
//! propagation doctor's findings on each completed trace) → [`render`] (text, JSON, HTML).
//! [`encode`] writes spans back as OTLP (`--save`). With the `server` feature (on by default),
//! [`receive`] runs the OTLP/gRPC and OTLP/HTTP receivers.
#![forbid(unsafe_code)]

pub mod assemble;
pub mod decode;
pub mod diagnose;
pub mod encode;
pub mod model;
#[cfg(feature = "server")]
pub mod receive;
pub mod render;

#[cfg(test)]
pub(crate) mod testing;
