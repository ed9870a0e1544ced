//! lens-nccl: OpenTelemetry trace context on NCCL transfers between ranks.
//!
//! In pipeline-parallel training, activations move between ranks over NCCL, not HTTP. NVIDIA NeMo
//! Lens serialises the trace context to bytes that travel beside the tensor; this crate produces
//! and reads exactly those bytes, and (feature `nccl`) moves them over NCCL itself.
//!
//! ```
//! use lens_core::LensContextExt;
//! use lens_nccl::{extract_nccl_context, serialize_context_from, FrameCodec};
//! use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
//! use opentelemetry::Context;
//!
//! let sc = SpanContext::new(
//!     TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
//!     SpanId::from_hex("00f067aa0ba902b7").unwrap(),
//!     TraceFlags::SAMPLED,
//!     false,
//!     TraceState::NONE,
//! );
//! let cx = Context::new().with_remote_span_context(sc).with_baggage_entry("rank", "3").unwrap();
//!
//! // The bytes NeMo Lens (Python) sends and reads: `json.dumps` of the carrier.
//! let bytes = serialize_context_from(&cx);
//! assert_eq!(
//!     bytes,
//!     br#"{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "baggage": "rank=3"}"#
//! );
//! let received = extract_nccl_context(&bytes);
//! assert_eq!(received.span().span_context().trace_id(), cx.span().span_context().trace_id());
//! assert_eq!(received.baggage_value("rank").as_deref(), Some("3"));
//!
//! // The fixed-size frame that travels beside a tensor (4 KiB by default).
//! let codec = FrameCodec::default();
//! let mut frame = Vec::new();
//! codec.encode_into(&cx, &mut frame)?;
//! assert_eq!(frame.len(), 4096);
//! assert_eq!(codec.extract(&frame).baggage_value("rank").as_deref(), Some("3"));
//! # Ok::<(), lens_nccl::FrameError>(())
//! ```
//!
//! # Bytes (no GPU needed)
//!
//! - [`serialize_context`] / [`serialize_context_from`]: the Context as the JSON bytes Python's
//!   `json.dumps(carrier)` produces (docs/propagation-rules.md#json-byte-format): keys in the order `traceparent`, `tracestate`,
//!   `baggage`, separators `", "` and `": "`, non-ASCII as `\uXXXX` escapes, `{}` when empty.
//! - [`deserialize_context`]: the bytes as a [`Carrier`], `None` when they are rejected
//!   (docs/propagation-rules.md#carriers: not UTF-8, not strict JSON, not an object, over 64 KiB, nested over 32 levels).
//! - [`extract_nccl_context`]: the Context in the bytes; the caller's current Context when the
//!   bytes are rejected, as Python does (docs/propagation-rules.md#extract-and-inject).
//!
//! # Frames
//!
//! A [`FrameCodec`] puts the serialized bytes in a fixed-size frame (a 16-byte header: magic,
//! version, length, checksum; then the bytes; then zeros), so that the receiver can post a
//! receive of known size. When the context does not fit, baggage members are dropped from the
//! end first, then the tracestate, never the traceparent; if even that does not fit, encoding
//! fails with [`FrameError::TooLarge`]. Decoding a truncated, corrupt or foreign frame gives the
//! caller's current Context, never a panic.
//!
//! # NCCL (feature `nccl`, off by default)
//!
//! The `nccl` module (feature `nccl`) sends the frame in the same NCCL group call as the payload.
//! It is built on cudarc 0.19 with dynamic loading, so the crate compiles without CUDA; at run
//! time every entry point returns an `NcclError::Unavailable` error with the reason when libcuda,
//! libnccl or a GPU is missing. Feature choice:
//!
//! - `nccl-02028`: the NCCL 2.28 ABI. PyTorch 2.11 depends on the `nvidia-nccl-cu13` wheel,
//!   NCCL 2.28, which is what a Rust rank beside a PyTorch rank finds on the machine. cudarc's
//!   newer ABI features (2.29, 2.30) bind symbols that NCCL 2.28 lacks and structure layouts that
//!   differ, and cudarc panics when a bound symbol is missing at its first call.
//! - `cuda-13000`: the CUDA 13.0 driver API bindings, the CUDA major version of that wheel; the
//!   oldest 13.x bindings, so any driver that runs CUDA 13 serves them.
//!
//! Finding NCCL: the pip wheel ships only `libnccl.so.2`, a name cudarc does not try (it tries
//! `libnccl.so` and `libnccl.so.<cuda major>`, among others). Put a `libnccl.so` symlink to the
//! wheel's library in a folder on `LD_LIBRARY_PATH` before starting the process:
//!
//! ```sh
//! NCCL_LIB=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(nvidia.nccl.__path__[0], "lib"))')
//! mkdir -p /tmp/lens-nccl-lib && ln -sf "$NCCL_LIB/libnccl.so.2" /tmp/lens-nccl-lib/libnccl.so
//! export LD_LIBRARY_PATH=/tmp/lens-nccl-lib:$LD_LIBRARY_PATH
//! ```
//!
//! `cargo xtask gpu-test` and `scripts/nccl-gpu-test.sh` do this themselves.
#![deny(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod context_bytes;
mod error;
mod frame;
#[cfg(feature = "nccl")]
#[cfg_attr(docsrs, doc(cfg(feature = "nccl")))]
pub mod nccl;

pub use context_bytes::{
    context_carrier, deserialize_context, extract_nccl_context, serialize_context,
    serialize_context_from, serialize_context_into,
};
pub use error::{FrameDecodeError, FrameError};
pub use frame::{
    DEFAULT_FRAME_CAPACITY, FRAME_HEADER_LEN, FRAME_MAGIC, FRAME_VERSION, FrameCodec, FrameEncoding,
};
pub use lens_core::Carrier;
