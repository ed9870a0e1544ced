//! [`TraceStateList`]: an ordered, validated tracestate list, and its members.

use opentelemetry::trace::TraceState;

use super::error::TraceStateError;
use super::parse::{MemberSink, otel_accepts_key, parse_members, valid_key, valid_value};
use crate::lexical::split_once_byte;
use crate::limits::Limits;

/// An ordered, validated tracestate list, with the header lens sends for it.
///
/// Holds every key of the current W3C grammar, including those opentelemetry's
/// [`TraceState`] rejects (docs/propagation-rules.md#opentelemetry-types).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TraceStateList {
    /// Members joined by ',' without spaces: exactly the header lens sends. Keys and values
    /// contain neither ',' nor '=', so the members are found again by splitting.
    pub(super) header: String,
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

impl<'a> MemberSink<'a> for TraceStateList {
    fn line(&mut self, line: &'a str) {
        if self.header.capacity() == 0 {
            self.header.reserve(line.len());
        }
    }

    fn contains(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    fn push(&mut self, key: &'a str, value: &'a str) -> bool {
        self.push_unchecked(key, value);
        true
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

    /// Parses all lines of a tracestate header as one list (docs/propagation-rules.md#tracestate). Any invalid member, too
    /// many members or too many bytes rejects the whole list; a repeated key keeps its first
    /// member.
    pub fn parse<'a, I>(lines: I, limits: &Limits) -> Result<TraceStateList, TraceStateError>
    where
        I: IntoIterator<Item = &'a str>,
    {
        let mut list = TraceStateList::new();
        parse_members(lines, limits, &mut list)?;
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

    /// The opentelemetry `TraceState` holding every member it can (docs/propagation-rules.md#opentelemetry-types).
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
