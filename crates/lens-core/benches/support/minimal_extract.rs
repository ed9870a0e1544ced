//! A reference for extract, not an implementation: the least a parser can do for the bench's
//! three headers under docs/propagation-rules.md#traceparent, docs/propagation-rules.md#tracestate, docs/propagation-rules.md#baggage, followed by the floor's Context and a copy shaped like
//! docs/propagation-rules.md#opentelemetry-types. It checks the traceparent's layout and hex, each tracestate member's key and
//! value grammar, repeated keys and the member limit, each baggage member's key (token) and
//! value octets, and builds what lens builds. It handles one line per header, no whitespace,
//! no percent-escapes and no properties, and refuses (`None`) everything else: the general
//! parser's work on those inputs is what it leaves out.

use std::collections::HashMap;

use http::HeaderMap;
use opentelemetry::baggage::{Baggage, BaggageExt};
use opentelemetry::propagation::Extractor;
use opentelemetry::trace::{SpanContext, TraceContextExt, TraceFlags, TraceState};
use opentelemetry::{Context, SpanId, TraceId};

/// Whether `set` holds `b` (usable in the table below, which is built at compile time).
const fn has(set: &[u8], b: u8) -> bool {
    let mut i = 0;
    while i < set.len() {
        if set[i] == b {
            return true;
        }
        i += 1;
    }
    false
}

/// Byte classes. Tracestate: bit 0 may start a key, bit 1 key character, bit 2 value character.
/// Baggage: bit 3 key (HTTP token), bit 4 value octet that needs no escaping on inject, or the
/// `%` of an escape.
/// Written out here rather than shared with lens-core: the reference owes lens nothing.
const CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        let alnum = b.is_ascii_alphanumeric();
        let start = b.is_ascii_lowercase() || b.is_ascii_digit();
        let classes = [
            start,
            start || has(b"_-*/@", b),
            b >= 0x20 && b <= 0x7e && !has(b",=", b),
            alnum || has(b"!#$%&'*+-.^_`|~", b),
            alnum || has(b"-._~%", b),
        ];
        let mut bit = 0;
        while bit < classes.len() {
            t[i] |= (classes[bit] as u8) << bit;
            bit += 1;
        }
        i += 1;
    }
    t
};

fn is(b: Option<&u8>, class: u8) -> bool {
    b.is_some_and(|&b| CLASS[usize::from(b)] & class != 0)
}

/// Length of the run of `class` bytes at the start of `bytes`.
#[inline]
fn run(bytes: &[u8], class: u8) -> usize {
    bytes
        .iter()
        .position(|&b| CLASS[usize::from(b)] & class == 0)
        .unwrap_or(bytes.len())
}

fn nibble(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => 16,
    }
}

/// Decodes lowercase hex into `out`; `false` on any other character.
fn hex(text: &[u8], out: &mut [u8]) -> bool {
    let mut ok = true;
    for (o, pair) in out.iter_mut().zip(text.chunks_exact(2)) {
        let (high, low) = (nibble(pair[0]), nibble(pair[1]));
        ok &= (high | low) < 16;
        *o = (high << 4) | (low & 15);
    }
    ok
}

/// The least a copy beside opentelemetry's values can keep for docs/propagation-rules.md#opentelemetry-types
/// (the members' order): the baggage header, inside the Context value (no allocation of its
/// own; the reference refuses a longer header), and an anchor Context that keeps the mirrored
/// `Baggage` alive. opentelemetry's `TraceState` holds the bench's tracestate whole, so no copy
/// of it.
struct Copy {
    _baggage: ([u8; 128], usize),
    _anchor: Context,
}

/// The three header values of a `HeaderMap` of one line each.
pub(crate) fn minimal_extract_headers(headers: &HeaderMap) -> Option<Context> {
    let (mut tp, mut ts, mut bg) = (None, None, None);
    for (name, value) in headers {
        let slot = match name.as_str() {
            "traceparent" => &mut tp,
            "tracestate" => &mut ts,
            "baggage" => &mut bg,
            _ => continue,
        };
        if slot.is_some() {
            return None;
        }
        *slot = Some(value.to_str().ok()?);
    }
    minimal_extract(tp?, ts?, bg?)
}

