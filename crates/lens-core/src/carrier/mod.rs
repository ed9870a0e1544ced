//! Carriers: where propagation fields are read from and written to (docs/propagation-rules.md#carriers, docs/propagation-rules.md#json-byte-format, docs/propagation-rules.md#limits).
//!
//! - [`Carrier`]: the JSON carrier of NCCL bytes and Ray-style remote calls, an ordered map from a
//!   key to one or more string lines, encoded exactly as Python's `json.dumps` would encode it.
//! - [`MapCarrier`]: plain string maps (`HashMap`, `BTreeMap`); keys are exact and case-sensitive.
//! - [`HeaderCarrier`]: `http::HeaderMap`; names are case-insensitive and every line of a name is read.
//! - `CarrierField` (feature `serde`): a [`Carrier`] as a field of a message in any serde format,
//!   whose decoding never fails the message.

mod error;
mod header;
pub(crate) mod json;
mod json_carrier;
mod last_wins;
mod lines;
mod map;
#[cfg(feature = "serde")]
mod serde_impl;

pub use error::CarrierError;
pub use header::HeaderCarrier;
pub use json_carrier::Carrier;
pub use map::MapCarrier;
#[cfg(feature = "serde")]
pub use serde_impl::CarrierField;
