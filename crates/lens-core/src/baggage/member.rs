//! The grammar of one baggage member (docs/propagation-rules.md#baggage): the single-pass scanner every baggage parse
//! goes through, the properties rule, and the one writer of a member as lens sends it.

use super::issue::BaggageIssueReason;
use super::percent::{canonical_escape, encode_value};
use crate::lexical::{is_ows, is_tchar, is_token, skip_ows, split_byte, split_once_byte, trim_ows};

/// Result of the pass over a raw value.
#[derive(Clone, Copy, Debug)]
pub(super) struct ValueScan {
    /// Holds a `%` (or a `+` decoded as a space): the decoded value differs from the raw one.
    pub(super) needs_decoding: bool,
    /// Bytes outside the RFC 3986 unreserved set (each encodes to 3 bytes).
    pub(super) reserved: usize,
    /// Bytes that stop the raw value from being what lens sends for its decoded value: any
    /// reserved byte other than a `%XX` escape (uppercase hex) of a byte lens escapes too.
    not_canonical: usize,
}

/// Byte classes of [`BYTE_CLASS`].
const INVALID: u8 = 0;
const UNRESERVED: u8 = 1;
const OCTET: u8 = 2;
const PERCENT: u8 = 3;
const PLUS: u8 = 4;

/// Every byte's class in a value: not a baggage-octet, RFC 3986 unreserved, another
/// baggage-octet, `%`, `+`.
const BYTE_CLASS: [u8; 256] = {
    let mut t = [INVALID; 256];
    let mut b = 0;
    while b < 256 {
        // `b < 256`, so the cast is exact.
        let byte = b as u8;
        t[b] = if byte == b'%' {
            PERCENT
        } else if byte == b'+' {
            PLUS
        } else if super::percent::is_unreserved(byte) {
            UNRESERVED
        } else if is_value_octet(byte) {
            OCTET
        } else {
            INVALID
        };
        b += 1;
    }
    t
};

/// W3C baggage-octet: %x21 / %x23-2B / %x2D-3A / %x3C-5B / %x5D-7E.
const fn is_value_octet(b: u8) -> bool {
    matches!(b, 0x21 | 0x23..=0x2B | 0x2D..=0x3A | 0x3C..=0x5B | 0x5D..=0x7E)
}

/// One valid member found by [`scan_member`], as offsets into its line.
#[derive(Clone, Copy, Debug)]
pub(super) struct ScannedMember {
    pub(super) key: (usize, usize),
    pub(super) value: (usize, usize),
    pub(super) scan: ValueScan,
    /// The raw properties after the `;` (up to the next `,`, spaces and tabs that end them
    /// excluded), when there is a `;`.
    pub(super) properties: Option<(usize, usize)>,
    /// Normalized length of the properties (0 when none).
    pub(super) properties_len: usize,
    /// Where the member's text ends (before any spaces or tabs that end it).
    pub(super) end: usize,
    /// The member's text is exactly what lens sends for it: no spaces or tabs inside, a value
    /// that re-encodes to itself (escapes checked here; whether they decode to UTF-8 is known
    /// only once decoded), properties already normalized.
    pub(super) canonical: bool,
}

/// What [`scan_member`] found.
pub(super) enum Scanned {
    /// Only spaces and tabs before the next `,` (or the end): skipped silently.
    Empty,
    /// An invalid member starting at this offset (after its leading spaces and tabs).
    Invalid(usize, BaggageIssueReason),
    /// A valid member.
    Member(ScannedMember),
}

/// Index just after the next `,` at or after `from` (past the end when there is none).
#[inline]
fn next_member(bytes: &[u8], from: usize) -> usize {
    bytes
        .get(from..)
        .and_then(|rest| rest.iter().position(|&b| b == b',').map(|at| from + at + 1))
        .unwrap_or(bytes.len() + 1)
}

/// The text of the member starting at `start`: up to the next `,`, spaces and tabs around it
/// removed (what a [`BaggageIssue`](super::BaggageIssue) shows).
pub(super) fn member_text(line: &str, start: usize) -> &str {
    let rest = line.get(start..).unwrap_or_default();
    trim_ows(split_once_byte(rest, b',').map_or(rest, |(member, _)| member))
}

