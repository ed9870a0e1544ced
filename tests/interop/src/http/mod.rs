//! Scenario HTTP, both directions, one trace each:
//!
//! * Python first: harness -> Python `POST /start` (FastAPI, `instrument_fastapi`; sets baggage)
//!   -> aiohttp (`instrument_aiohttp_client`) -> Rust `POST /relay` (axum + `ServerLayer`) -> reqwest
//!   + `ClientMiddleware` -> Python `POST /leaf`.
//! * Rust first: harness -> Rust `POST /start` (sets baggage) -> reqwest + `ClientMiddleware` ->
//!   Python `POST /relay` -> aiohttp -> Rust `POST /leaf`.
//!
//! The harness's own requests carry no trace context, so each trace starts in the first service.
//! Every handler answers with what it saw (`Seen`) and what the next hop answered.

mod checks;
mod direction;
mod handlers;
mod otlp_export;
mod python_service;
mod scenario;
mod serve;
mod timeouts;

pub(crate) use direction::Direction;
pub(crate) use otlp_export::{OtlpTargets, RUST_SERVICE, export_rust, export_rust_as, finish_rust};
pub(crate) use python_service::PythonService;
pub(crate) use scenario::run;
pub(crate) use serve::{post_json, serve};
pub(crate) use timeouts::REQUEST_TIMEOUT;
