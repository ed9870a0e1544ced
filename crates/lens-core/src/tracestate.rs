//! The `tracestate` header (W3C Trace Context, SPEC.md §2).
//!
//! ```
//! use lens_core::{Limits, tracestate::TraceStateList};
//!
//! let ts = TraceStateList::parse(["rojo=00f067aa0ba902b7 , congo=t61rcWkgMzE"], &Limits::default()).unwrap();
//! assert_eq!(ts.header(), "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
//! assert_eq!(ts.get("congo"), Some("t61rcWkgMzE"));
//! ```

use opentelemetry::trace::TraceState;

use crate::Limits;
use crate::lexical::{split_byte, split_once_byte, trim_ows};

/// Longest key: a first character and up to 255 more.
const MAX_KEY_LEN: usize = 256;
/// Longest value.
const MAX_VALUE_LEN: usize = 256;

/// Why a tracestate was dropped. Each message names the rule of SPEC.md §2.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TraceStateError {
    /// More bytes than the limit.
    #[error(
        "tracestate is {len} bytes; more than {limit} drops the whole tracestate (SPEC §2, §8)"
    )]
    TooLong {
        /// Bytes seen (all lines joined by ',').
        len: usize,
        /// The limit in force.
        limit: usize,
    },
    /// More members than the limit.
    #[error("more than {limit} list members drops the whole tracestate (SPEC §2, §8)")]
    TooManyMembers {
        /// The limit in force.
        limit: usize,
    },
    /// A member without `=`.
    #[error("member {member:?} has no '=' (SPEC §2)")]
    MissingEquals {
        /// The member as received.
        member: String,
    },
    /// A key outside the grammar.
    #[error(
        "key {key:?} is invalid: a lowercase letter or digit, then up to 255 of a-z 0-9 _ - * / @ (SPEC §2)"
    )]
    InvalidKey {
        /// The key as received.
        key: String,
    },
    /// A value outside the grammar.
    #[error(
        "value {value:?} is invalid: 1 to 256 printable ASCII characters except ',' and '=', ending in a non-space (SPEC §2)"
    )]
    InvalidValue {
        /// The value as received.
        value: String,
    },
}

/// An ordered, validated tracestate list, with the header lens sends for it.
///
/// Holds every key of the current W3C grammar, including those opentelemetry's
/// [`TraceState`] rejects (SPEC.md §10).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TraceStateList {
    /// Members joined by ',' without spaces: exactly the header lens sends. Keys and values
    /// contain neither ',' nor '=', so the members are found again by splitting.
    header: String,
    /// Number of members.
    len: usize,
    /// Whether opentelemetry's `TraceState` accepts every key.
    fits_otel: bool,
}

/// The members of a [`TraceStateList`], in order.
#[derive(Clone, Debug)]
pub struct Members<'a> {
    rest: &'a str,
    remaining: usize,
}

impl<'a> Iterator for Members<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let (member, rest) = split_once_byte(self.rest, b',').unwrap_or((self.rest, ""));
        self.rest = rest;
        Some(split_once_byte(member, b'=').unwrap_or((member, "")))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Members<'_> {}

#[inline]
fn is_key_char(b: u8) -> bool {
    matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'*' | b'/' | b'@')
}

fn valid_key(key: &[u8]) -> bool {
    match key.split_first() {
        Some((first, rest)) => {
            (first.is_ascii_lowercase() || first.is_ascii_digit())
                && key.len() <= MAX_KEY_LEN
                && rest.iter().all(|&b| is_key_char(b))
        }
        None => false,
    }
}

fn valid_value(value: &[u8]) -> bool {
    !value.is_empty()
        && value.len() <= MAX_VALUE_LEN
        && value.last() != Some(&b' ')
        && value
            .iter()
            .all(|&b| (0x20..=0x7e).contains(&b) && b != b',' && b != b'=')
}

