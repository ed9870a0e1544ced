//! JSON encoding (Python `json.dumps`, docs/propagation-rules.md#json-byte-format) and strict, bounded decoding (docs/propagation-rules.md#carriers, docs/propagation-rules.md#limits)
//! of the carrier.

mod decode;
mod encode;
mod parser;
mod propagation_lines;
mod scan;

pub(super) use decode::parse_carrier;
pub(crate) use decode::parse_propagation_lines;
pub(super) use encode::write_carrier;
pub(crate) use encode::write_fields;
pub(crate) use propagation_lines::JsonLines;