/// The three header values read through an opentelemetry `Extractor` as lens must read a
/// carrier it does not know (docs/propagation-rules.md#carriers: every line of a header, so
/// `get_all`); one line each.
#[allow(dead_code)] // not every bench that includes this file measures fixture P
pub(crate) fn minimal_extract_lines(extractor: &dyn Extractor) -> Option<Context> {
    let one = |name| match extractor.get_all(name).as_deref() {
        Some(&[line]) => Some(line),
        _ => None,
    };
    minimal_extract(one("traceparent")?, one("tracestate")?, one("baggage")?)
}

/// The three header values of a `HashMap`.
pub(crate) fn minimal_extract_map(map: &HashMap<String, String>) -> Option<Context> {
    minimal_extract(
        map.get("traceparent")?,
        map.get("tracestate")?,
        map.get("baggage")?,
    )
}

/// A value's `%XX` escapes (hex digits of either case) decoded; `None` for a malformed one or
/// bytes that are not UTF-8.
fn decode(raw: &str) -> Option<String> {
    let b = raw.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let byte = u8::from_str_radix(raw.get(i + 1..i + 3)?, 16).ok()?;
            out.push(byte);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn minimal_extract(traceparent: &str, tracestate: &str, baggage: &str) -> Option<Context> {
    // traceparent: version 00, exactly 55 bytes, lowercase hex, ids not all zero.
    let tp = traceparent.as_bytes();
    if tp.len() != 55 || &tp[..3] != b"00-" || tp[35] != b'-' || tp[52] != b'-' {
        return None;
    }
    let (mut trace_id, mut span_id, mut flags) = ([0u8; 16], [0u8; 8], [0u8; 1]);
    if !(hex(&tp[3..35], &mut trace_id)
        & hex(&tp[36..52], &mut span_id)
        & hex(&tp[53..], &mut flags))
        || trace_id == [0; 16]
        || span_id == [0; 8]
    {
        return None;
    }

    // tracestate: `key=value` members separated by a bare `,`; first of a repeated key kept
    // (here: refused), at most 32 members, keys opentelemetry accepts (no `@`).
    let mut members = [("", ""); 32];
    let mut n = 0;
    let mut rest = tracestate;
    loop {
        let b = rest.as_bytes();
        if !is(b.first(), 1) {
            return None;
        }
        let key_len = 1 + run(&b[1..], 2);
        if b.get(key_len) != Some(&b'=') || key_len > 256 {
            return None;
        }
        let value_len = run(&b[key_len + 1..], 4);
        let end = key_len + 1 + value_len;
        if value_len == 0 || value_len > 256 || b[end - 1] == b' ' || n == members.len() {
            return None;
        }
        let (key, value) = (rest.get(..key_len)?, rest.get(key_len + 1..end)?);
        if key.contains('@') || members[..n].iter().any(|(k, _)| *k == key) {
            return None;
        }
        members[n] = (key, value);
        n += 1;
        match b.get(end) {
            None => break,
            Some(b',') => rest = rest.get(end + 1..)?,
            Some(_) => return None,
        }
    }
    let state = TraceState::from_key_value(members[..n].iter().copied()).ok()?;
    let sc = SpanContext::new(
        TraceId::from_bytes(trace_id),
        SpanId::from_bytes(span_id),
        TraceFlags::new(flags[0] & 3),
        true,
        state,
    );

    // baggage: `key=value` members separated by a bare `,`; `%XX` escapes decoded.
    let b = baggage.as_bytes();
    if b.len() > 8192 {
        return None;
    }
    let mut otel = Baggage::new();
    let mut count = 0;
    let mut rest = baggage;
    loop {
        let b = rest.as_bytes();
        let key_len = run(b, 8);
        if key_len == 0 || b.get(key_len) != Some(&b'=') {
            return None;
        }
        let value_len = run(&b[key_len + 1..], 16);
        let end = key_len + 1 + value_len;
        let raw = rest.get(key_len + 1..end)?;
        let value = if raw.as_bytes().contains(&b'%') {
            decode(raw)?
        } else {
            raw.to_owned()
        };
        otel.insert(rest.get(..key_len)?.to_owned(), value);
        count += 1;
        if otel.len() != count || count > 64 {
            return None;
        }
        match b.get(end) {
            None => break,
            Some(b',') => rest = rest.get(end + 1..)?,
            Some(_) => return None,
        }
    }

    let with_baggage = Context::new().with_baggage(otel);
    let mut header = [0u8; 128];
    header
        .get_mut(..baggage.len())?
        .copy_from_slice(baggage.as_bytes());
    let copy = Copy {
        _baggage: (header, baggage.len()),
        _anchor: with_baggage.clone(),
    };
    Some(with_baggage.with_value(copy).with_remote_span_context(sc))
}
