//! The tracestate crossing opentelemetry's `TraceState`: what extract reads (borrowed inline
//! members, or lens's own list) and the header inject writes
//! (docs/propagation-rules.md#opentelemetry-types).

use opentelemetry::trace::TraceState;

use super::list::TraceStateList;
use super::parse::{MemberSink, otel_accepts_key, parse_members, valid_value};
use crate::limits::Limits;

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
