//! The vector tests' helpers: lens-testkit's, with lens-nccl's own `serialize_context_from` as
//! the serializer of extracted contexts.
#![allow(dead_code, unused_imports, unreachable_pub)]

use opentelemetry::Context;
use serde_json::Value;

pub use lens_testkit::fixtures::caller_context;
pub use lens_testkit::{active_context, assert_same_context, b64, cases, cases_of, check_context};

/// [`lens_testkit::check_extract`], reserializing with `lens_nccl::serialize_context_from`.
pub fn check_extract(id: &str, cx: &Context, caller: &Context, extract: &Value) {
    lens_testkit::check_extract(id, cx, caller, extract, lens_nccl::serialize_context_from);
}
