//! Test support shared by the lens crates' tests, benches and harnesses: **never a dependency of a
//! library**. Use it as a `[dev-dependencies]` entry (`lens-testkit = { path = "../lens-testkit" }`)
//! or from a `publish = false` test harness such as lens-interop.
//!
//! ```
//! use lens_testkit::{cases_of, check_context, describe, fixtures};
//!
//! // The recorded NeMo Lens vectors (`../shared/vectors/`, required: a missing file panics).
//! for case in cases_of("extract_valid") {
//!     let carrier = lens_core::Carrier::from_json_bytes(&case.input_bytes()).unwrap();
//!     let cx = lens_core::extract_context(&carrier);
//!     // Compares the Context with the vectors' context description (`ctx`).
//!     check_context(&case.id, &cx, &case.lens()["extract"]["context"]);
//! }
//!
//! // The W3C example span context, sampled, with baggage.
//! let cx = fixtures::w3c_context(true, &[], &[("rank", "3")]);
//! assert_eq!(describe(&cx).baggage, [("rank".to_owned(), "3".to_owned())]);
//! ```
//!
//! - [`vectors`]: loading the two vector files as [`Case`]s, base64, docs/propagation-rules.md#differences-from-nemo-lens lists.
//! - [`describe()`](describe::describe): a Context as a [`ContextDescription`], and
//!   [`check_context`] / [`check_extract`] against the vectors' descriptions.
//! - [`active_context`]: the Context a case's `input.active` describes (with real SDK spans).
//! - [`baggage_keys`]: the checks of the `lens.baggage.keys` knob, for every adapter.
//! - [`fixtures`]: the span contexts and baggage the tests and benches use again and again.
//! - [`metrics`]: a meter provider with the SDK's in-memory metric exporter, and the data points
//!   it collected, per instrument (the metrics part of every adapter's suite).
//! - [`nats`]: a real `nats-server` on a free port for a test, stopped after it (skipped without
//!   the binary unless `LENS_NATS=require`).
//! - [`order`]: the balanced order in which A/B comparisons run their arms.
//! - [`rabbitmq`]: a real RabbitMQ node on free ports for a test, stopped after it (skipped
//!   without the package unless `LENS_RABBITMQ=require`).
//! - [`suite`]: the behaviour suite every adapter crate runs (one list of scenarios and checks).
//!
//! lens-core's own integration tests use it too (a dev-dependency cycle: Cargo links one copy of
//! lens-core into an integration test, so the types agree). lens-core's unit tests in `src/`
//! cannot: they are a second copy of lens-core.
#![forbid(unsafe_code)]
// Test support: every check is an assertion, and a failed one must fail the calling test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod active;
pub mod baggage_keys;
pub mod describe;
pub mod fixtures;
pub mod metrics;
pub mod nats;
pub mod order;
pub mod rabbitmq;
pub mod recorder;
pub mod suite;
pub mod vectors;

pub use active::active_context;
pub use describe::{
    ContextDescription, SpanDescription, assert_reserialized, assert_same_context, check_context,
    check_extract, describe,
};
pub use vectors::{Case, b64, cases, cases_of, pairs};