/// Scans the member starting at `start` in one pass: what it is, and where the next one starts
/// (past the end of the line when there is none). The one baggage grammar (docs/propagation-rules.md#baggage).
/// Inlined into the parser (its result is large to return); members that are empty, invalid or
/// carry properties are finished out of line.
#[inline(always)]
pub(super) fn scan_member(line: &str, start: usize, plus_as_space: bool) -> (Scanned, usize) {
    let bytes = line.as_bytes();
    let key_start = skip_ows(bytes, start);
    let mut i = key_start;
    while bytes.get(i).is_some_and(|&b| is_tchar(b)) {
        i += 1;
    }
    let key_end = i;
    i = skip_ows(bytes, i);
    if key_end == key_start || bytes.get(i) != Some(&b'=') {
        return not_a_member(line, key_start, key_end, i);
    }
    let mut canonical = i == key_end;
    let value_start = skip_ows(bytes, i + 1);
    canonical &= value_start == i + 1;
    let mut scan = ValueScan {
        needs_decoding: false,
        reserved: 0,
        not_canonical: 0,
    };
    i = value_start;
    loop {
        // Runs of unreserved bytes, most of a value, need no bookkeeping.
        while bytes
            .get(i)
            .is_some_and(|&b| BYTE_CLASS[usize::from(b)] == UNRESERVED)
        {
            i += 1;
        }
        match bytes.get(i).map(|&b| BYTE_CLASS[usize::from(b)]) {
            Some(OCTET) => {
                scan.reserved += 1;
                scan.not_canonical += 1;
            }
            Some(PERCENT) => {
                scan.needs_decoding = true;
                scan.reserved += 1;
                scan.not_canonical += usize::from(!canonical_escape(bytes, i));
            }
            Some(PLUS) => {
                scan.needs_decoding |= plus_as_space;
                scan.reserved += 1;
                scan.not_canonical += 1;
            }
            _ => break,
        }
        i += 1;
    }
    let value_end = i;
    canonical &= scan.not_canonical == 0;
    i = skip_ows(bytes, i);
    let member = ScannedMember {
        key: (key_start, key_end),
        value: (value_start, value_end),
        scan,
        properties: None,
        properties_len: 0,
        end: value_end,
        canonical,
    };
    match bytes.get(i) {
        None => (Scanned::Member(member), bytes.len() + 1),
        Some(b',') => (Scanned::Member(member), i + 1),
        Some(_) => after_value(line, member, i),
    }
}

/// The member at `key_start` has no key or no `=` after it (`at`: the first byte after the key
/// and its trailing spaces and tabs): empty, or invalid.
#[cold]
fn not_a_member(line: &str, key_start: usize, key_end: usize, at: usize) -> (Scanned, usize) {
    let bytes = line.as_bytes();
    let next = next_member(bytes, at);
    if key_end == key_start && matches!(bytes.get(at), None | Some(b',')) {
        return (Scanned::Empty, next);
    }
    let reason = if member_text(line, key_start).contains('=') {
        BaggageIssueReason::InvalidKey
    } else {
        BaggageIssueReason::MissingEquals
    };
    (Scanned::Invalid(key_start, reason), next)
}

/// Finishes a member whose value (and the spaces and tabs after it) is followed at `at` by
/// neither `,` nor the end: its properties after a `;`, or a character no value may hold.
fn after_value(line: &str, member: ScannedMember, at: usize) -> (Scanned, usize) {
    let bytes = line.as_bytes();
    let next = next_member(bytes, at);
    if bytes.get(at) != Some(&b';') {
        // A raw space inside the value, or a character no value may hold.
        return (
            Scanned::Invalid(member.key.0, BaggageIssueReason::InvalidValueCharacter),
            next,
        );
    }
    let raw_end = next.saturating_sub(1).min(bytes.len());
    // The member ends before the spaces and tabs that precede its `,`.
    let mut end = raw_end;
    while end > at + 1 && bytes.get(end - 1).is_some_and(|&b| is_ows(b)) {
        end -= 1;
    }
    match line.get(at + 1..end).and_then(properties_len) {
        Some(len) => {
            let canonical = member.canonical && at == member.value.1 && len == end - (at + 1);
            (
                Scanned::Member(ScannedMember {
                    properties: Some((at + 1, end)),
                    properties_len: len,
                    end,
                    canonical,
                    ..member
                }),
                next,
            )
        }
        None => (
            Scanned::Invalid(member.key.0, BaggageIssueReason::InvalidProperty),
            next,
        ),
    }
}

/// Bytes of `key=<encoded value>;<properties>` given the encoded value length.
pub(super) fn member_len(key: &str, encoded_value_len: usize, properties_len: usize) -> usize {
    key.len()
        + 1
        + encoded_value_len
        + if properties_len > 0 {
            1 + properties_len
        } else {
            0
        }
}

/// Walks the `;`-separated properties, giving the normalized pieces to `sink`; `false` when a
/// property is invalid (an empty one included).
fn visit_properties(raw: &str, mut sink: impl FnMut(&str)) -> bool {
    for (i, part) in split_byte(raw, b';').enumerate() {
        let part = trim_ows(part);
        if i > 0 {
            sink(";");
        }
        match split_once_byte(part, b'=') {
            Some((key, value)) => {
                let key = trim_ows(key);
                let value = trim_ows(value);
                if !is_token(key) || !value.bytes().all(is_value_octet) {
                    return false;
                }
                sink(key);
                sink("=");
                sink(value);
            }
            None => {
                if !is_token(part) {
                    return false;
                }
                sink(part);
            }
        }
    }
    true
}

/// Normalized length of valid properties; `None` when invalid.
pub(super) fn properties_len(raw: &str) -> Option<usize> {
    let mut len = 0;
    visit_properties(raw, |piece| len += piece.len()).then_some(len)
}

/// Appends the normalized form of properties already known to be valid.
pub(super) fn write_properties(raw: &str, out: &mut String) {
    visit_properties(raw, |piece| out.push_str(piece));
}

/// The one writer of a member as lens sends it (docs/propagation-rules.md#baggage): `key=<value percent-encoded>`,
/// then `;` and the properties (valid, normalized on the way) when there are any.
#[inline]
pub(super) fn write_member(out: &mut String, key: &str, value: &str, properties: &str) {
    out.push_str(key);
    out.push('=');
    encode_value(value, out);
    if !properties.is_empty() {
        out.push(';');
        write_properties(properties, out);
    }
}
