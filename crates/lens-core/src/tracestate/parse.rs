//! The one tracestate parser: the key and value grammar, and one pass over each line
//! (docs/propagation-rules.md#tracestate).

use super::error::TraceStateError;
use crate::lexical::{skip_ows, split_once_byte, trim_ows};
use crate::limits::Limits;

/// Longest key: a first character and up to 255 more.
const MAX_KEY_LEN: usize = 256;
/// Longest value.
const MAX_VALUE_LEN: usize = 256;

/// Byte classes for keys and values: bit 0: may start a key (`a-z 0-9`); bit 1: key character
/// (`a-z 0-9 _ - * / @`); bit 2: value character (printable ASCII except `,` and `=`).
const CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        // `i < 256`, so the cast is exact.
        let b = i as u8;
        let start = b.is_ascii_lowercase() || b.is_ascii_digit();
        let key = start || matches!(b, b'_' | b'-' | b'*' | b'/' | b'@');
        let value = b >= 0x20 && b <= 0x7e && b != b',' && b != b'=';
        t[i] = (start as u8) | ((key as u8) << 1) | ((value as u8) << 2);
        i += 1;
    }
    t
};
const KEY_START: u8 = 1;
const KEY_CHAR: u8 = 2;
const VALUE_CHAR: u8 = 4;

#[inline]
fn class(b: u8) -> u8 {
    CLASS[usize::from(b)]
}

#[inline]
pub(super) fn valid_key(key: &[u8]) -> bool {
    match key.split_first() {
        Some((&first, rest)) => {
            class(first) & KEY_START != 0
                && key.len() <= MAX_KEY_LEN
                && rest.iter().all(|&b| class(b) & KEY_CHAR != 0)
        }
        None => false,
    }
}

/// A whole value (docs/propagation-rules.md#tracestate): 1 to 256 printable ASCII characters except `,` and `=`, ending in
/// a non-space. Checked without a branch per byte (so the compiler can vectorize it): the values
/// judged here (opentelemetry's, on inject) are almost always valid.
#[inline]
pub(super) fn valid_value(value: &[u8]) -> bool {
    let chars = value.iter().fold(true, |ok, &b| {
        ok & (b.wrapping_sub(0x20) < 0x5f) & (b != b',') & (b != b'=')
    });
    chars && !value.is_empty() && value.len() <= MAX_VALUE_LEN && value.last() != Some(&b' ')
}

/// Whether opentelemetry's `TraceState` accepts this (already valid) key: its check predates the
/// current grammar and allows one `@` with at most 13 characters after it, the first of them a
/// lowercase letter or digit. Mirrors opentelemetry 0.33's `TraceState::valid_key`.
pub(super) fn otel_accepts_key(key: &str) -> bool {
    let bytes = key.as_bytes();
    match bytes.iter().position(|&b| b == b'@') {
        None => true,
        Some(at) => {
            let vendor = &bytes[at + 1..];
            vendor.len() <= 13
                && !vendor.contains(&b'@')
                && vendor
                    .first()
                    .is_none_or(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        }
    }
}

/// Where [`parse_members`] puts the members it accepts.
pub(super) trait MemberSink<'a> {
    /// Called once per line, before its members.
    fn line(&mut self, _line: &'a str) {}
    /// Whether a member with this key was already accepted.
    fn contains(&self, key: &str) -> bool;
    /// Accepts a valid member whose key is new; `false` when the sink cannot take it.
    fn push(&mut self, key: &'a str, value: &'a str) -> bool;
}

/// The one tracestate parser (docs/propagation-rules.md#tracestate): one pass over each line, validating every member and
/// giving the members to keep to `sink`, in order, repeated keys left out. `Ok(false)` when the
/// sink refused a member (parsing stopped there).
pub(super) fn parse_members<'a, I, S>(
    lines: I,
    limits: &Limits,
    sink: &mut S,
) -> Result<bool, TraceStateError>
where
    I: IntoIterator<Item = &'a str>,
    S: MemberSink<'a>,
{
    let mut total = 0usize;
    let mut count = 0usize;
    for (i, line) in lines.into_iter().enumerate() {
        // Lines are joined by one `,`: every line after the first brings one more byte.
        total += line.len() + usize::from(i > 0);
        if total > limits.tracestate_bytes {
            return Err(TraceStateError::TooLong {
                len: total,
                limit: limits.tracestate_bytes,
            });
        }
        sink.line(line);
        let bytes = line.as_bytes();
        let mut pos = 0;
        while pos < bytes.len() {
            pos = skip_ows(bytes, pos);
            match bytes.get(pos) {
                // An empty member.
                None => break,
                Some(b',') => {
                    pos += 1;
                    continue;
                }
                Some(_) => {}
            }
            count += 1;
            if count > limits.tracestate_members {
                return Err(TraceStateError::TooManyMembers {
                    limit: limits.tracestate_members,
                });
            }
            let member_start = pos;
            let Some((key, value, next)) = scan_member(bytes, pos) else {
                return Err(member_error(line, member_start));
            };
            pos = next;
            let (Some(key), Some(value)) = (line.get(key.0..key.1), line.get(value.0..value.1))
            else {
                return Err(member_error(line, member_start));
            };
            if !sink.contains(key) && !sink.push(key, value) {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// Where the run of bytes of class `bits` that starts at `from` ends (a slice scan: no bounds
/// check per byte).
#[inline]
fn run_end(bytes: &[u8], from: usize, bits: u8) -> usize {
    let rest = bytes.get(from..).unwrap_or_default();
    from + rest
        .iter()
        .position(|&b| class(b) & bits == 0)
        .unwrap_or(rest.len())
}

/// Byte range in a line.
type Span = (usize, usize);

/// Scans one member starting at `pos` (not a space, tab or `,`): the key's and the value's
/// offsets and where the next member starts; `None` when the member is invalid.
#[inline]
fn scan_member(bytes: &[u8], mut pos: usize) -> Option<(Span, Span, usize)> {
    let key_start = pos;
    if class(*bytes.get(pos)?) & KEY_START == 0 {
        return None;
    }
    pos = run_end(bytes, pos + 1, KEY_CHAR);
    if bytes.get(pos) != Some(&b'=') || pos - key_start > MAX_KEY_LEN {
        return None;
    }
    let key_end = pos;
    let value_start = pos + 1;
    pos = run_end(bytes, value_start, VALUE_CHAR);
    // Spaces belong to the value, except those that end the member.
    let mut value_end = pos;
    while value_end > value_start && bytes.get(value_end - 1) == Some(&b' ') {
        value_end -= 1;
    }
    pos = skip_ows(bytes, pos);
    match bytes.get(pos) {
        None | Some(b',') => pos += 1,
        Some(_) => return None,
    }
    if value_end == value_start || value_end - value_start > MAX_VALUE_LEN {
        return None;
    }
    Some(((key_start, key_end), (value_start, value_end), pos))
}

/// Says what is wrong with the invalid member starting at `start` (only called once
/// [`scan_member`] refused it): the member runs to the next `,`.
#[cold]
fn member_error(line: &str, start: usize) -> TraceStateError {
    let rest = line.get(start..).unwrap_or_default();
    let member = trim_ows(split_once_byte(rest, b',').map_or(rest, |(member, _)| member));
    match split_once_byte(member, b'=') {
        None => TraceStateError::MissingEquals {
            member: member.to_owned(),
        },
        Some((key, _)) if !valid_key(key.as_bytes()) => TraceStateError::InvalidKey {
            key: key.to_owned(),
        },
        Some((_, value)) => TraceStateError::InvalidValue {
            value: value.to_owned(),
        },
    }
}
