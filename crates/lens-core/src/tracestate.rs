//! The `tracestate` header (W3C Trace Context, docs/propagation-rules.md#tracestate).
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
use crate::lexical::{skip_ows, split_once_byte, trim_ows};

/// Longest key: a first character and up to 255 more.
const MAX_KEY_LEN: usize = 256;
/// Longest value.
const MAX_VALUE_LEN: usize = 256;

/// Why a tracestate was dropped. Each message names the rule of docs/propagation-rules.md#tracestate.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TraceStateError {
    /// More bytes than the limit.
    #[error(
        "tracestate is {len} bytes; more than {limit} drops the whole tracestate (docs/propagation-rules.md#tracestate, docs/propagation-rules.md#limits)"
    )]
    TooLong {
        /// Bytes seen (all lines joined by ',').
        len: usize,
        /// The limit in force.
        limit: usize,
    },
    /// More members than the limit.
    #[error(
        "more than {limit} list members drops the whole tracestate (docs/propagation-rules.md#tracestate, docs/propagation-rules.md#limits)"
    )]
    TooManyMembers {
        /// The limit in force.
        limit: usize,
    },
    /// A member without `=`.
    #[error("member {member:?} has no '=' (docs/propagation-rules.md#tracestate)")]
    MissingEquals {
        /// The member as received.
        member: String,
    },
    /// A key outside the grammar.
    #[error(
        "key {key:?} is invalid: a lowercase letter or digit, then up to 255 of a-z 0-9 _ - * / @ (docs/propagation-rules.md#tracestate)"
    )]
    InvalidKey {
        /// The key as received.
        key: String,
    },
    /// A value outside the grammar.
    #[error(
        "value {value:?} is invalid: 1 to 256 printable ASCII characters except ',' and '=', ending in a non-space (docs/propagation-rules.md#tracestate)"
    )]
    InvalidValue {
        /// The value as received.
        value: String,
    },
}

/// An ordered, validated tracestate list, with the header lens sends for it.
///
/// Holds every key of the current W3C grammar, including those opentelemetry's
/// [`TraceState`] rejects (docs/propagation-rules.md#opentelemetry-types).
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
fn valid_key(key: &[u8]) -> bool {
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
fn valid_value(value: &[u8]) -> bool {
    let chars = value.iter().fold(true, |ok, &b| {
        ok & (b.wrapping_sub(0x20) < 0x5f) & (b != b',') & (b != b'=')
    });
    chars && !value.is_empty() && value.len() <= MAX_VALUE_LEN && value.last() != Some(&b' ')
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

/// Where [`parse_members`] puts the members it accepts.
trait MemberSink<'a> {
    /// Called once per line, before its members.
    fn line(&mut self, _line: &'a str) {}
    /// Whether a member with this key was already accepted.
    fn contains(&self, key: &str) -> bool;
    /// Accepts a valid member whose key is new; `false` when the sink cannot take it.
    fn push(&mut self, key: &'a str, value: &'a str) -> bool;
}

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

/// Most members extract keeps on the stack before it falls back to a [`TraceStateList`].
const INLINE_MEMBERS: usize = 8;

/// Members borrowed from the header lines, while every key is one opentelemetry accepts.
pub(crate) struct InlineMembers<'a> {
    /// `None` past `len`: an array of `None`s is all zeros, so it starts without a copy.
    members: [Option<(&'a str, &'a str)>; INLINE_MEMBERS],
    len: usize,
}

impl<'a> InlineMembers<'a> {
    fn new() -> Self {
        InlineMembers {
            members: [None; INLINE_MEMBERS],
            len: 0,
        }
    }

    /// The members (an exact-size iterator, so that opentelemetry's `TraceState` is sized once).
    fn iter(&self) -> impl ExactSizeIterator<Item = (&'a str, &'a str)> + '_ {
        let members = self.members.get(..self.len).unwrap_or_default();
        members.iter().map(|m| m.unwrap_or_default())
    }
}

impl<'a> MemberSink<'a> for InlineMembers<'a> {
    fn contains(&self, key: &str) -> bool {
        self.iter().any(|(k, _)| k == key)
    }

    fn push(&mut self, key: &'a str, value: &'a str) -> bool {
        if !otel_accepts_key(key) {
            return false;
        }
        match self.members.get_mut(self.len) {
            Some(slot) => {
                *slot = Some((key, value));
                self.len += 1;
                true
            }
            None => false,
        }
    }
}

