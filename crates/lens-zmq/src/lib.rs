//! lens-zmq: W3C trace context across ZeroMQ, the hop between an LLM server's front end and its
//! engine (vLLM's API server and EngineCore, SGLang's gateway), wire-compatible with NVIDIA
//! NeMo Lens on the Python side. ZeroMQ has no headers: the context travels as a frame of its
//! own or as a field inside the payload, and each message gets PRODUCER `send` and CONSUMER
//! `process` spans per the OpenTelemetry messaging conventions (1.44, status Development).
//!
//! ```
//! use lens_core::carrier::CarrierField;
//! use lens_zmq::{Consumer, Producer};
//!
//! // The field: a struct encoded as a positional array, as msgspec's `array_like` structs
//! // (vLLM's EngineCoreRequest) are, with the context in `trace_headers`.
//! #[derive(serde::Serialize, serde::Deserialize)]
//! struct EngineCoreRequest {
//!     request_id: String,
//!     prompt_token_ids: Vec<u32>,
//!     #[serde(default)]
//!     trace_headers: CarrierField,
//! }
//!
//! // Built once per socket (they hold the tracer, the policies, the hooks).
//! let (producer, consumer) = (Producer::new(), Consumer::new());
//! let sending = producer.start_send("engine.requests", None);
//! let request = EngineCoreRequest {
//!     request_id: "r1".into(),
//!     prompt_token_ids: vec![1, 2, 3],
//!     trace_headers: sending.carrier_field(),
//! };
//! let bytes = rmp_serde::to_vec(&request)?; // [ "r1", [1, 2, 3], {"traceparent": ...} ]
//! // socket.send(bytes, 0)?;
//! sending.end();
//!
//! // The engine: decoding never fails on what `trace_headers` holds.
//! let request: EngineCoreRequest = rmp_serde::from_slice(&bytes)?;
//! let processing = consumer.process_field("engine.requests", &request.trace_headers, Some(bytes.len()));
//! processing.in_scope(|| { /* schedule request.request_id */ });
//!
//! // The frame: the context as the last frame of a multipart message.
//! let mut frames = vec![b"payload".to_vec()];
//! producer.send_frames("engine.outputs", &mut frames).end();
//! let processing = consumer.process_frames("engine.outputs", &mut frames);
//! assert_eq!(frames, [b"payload".to_vec()]);
//! processing.end();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! - The context frame ([`frame`]): the last frame of a multipart message,
//!   [`frame::CONTEXT_FRAME_MARKER`] then NeMo Lens's `serialize_context()` bytes (the bytes
//!   lens-nccl writes). A message without one is delivered as sent.
//! - The carrier field: lens-core's [`CarrierField`](lens_core::carrier::CarrierField) in any
//!   serde format (msgpack with `rmp-serde`, JSON); the Python side fills it with NeMo Lens's
//!   `inject_context(d)` and reads it with `extract_context(d)`.
//! - Spans through lens-span's messaging lifecycle: [`Producer`] (`send`, PRODUCER) and
//!   [`Consumer`] (`process`, CONSUMER; parent or link per consumer, [`ConsumerParent`]; the
//!   inbound policy per destination, [`DestinationPolicy`]), with the knobs of every lens
//!   adapter. `messaging.system` is [`SYSTEM`] (`zeromq`). DEALER/ROUTER request-reply is
//!   messaging, not RPC: docs/zeromq.md says why.
//! - Bad input never costs a message: a context frame or field that is not JSON, not a map,
//!   not UTF-8 or over the limits is delivered all the same; its `process` span starts a new
//!   trace and records why in `lens.trace.new_root`.
//! - Feature `zmq` (off by default): `Producer::send_multipart` and
//!   `Consumer::recv_multipart` on a `zmq::Socket` (libzmq 4.3, built from source by
//!   `zmq-sys`).
//!
//! docs/zeromq.md has the whole picture.
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod adapter;
mod attributes;
mod consumer;
pub mod frame;
mod producer;
#[cfg(feature = "zmq")]
mod socket;
mod span_end;

pub use adapter::MessageInfo;
pub use attributes::SYSTEM;
pub use consumer::{Consumer, Processing};
pub use lens_span::FilterDecision;
pub use lens_span::classify::{Classify, Failure, Outcome};
pub use lens_span::messaging::{ConsumerParent, DestinationPolicy, OperationStatus, OperationType};
pub use producer::{Producer, Sending};
#[cfg(feature = "zmq")]
#[cfg_attr(docsrs, doc(cfg(feature = "zmq")))]
pub use socket::Received;

/// docs/zeromq.md's Rust examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/zeromq.md")]
mod zeromq_page {}
