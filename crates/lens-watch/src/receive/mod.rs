//! The OTLP receivers (feature `server`): OTLP/gRPC `TraceService/Export` and
//! `LogsService/Export`, OTLP/HTTP `POST /v1/traces` and `POST /v1/logs`, as a Collector
//! receives them. Each decodes a request into a [`Batch`] (of spans, or of log records in
//! [`Batch::logs`]) and sends it on a bounded channel (a full channel holds the sender back, so
//! memory stays bounded); whoever holds the other end assembles. Logs and traces go through
//! the same code: the same limits, the same answers to bad input.
//!
//! Metrics are accepted and dropped (OTLP/gRPC `MetricsService/Export`, OTLP/HTTP
//! `POST /v1/metrics`: an empty success): an SDK that exports its metrics to the same endpoint
//! as its spans, as `OTEL_EXPORTER_OTLP_ENDPOINT` makes it, logs no error for them.
//!
//! Bad input gets an answer, never a crash: a body over [`MAX_BODY`] bytes, or one that
//! decompresses past it, is refused before it is read or decompressed whole (HTTP 413; gRPC
//! `OUT_OF_RANGE` for a message over the limit as sent, `RESOURCE_EXHAUSTED` for one that
//! decompresses past it, both from tonic's `max_decoding_message_size`); bytes that do not
//! decode get HTTP 400 (gRPC `INVALID_ARGUMENT`) with a message; spans (log records) with
//! invalid ids are counted in the reply's `partial_success` and the rest is kept.
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! use lens_watch::receive;
//! let (sender, mut batches) = tokio::sync::mpsc::channel(64);
//! let grpc = tokio::net::TcpListener::bind("127.0.0.1:4317").await?;
//! let http = tokio::net::TcpListener::bind("127.0.0.1:4318").await?;
//! tokio::spawn(receive::grpc::serve(grpc, sender.clone(), std::future::pending()));
//! tokio::spawn(receive::http::serve(http, receive::http::router(sender), std::future::pending()));
//! while let Some(batch) = batches.recv().await {
//!     println!("{} spans, {} rejected", batch.spans.len(), batch.rejected);
//! }
//! # Ok(()) }
//! ```
//!
//! [`Batch`]: crate::decode::Batch
//! [`Batch::logs`]: crate::decode::Batch::logs

mod channel;
mod limits;
mod signal;

pub mod grpc;
pub mod http;

pub use channel::Sender;
pub use limits::MAX_BODY;