/// The one tracestate parser (docs/propagation-rules.md#tracestate): one pass over each line, validating every member and
/// giving the members to keep to `sink`, in order, repeated keys left out. `Ok(false)` when the
/// sink refused a member (parsing stopped there).
fn parse_members<'a, I, S>(lines: I, limits: &Limits, sink: &mut S) -> Result<bool, TraceStateError>
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

/// The tracestate of a valid traceparent, as extract reads it (docs/propagation-rules.md#tracestate, docs/propagation-rules.md#opentelemetry-types):
/// no member (none, or an invalid tracestate: the whole tracestate is dropped); members that
/// opentelemetry's `TraceState` holds, borrowed from the header lines (lens needs no copy of its
/// own: inject writes the header from opentelemetry's); or lens's own list, when
/// opentelemetry's `TraceState` cannot hold every member.
// Lives on the stack for one extract, built in place (no enum around the inline members, whose
// move would be a copy of all of them).
pub(crate) struct ExtractedTraceState<'a> {
    /// The members, while every key is one opentelemetry accepts and there are at most 8;
    /// empty otherwise.
    inline: InlineMembers<'a>,
    /// lens's own list, when opentelemetry's `TraceState` cannot hold every member.
    list: Option<TraceStateList>,
}

impl<'a> ExtractedTraceState<'a> {
    /// No members yet: [`ExtractedTraceState::parse`] fills it where it lies (returning the
    /// inline members would copy them).
    pub(crate) fn new() -> Self {
        ExtractedTraceState {
            inline: InlineMembers::new(),
            list: None,
        }
    }

    /// Parses the tracestate lines of a valid traceparent into this empty state. The common case
    /// (every key one opentelemetry accepts, at most 8 members) allocates nothing.
    pub(crate) fn parse(&mut self, lines: &[&'a str], limits: &Limits) {
        match parse_members(lines.iter().copied(), limits, &mut self.inline) {
            Ok(true) => {}
            Err(_) => self.inline.len = 0,
            // A key opentelemetry rejects, or more than 8 members: the general path.
            Ok(false) => {
                self.inline.len = 0;
                self.list = TraceStateList::parse(lines.iter().copied(), limits)
                    .ok()
                    .filter(|list| !list.is_empty());
            }
        }
    }

    /// opentelemetry's `TraceState`: every member it can hold.
    pub(crate) fn to_otel(&self) -> TraceState {
        match &self.list {
            Some(list) => list.to_otel(),
            None if self.inline.len == 0 => TraceState::NONE,
            None => TraceState::from_key_value(self.inline.iter()).unwrap_or_default(),
        }
    }

    /// lens's own list, when opentelemetry's `TraceState` cannot hold every member (only then
    /// does lens keep a copy, docs/propagation-rules.md#opentelemetry-types).
    pub(crate) fn into_list(self) -> Option<TraceStateList> {
        self.list
    }
}

/// The header lens sends for opentelemetry's `TraceState`, when it holds any valid member: the
/// valid members (lens's grammar), first of each key, joined by `,`. One pass over the
/// `TraceState` in the common case (each of its iterators costs a call).
pub(crate) fn header_from_otel(state: &TraceState) -> Option<String> {
    // Common case: at most 8 members, every one valid, no key repeated: the header is the
    // members joined. opentelemetry's non-empty keys are valid here (its grammar is a subset
    // of docs/propagation-rules.md#tracestate, but it takes an empty key); its values need the
    // full check (it allows empty ones, control characters, a trailing space).
    // A span without a trace state (the usual case) returns before the members' array is set up.
    if *state == TraceState::NONE {
        return None;
    }
    let mut members = [("", ""); INLINE_MEMBERS];
    let mut len = 0;
    let mut size = 0;
    for (k, v) in state {
        let fits = !k.is_empty()
            && valid_value(v.as_bytes())
            && !members.iter().take(len).any(|(prev, _)| *prev == k);
        match members.get_mut(len) {
            Some(slot) if fits => *slot = (k, v),
            // More members, or one the general path must judge.
            _ => {
                let list = TraceStateList::from_otel(state);
                return (!list.is_empty()).then_some(list.header);
            }
        }
        len += 1;
        size += k.len() + v.len() + 2;
    }
    if len == 0 {
        return None;
    }
    let mut header = String::with_capacity(size - 1);
    for (i, (k, v)) in members.iter().take(len).enumerate() {
        if i > 0 {
            header.push(',');
        }
        header.push_str(k);
        header.push('=');
        header.push_str(v);
    }
    Some(header)
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
