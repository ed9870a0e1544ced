//! Lexical rules shared by every header grammar lens reads (docs/propagation-rules.md#traceparent, docs/propagation-rules.md#tracestate, docs/propagation-rules.md#baggage): optional whitespace
//! (OWS: spaces and tabs only), RFC 7230 tokens, hex digits, and splitting on one ASCII byte.
//!
//! Every lens parser uses these, and so can tools that explain headers (`lens inspect`):
//!
//! ```
//! use lens_core::lexical::{is_token, lower_hex_value, trim_ows};
//!
//! assert_eq!(trim_ows(" \tk=v \t"), "k=v");
//! assert_eq!(trim_ows("\nk=v"), "\nk=v"); // only spaces and tabs are whitespace
//! assert!(is_token("user_id") && is_token("a+b%20") && !is_token("a b") && !is_token(""));
//! assert_eq!(lower_hex_value(b'f'), Some(15));
//! assert_eq!(lower_hex_value(b'F'), None); // traceparent hex is lowercase only
//! ```
//!
//! Plain byte loops: header parts are short, and `str::split`'s generic searcher (or memchr)
//! costs more than the scan itself on them.

/// Whether `b` is optional whitespace: a space or a tab, and nothing else (docs/propagation-rules.md#traceparent, docs/propagation-rules.md#tracestate, docs/propagation-rules.md#baggage).
#[inline]
pub const fn is_ows(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// Index of the first byte at or after `from` that is not a space or tab (`bytes.len()` or
/// beyond when there is none).
#[inline]
pub fn skip_ows(bytes: &[u8], mut from: usize) -> usize {
    while bytes.get(from).is_some_and(|&b| is_ows(b)) {
        from += 1;
    }
    from
}

/// Removes spaces and tabs (and only those: docs/propagation-rules.md#traceparent, docs/propagation-rules.md#tracestate, docs/propagation-rules.md#baggage) at both ends.
#[inline]
pub fn trim_ows(s: &str) -> &str {
    let b = s.as_bytes();
    let Some(start) = b.iter().position(|&c| !is_ows(c)) else {
        return "";
    };
    let end = b.iter().rposition(|&c| !is_ows(c)).map_or(start, |i| i + 1);
    // Both ends sit next to ASCII bytes (or the string's ends), so they are char boundaries.
    s.get(start..end).unwrap_or_default()
}

/// Whether `b` is an RFC 7230 tchar: letters, digits and ``!#$%&'*+-.^_`|~`` (baggage keys and
/// property keys, HTTP header names).
#[inline]
pub const fn is_tchar(b: u8) -> bool {
    TCHAR[b as usize]
}

/// Whether `s` is a non-empty RFC 7230 token (every byte a [`is_tchar`]).
#[inline]
pub fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(is_tchar)
}

/// The value of a hex digit of either case (baggage percent escapes, docs/propagation-rules.md#baggage).
#[inline]
pub const fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// The value of a lowercase hex digit (traceparent fields, docs/propagation-rules.md#traceparent: uppercase is invalid).
#[inline]
pub const fn lower_hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    }
}

/// Whether each byte is an RFC 7230 tchar.
const TCHAR: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        // `b < 256`, so the cast is exact.
        let byte = b as u8;
        t[b] = byte.is_ascii_alphanumeric()
            || matches!(
                byte,
                b'!' | b'#'
                    | b'$'
                    | b'%'
                    | b'&'
                    | b'\''
                    | b'*'
                    | b'+'
                    | b'-'
                    | b'.'
                    | b'^'
                    | b'_'
                    | b'`'
                    | b'|'
                    | b'~'
            );
        b += 1;
    }
    t
};

/// Splits at the first `sep` (an ASCII byte), which belongs to neither part.
#[inline]
pub(crate) fn split_once_byte(s: &str, sep: u8) -> Option<(&str, &str)> {
    let at = s.as_bytes().iter().position(|&c| c == sep)?;
    // `sep` is ASCII, so both sides of it are char boundaries.
    Some((s.get(..at)?, s.get(at + 1..)?))
}

/// Iterates over the parts of `s` between `sep` bytes (like `str::split` with a char).
#[inline]
pub(crate) fn split_byte(s: &str, sep: u8) -> SplitByte<'_> {
    SplitByte { rest: Some(s), sep }
}

/// Iterator of [`split_byte`].
#[derive(Clone, Debug)]
pub(crate) struct SplitByte<'a> {
    rest: Option<&'a str>,
    sep: u8,
}

impl<'a> Iterator for SplitByte<'a> {
    type Item = &'a str;

    #[inline]
    fn next(&mut self) -> Option<&'a str> {
        let rest = self.rest?;
        match split_once_byte(rest, self.sep) {
            Some((part, tail)) => {
                self.rest = Some(tail);
                Some(part)
            }
            None => {
                self.rest = None;
                Some(rest)
            }
        }
    }
}
