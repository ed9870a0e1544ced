//! The percent codec of baggage values (docs/propagation-rules.md#baggage): RFC 3986 decoding on extract (a malformed
//! escape kept as it is, bytes that are not UTF-8 as U+FFFD), encoding of every byte outside the
//! unreserved set on inject.

use crate::lexical::hex_value;

/// Appends `value` percent-encoded per RFC 3986 to `out`: every byte outside the unreserved set
/// (`A-Z a-z 0-9 - . _ ~`) as `%XX` with uppercase hex, `%` included, a space as `%20`.
///
/// ```
/// let mut out = String::new();
/// lens_core::baggage::encode_value("a b%é", &mut out);
/// assert_eq!(out, "a%20b%25%C3%A9");
/// ```
pub fn encode_value(value: &str, out: &mut String) {
    let mut rest = value;
    while !rest.is_empty() {
        let run = rest
            .bytes()
            .position(|b| !is_unreserved(b))
            .unwrap_or(rest.len());
        let (plain, tail) = rest.split_at(run);
        out.push_str(plain);
        // Encode the reserved bytes up to the next unreserved one; a multi-byte character is
        // reserved byte by byte, so the cut always lands on a character boundary.
        let mut used = 0;
        for b in tail.bytes() {
            if is_unreserved(b) {
                break;
            }
            let at = 3 * usize::from(b);
            out.push_str(ESCAPES.get(at..at + 3).unwrap_or_default());
            used += 1;
        }
        rest = tail.get(used..).unwrap_or_default();
    }
}

/// `%00%01..%FF`: the escape of byte `b` is `ESCAPES[3 * b..3 * b + 3]`.
const ESCAPES: &str = {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    const BYTES: [u8; 768] = {
        let mut t = [0u8; 768];
        let mut b = 0;
        while b < 256 {
            t[3 * b] = b'%';
            t[3 * b + 1] = HEX[b >> 4];
            t[3 * b + 2] = HEX[b & 0x0f];
            b += 1;
        }
        t
    };
    match std::str::from_utf8(&BYTES) {
        Ok(s) => s,
        Err(_) => panic!("escapes are ASCII"),
    }
};

/// Length of `value` once encoded by [`encode_value`].
pub(crate) fn encoded_len(value: &str) -> usize {
    value.len() + 2 * value.bytes().filter(|&b| !is_unreserved(b)).count()
}

/// RFC 3986 unreserved: the bytes [`encode_value`] sends as they are.
#[inline]
pub(crate) const fn is_unreserved(b: u8) -> bool {
    UNRESERVED[b as usize]
}

/// Whether each byte is RFC 3986 unreserved (`A-Z a-z 0-9 - . _ ~`).
const UNRESERVED: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        // `b < 256`, so the cast is exact.
        let byte = b as u8;
        t[b] = byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~');
        b += 1;
    }
    t
};

/// Whether the `%` at `at` starts an escape that [`encode_value`] writes exactly so: two
/// uppercase hex digits, for a byte outside the unreserved set.
#[inline]
pub(crate) fn canonical_escape(bytes: &[u8], at: usize) -> bool {
    let digit = |i: usize| match bytes.get(i) {
        Some(&b @ (b'0'..=b'9' | b'A'..=b'F')) => hex_value(b),
        _ => None,
    };
    match (digit(at + 1), digit(at + 2)) {
        (Some(hi), Some(lo)) => !is_unreserved(hi << 4 | lo),
        _ => false,
    }
}

/// Percent-decodes a raw value (only value octets, so only ASCII) into a `String` of its own:
/// the decoded value, and whether it is the bytes the escapes stand for (`false`: they were not
/// UTF-8, and the value holds U+FFFD for them).
pub(crate) fn decode_value(raw: &str, plus_as_space: bool) -> (String, bool) {
    // Exactly the decoded length when every `%` starts an escape, so that opentelemetry's
    // `StringValue` (a boxed str) takes the buffer without shrinking it.
    let escapes = raw.bytes().filter(|&b| b == b'%').count();
    let mut bytes = Vec::with_capacity(raw.len().saturating_sub(2 * escapes));
    decode_into(raw, plus_as_space, &mut bytes);
    match String::from_utf8(bytes) {
        Ok(s) => (s, true),
        Err(e) => (lossy(e.as_bytes()), false),
    }
}

/// Appends the percent-decoded bytes of `raw` to `out`; a `%` without two hex digits is kept.
fn decode_into(raw: &str, plus_as_space: bool, out: &mut Vec<u8>) {
    let mut rest = raw.as_bytes();
    // Runs without a `%` (or a `+` to decode) are copied whole.
    while let Some(at) = rest
        .iter()
        .position(|&b| b == b'%' || (plus_as_space && b == b'+'))
    {
        let (run, tail) = rest.split_at(at);
        out.extend_from_slice(run);
        let (byte, used) = match tail {
            [b'+', ..] => (b' ', 1),
            [_, hi, lo, ..] => match (hex_value(*hi), hex_value(*lo)) {
                (Some(hi), Some(lo)) => (hi << 4 | lo, 3),
                _ => (b'%', 1),
            },
            _ => (b'%', 1),
        };
        out.push(byte);
        rest = tail.get(used..).unwrap_or_default();
    }
    out.extend_from_slice(rest);
}

/// Bytes as UTF-8, each invalid sequence replaced by U+FFFD.
fn lossy(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        if !chunk.invalid().is_empty() {
            out.push(char::REPLACEMENT_CHARACTER);
        }
    }
    out
}
