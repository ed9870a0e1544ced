//! JSON encoding (Python `json.dumps`, docs/propagation-rules.md#json-byte-format) and strict, bounded decoding (docs/propagation-rules.md#carriers, docs/propagation-rules.md#limits)
//! of the carrier.

mod decode;
mod encode;
mod parser;
mod scan;

pub(in crate::carrier) use decode::parse_carrier;
pub(crate) use decode::{JsonLines, parse_propagation_lines};
pub(in crate::carrier) use encode::write_carrier;
pub(crate) use encode::write_fields;