/// Whether opentelemetry's `TraceState` accepts this (already valid) key: its check predates the
/// current grammar and allows one `@` with at most 13 characters after it, the first of them a
/// lowercase letter or digit. Mirrors opentelemetry 0.33's `TraceState::valid_key`.
fn otel_accepts_key(key: &str) -> bool {
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

impl Default for TraceStateList {
    fn default() -> Self {
        Self::new()
    }
}

impl TraceStateList {
    /// An empty list.
    pub const fn new() -> Self {
        TraceStateList {
            header: String::new(),
            len: 0,
            fits_otel: true,
        }
    }

    /// Parses all lines of a tracestate header as one list (SPEC §2). Any invalid member, too
    /// many members or too many bytes rejects the whole list; a repeated key keeps its first
    /// member.
    pub fn parse<'a, I>(lines: I, limits: &Limits) -> Result<TraceStateList, TraceStateError>
    where
        I: IntoIterator<Item = &'a str>,
    {
        let mut list = TraceStateList::new();
        let mut total = 0usize;
        let mut count = 0usize;
        for (i, line) in lines.into_iter().enumerate() {
            total += line.len() + usize::from(i > 0);
            if total > limits.tracestate_bytes {
                return Err(TraceStateError::TooLong {
                    len: total,
                    limit: limits.tracestate_bytes,
                });
            }
            if list.header.capacity() == 0 {
                list.header.reserve(line.len());
            }
            for raw in split_byte(line, b',') {
                let member = trim_ows(raw);
                if member.is_empty() {
                    continue;
                }
                count += 1;
                if count > limits.tracestate_members {
                    return Err(TraceStateError::TooManyMembers {
                        limit: limits.tracestate_members,
                    });
                }
                let Some((key, value)) = split_once_byte(member, b'=') else {
                    return Err(TraceStateError::MissingEquals {
                        member: member.to_owned(),
                    });
                };
                if !valid_key(key.as_bytes()) {
                    return Err(TraceStateError::InvalidKey {
                        key: key.to_owned(),
                    });
                }
                if !valid_value(value.as_bytes()) {
                    return Err(TraceStateError::InvalidValue {
                        value: value.to_owned(),
                    });
                }
                if list.get(key).is_none() {
                    list.push_unchecked(key, value);
                }
            }
        }
        Ok(list)
    }

    fn push_unchecked(&mut self, key: &str, value: &str) {
        if !self.header.is_empty() {
            self.header.push(',');
        }
        self.header.push_str(key);
        self.header.push('=');
        self.header.push_str(value);
        self.len += 1;
        self.fits_otel &= otel_accepts_key(key);
    }

    /// Builds a list from opentelemetry's `TraceState` (whose members are already valid).
    pub fn from_otel(state: &TraceState) -> TraceStateList {
        let mut list = TraceStateList::new();
        let mut seen = 0;
        for (k, v) in state {
            seen += 1;
            if seen > Limits::DEFAULT.tracestate_members {
                break;
            }
            if valid_key(k.as_bytes()) && valid_value(v.as_bytes()) && list.get(k).is_none() {
                list.push_unchecked(k, v);
            }
        }
        list
    }

    /// The members in order.
    pub fn members(&self) -> Members<'_> {
        Members {
            rest: &self.header,
            remaining: self.len,
        }
    }

    /// The value of a key.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.members().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The header lens sends: members joined by `,` ("" when empty: then no header is sent).
    pub fn header(&self) -> &str {
        &self.header
    }

    /// Whether opentelemetry's `TraceState` can hold every member.
    pub fn fits_otel(&self) -> bool {
        self.fits_otel
    }

    /// The opentelemetry `TraceState` holding every member it can (SPEC §10).
    pub fn to_otel(&self) -> TraceState {
        if self.is_empty() {
            return TraceState::NONE;
        }
        let fits = self.fits_otel;
        TraceState::from_key_value(self.members().filter(|(k, _)| fits || otel_accepts_key(k)))
            .unwrap_or_default()
    }

    /// Whether `state` is exactly what [`TraceStateList::to_otel`] gives for this list, i.e.
    /// nobody changed the opentelemetry copy since lens built it.
    pub fn matches_otel(&self, state: &TraceState) -> bool {
        if !self.fits_otel() {
            let mut ours = self.members().filter(|(k, _)| otel_accepts_key(k));
            let mut theirs = state.into_iter();
            return loop {
                match (ours.next(), theirs.next()) {
                    (None, None) => break true,
                    (Some((k1, v1)), Some((k2, v2))) if k1 == k2 && v1 == v2 => continue,
                    _ => break false,
                }
            };
        }
        // Common case: opentelemetry holds every member, so its members joined with ',' and '='
        // must spell exactly our header. Walk it without splitting.
        let mut rest = self.header.as_bytes();
        let mut count = 0;
        for (k, v) in state {
            if count > 0 {
                let Some(tail) = rest.strip_prefix(b",") else {
                    return false;
                };
                rest = tail;
            }
            let Some(tail) = rest.strip_prefix(k.as_bytes()) else {
                return false;
            };
            let Some(tail) = tail.strip_prefix(b"=") else {
                return false;
            };
            let Some(tail) = tail.strip_prefix(v.as_bytes()) else {
                return false;
            };
            rest = tail;
            count += 1;
        }
        rest.is_empty() && count == self.len
    }
}
