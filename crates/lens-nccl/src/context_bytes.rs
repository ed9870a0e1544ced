//! A Context as NCCL bytes and back, byte for byte as NeMo Lens writes and reads them
//! (`serialize_context`, `deserialize_context`, `extract_nccl_context`).

use lens_core::{Carrier, inject_context_from};
use opentelemetry::Context;

/// The current Context as NCCL bytes (NeMo Lens `serialize_context()`): exactly what Python's
/// `json.dumps(carrier)` gives for the same context (docs/propagation-rules.md#json-byte-format).
///
/// ```
/// let _guard = opentelemetry::Context::new().attach();
/// assert_eq!(lens_nccl::serialize_context(), b"{}");
/// ```
pub fn serialize_context() -> Vec<u8> {
    Context::map_current(serialize_context_from)
}

/// `cx` as NCCL bytes: lens-core's propagator injects into a [`Carrier`], which is written as
/// Python's `json.dumps` writes it (docs/propagation-rules.md#json-byte-format).
pub fn serialize_context_from(cx: &Context) -> Vec<u8> {
    let mut out = Vec::new();
    serialize_context_into(cx, &mut out);
    out
}

/// Appends [`serialize_context_from`]'s bytes to `out` (reuse one buffer across calls): the
/// process-wide propagator writes them straight, without building a [`Carrier`].
pub fn serialize_context_into(cx: &Context, out: &mut Vec<u8>) {
    lens_core::propagator().inject_json(cx, out);
}

/// The carrier lens-core's propagator fills for `cx`: `traceparent`, `tracestate` and
/// `baggage`, in that order, each present only when there is something to send.
pub fn context_carrier(cx: &Context) -> Carrier {
    let mut carrier = Carrier::with_capacity(3);
    inject_context_from(cx, &mut carrier);
    carrier
}

/// The carrier in NCCL bytes (NeMo Lens `deserialize_context`); `None` when the bytes are
/// rejected (docs/propagation-rules.md#carriers: not UTF-8, not strict JSON, not a JSON object, over 64 KiB, nested
/// deeper than 32 levels).
///
/// ```
/// let carrier = lens_nccl::deserialize_context(br#"{"baggage": "k=v"}"#).unwrap();
/// assert_eq!(carrier.get("baggage"), Some("k=v"));
/// assert!(lens_nccl::deserialize_context(b"null").is_none());
/// ```
pub fn deserialize_context(bytes: &[u8]) -> Option<Carrier> {
    Carrier::from_json_bytes(bytes).ok()
}

/// The Context in NCCL bytes (NeMo Lens `extract_nccl_context`).
///
/// Bytes that hold a carrier are extracted from an empty Context (docs/propagation-rules.md#extract-and-inject): `{}` gives an
/// empty Context. Bytes that are rejected (see [`deserialize_context`]) give the caller's current
/// Context, as Python does. The bytes are decoded within the [`Limits`](lens_core::Limits) of the
/// process-wide propagator ([`lens_core::propagator`]; the defaults unless
/// [`lens_core::install_propagator`] set others), and read in place: no [`Carrier`] is built.
pub fn extract_nccl_context(bytes: &[u8]) -> Context {
    lens_core::extract_json_context(bytes)
}
