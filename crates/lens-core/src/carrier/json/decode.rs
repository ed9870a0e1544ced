//! Strict, bounded decoding of a JSON carrier (docs/propagation-rules.md#carriers, docs/propagation-rules.md#limits):
//! the entry points and what they return.

use super::parser::Parser;
use super::propagation_lines::PropagationLines;
use crate::carrier::error::CarrierError;
use crate::carrier::lines::Lines;
use crate::limits::Limits;

/// Parses a JSON carrier: see [`crate::carrier::Carrier::from_json_bytes_with_limits`].
pub(crate) fn parse_carrier(
    bytes: &[u8],
    limits: &Limits,
) -> Result<Vec<(String, Lines)>, CarrierError> {
    parse_top(bytes, limits, Parser::top_object)
}

/// The propagation headers of a JSON carrier, read without building a [`crate::carrier::Carrier`]: the
/// lines of `traceparent`, `tracestate` and `baggage`, borrowed from `bytes` unless a JSON escape
/// forces a copy. The same input is accepted and rejected, and each of these keys has the same
/// lines, as [`crate::carrier::Carrier::from_json_bytes_with_limits`] gives.
pub(crate) fn parse_propagation_lines<'a>(
    bytes: &'a [u8],
    limits: &Limits,
) -> Result<PropagationLines<'a>, CarrierError> {
    parse_top(bytes, limits, Parser::top_object_propagation)
}

/// Validates the whole input and parses its top-level object with `object`.
fn parse_top<'a, T>(
    bytes: &'a [u8],
    limits: &Limits,
    object: impl FnOnce(&mut Parser<'a>) -> Result<T, CarrierError>,
) -> Result<T, CarrierError> {
    if bytes.len() > limits.carrier_bytes {
        return Err(CarrierError::TooLarge {
            len: bytes.len(),
            limit: limits.carrier_bytes,
        });
    }
    // Python's deserialize_context decodes strictly as UTF-8 before `json.loads`: invalid UTF-8
    // (overlong forms, encoded surrogates) is rejected first, and a byte-order mark is not JSON.
    let text = std::str::from_utf8(bytes).map_err(|e| CarrierError::NotUtf8 {
        offset: e.valid_up_to(),
    })?;
    let mut p = Parser {
        text,
        b: text.as_bytes(),
        pos: 0,
        depth_limit: limits.carrier_depth,
    };
    p.skip_ws();
    let entries = if p.peek() == Some(b'{') {
        Some(object(&mut p)?)
    } else {
        if p.b.starts_with("\u{feff}".as_bytes()) {
            return Err(p.err("byte-order mark (not JSON)"));
        }
        p.skip_value(0)?;
        None
    };
    p.skip_ws();
    if p.pos != p.b.len() {
        return Err(p.err("trailing characters after the JSON value"));
    }
    match entries {
        Some(entries) => Ok(entries),
        None => Err(CarrierError::NotAnObject),
    }
}
