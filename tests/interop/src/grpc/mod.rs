//! Scenario gRPC, both directions, against `tests/interop/python/grpc_peer.py` (plain `grpcio`
//! with NeMo Lens's `inject_context` / `extract_context` on the call's metadata):
//!
//! * Python to Rust: a Python CLIENT span injects into the metadata and calls, by path with JSON
//!   bytes, a tonic server behind lens-tonic's `ServerLayer`; the Rust handler reports what it
//!   saw.
//! * Rust to Python: a tonic client over `ClientLayer` (or with `ClientInterceptor`) calls a
//!   `grpcio` server whose handler runs `extract_context(dict(context.invocation_metadata()))`
//!   and starts its SERVER span under it.
//!
//! Each call is a unary or a server-streaming call and its own trace, started from a parent
//! context with a known trace id. One call each way is `grpc.health.v1.Health/Check` through
//! the server and client tonic-health generated from protobuf (protobuf bytes written by hand
//! on the Python side).

mod case;
mod handler_checks;
mod python_to_rust;
mod rust_to_python;
mod scenario;
mod server;
mod span_checks;
mod wire;

pub(crate) use case::{BAGGAGE, Direction, TRACESTATE};
pub(crate) use scenario::run;
