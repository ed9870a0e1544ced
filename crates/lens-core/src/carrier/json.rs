//! JSON encoding (Python `json.dumps`, docs/propagation-rules.md#json-byte-format) and strict, bounded decoding (docs/propagation-rules.md#carriers, docs/propagation-rules.md#limits)
//! of the carrier.

use super::last_wins::LastWins;
use super::{CarrierError, Lines};
use crate::Limits;
use std::borrow::Cow;

// ---------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends `{"k": "v", "k2": ["a", "b"]}` exactly as Python's `json.dumps` (ensure_ascii) would.
pub(super) fn write_carrier(entries: &[(String, Lines)], out: &mut Vec<u8>) {
    // Exact when nothing needs escaping; escapes only grow the Vec further.
    let mut estimate = 2;
    for (k, lines) in entries {
        estimate += k.len() + 6;
        for line in lines.as_slice() {
            estimate += line.len() + 4;
        }
    }
    out.reserve(estimate);

    out.push(b'{');
    let mut first = true;
    for (key, lines) in entries {
        if lines.is_empty() {
            continue;
        }
        write_key(&mut first, key, out);
        let lines = lines.as_slice();
        if let [line] = lines {
            write_string(line, out);
        } else {
            out.push(b'[');
            for (i, line) in lines.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b", ");
                }
                write_string(line, out);
            }
            out.push(b']');
        }
    }
    out.push(b'}');
}

/// Appends `{"k": "v", ...}` for single-line fields, exactly as [`write_carrier`] writes a carrier
/// holding them in this order (Python's `json.dumps`); `None` fields are left out.
pub(crate) fn write_fields(fields: &[(&str, Option<String>)], out: &mut Vec<u8>) {
    let estimate: usize = fields
        .iter()
        .filter_map(|(k, v)| Some(k.len() + v.as_ref()?.len() + 8))
        .sum();
    out.reserve(estimate + 2);
    out.push(b'{');
    let mut first = true;
    for (key, value) in fields {
        let Some(value) = value else {
            continue;
        };
        write_key(&mut first, key, out);
        write_string(value, out);
    }
    out.push(b'}');
}

/// Appends `"key": ` to an object being written, after `, ` unless it is the `first` member.
fn write_key(first: &mut bool, key: &str, out: &mut Vec<u8>) {
    if !*first {
        out.extend_from_slice(b", ");
    }
    *first = false;
    write_string(key, out);
    out.extend_from_slice(b": ");
}

fn write_u_escape(unit: u32, out: &mut Vec<u8>) {
    out.extend_from_slice(&[
        b'\\',
        b'u',
        HEX[((unit >> 12) & 0xf) as usize],
        HEX[((unit >> 8) & 0xf) as usize],
        HEX[((unit >> 4) & 0xf) as usize],
        HEX[(unit & 0xf) as usize],
    ]);
}

/// Appends `s` as a JSON string, escaped as Python's `json.dumps` does with `ensure_ascii=True`.
fn write_string(s: &str, out: &mut Vec<u8>) {
    let bytes = s.as_bytes();
    out.push(b'"');
    // Header values are almost always printable ASCII without `"` or `\`: checked without
    // branching per byte (so the compiler can vectorize it), then copied whole.
    let plain = bytes.iter().fold(true, |plain, &b| {
        plain & (b.wrapping_sub(0x20) < 0x5f) & (b != b'"') & (b != b'\\')
    });
    if plain {
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
    let mut run_start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\' {
            i += 1;
            continue;
        }
        out.extend_from_slice(&bytes[run_start..i]);
        if b < 0x80 {
            match b {
                b'"' => out.extend_from_slice(b"\\\""),
                b'\\' => out.extend_from_slice(b"\\\\"),
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\r' => out.extend_from_slice(b"\\r"),
                b'\t' => out.extend_from_slice(b"\\t"),
                0x08 => out.extend_from_slice(b"\\b"),
                0x0c => out.extend_from_slice(b"\\f"),
                _ => write_u_escape(u32::from(b), out),
            }
            i += 1;
        } else {
            // `i` is at the lead byte of a character: `s` is valid UTF-8 and every byte before
            // it in this loop was ASCII or a whole character.
            let Some(c) = s.get(i..).and_then(|rest| rest.chars().next()) else {
                // Unreachable for a valid `str`; stop rather than loop.
                break;
            };
            let cp = u32::from(c);
            if cp > 0xffff {
                let v = cp - 0x1_0000;
                write_u_escape(0xd800 | (v >> 10), out);
                write_u_escape(0xdc00 | (v & 0x3ff), out);
            } else {
                write_u_escape(cp, out);
            }
            i += c.len_utf8();
        }
        run_start = i;
    }
    out.extend_from_slice(&bytes[run_start.min(bytes.len())..]);
    out.push(b'"');
}

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

/// Parses a JSON carrier: see [`super::Carrier::from_json_bytes_with_limits`].
pub(super) fn parse_carrier(
    bytes: &[u8],
    limits: &Limits,
) -> Result<Vec<(String, Lines)>, CarrierError> {
    parse_top(bytes, limits, Parser::top_object)
}

/// The propagation headers of a JSON carrier, read without building a [`super::Carrier`]: the
/// lines of `traceparent`, `tracestate` and `baggage`, borrowed from `bytes` unless a JSON escape
/// forces a copy. The same input is accepted and rejected, and each of these keys has the same
/// lines, as [`super::Carrier::from_json_bytes_with_limits`] gives.
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

/// Whether `c` ends the plain run of a JSON string: the closing quote, an escape, a control
/// character.
#[inline]
fn ends_plain_run(c: u8) -> bool {
    c == b'"' || c == b'\\' || c < 0x20
}

/// The length of the plain run at the start of `bytes`: the offset of the first byte that
/// [`ends_plain_run`], or `bytes.len()`. Eight bytes at a time, as one `u64` (the strings of a
/// carrier are mostly long ids and plain lists, and a byte-by-byte scan was the larger part of
/// reading one). In each word a byte is flagged where it is zero after `^ '"'` or `^ '\\'`, or
/// below 0x20: the subtraction's borrow can only flag bytes above a byte already flagged, so
/// the lowest flag is exact.
#[inline]
fn plain_run(bytes: &[u8]) -> usize {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    let mut chunks = bytes.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let Ok(word) = <[u8; 8]>::try_from(chunk).map(u64::from_le_bytes) else {
            break;
        };
        let quote = word ^ (ONES * u64::from(b'"'));
        let backslash = word ^ (ONES * u64::from(b'\\'));
        let stops = ((quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (word.wrapping_sub(ONES * 0x20) & !word))
            & HIGH;
        if stops != 0 {
            // Little-endian: the lowest bits are the first byte.
            return offset + (stops.trailing_zeros() / 8) as usize;
        }
        offset += 8;
    }
    let rest = chunks.remainder();
    offset
        + rest
            .iter()
            .position(|&c| ends_plain_run(c))
            .unwrap_or(rest.len())
}

/// The lines of one propagation header in a JSON carrier.
#[derive(Debug, Default)]
pub(crate) enum JsonLines<'a> {
    /// No such key, an empty array, or a value of an ignored type.
    #[default]
    Absent,
    /// A string.
    One(Cow<'a, str>),
    /// An array of strings.
    Many(Vec<Cow<'a, str>>),
}

/// `traceparent`, `tracestate` and `baggage` of a JSON carrier.
#[derive(Debug, Default)]
pub(crate) struct PropagationLines<'a> {
    pub(crate) traceparent: JsonLines<'a>,
    pub(crate) tracestate: JsonLines<'a>,
    pub(crate) baggage: JsonLines<'a>,
}

/// The value of one top-level key while parsing.
enum Slot {
    /// Lines of a string or an array of strings (possibly none).
    Lines(Lines),
    /// A value of another type: the key is ignored, but keeps its position for a later duplicate.
    Ignored,
}

struct Parser<'a> {
    text: &'a str,
    b: &'a [u8],
    pos: usize,
    depth_limit: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn err(&self, reason: &'static str) -> CarrierError {
        CarrierError::InvalidJson {
            offset: self.pos,
            reason,
        }
    }

    fn too_deep(&self) -> CarrierError {
        CarrierError::TooDeep {
            limit: self.depth_limit,
        }
    }

    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn expect(&mut self, byte: u8, reason: &'static str) -> Result<(), CarrierError> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.err(reason))
        }
    }

    /// Walks the top-level object (level 1), the cursor on its `{`: `member` is called with each
    /// key, the cursor on its value, and must consume that value.
    fn object_members(
        &mut self,
        mut member: impl FnMut(&mut Self, Cow<'a, str>) -> Result<(), CarrierError>,
    ) -> Result<(), CarrierError> {
        if self.depth_limit < 1 {
            return Err(self.too_deep());
        }
        self.pos += 1;
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.skip_ws();
            if self.peek() != Some(b'"') {
                return Err(self.err("expected a string key"));
            }
            let key = self.string_cow()?;
            self.skip_ws();
            self.expect(b':', "expected ':' after a key")?;
            self.skip_ws();
            member(self, key)?;
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(self.err("expected ',' or '}' in an object")),
            }
        }
    }

    /// Parses the top-level object into the carrier's entries.
    fn top_object(&mut self) -> Result<Vec<(String, Lines)>, CarrierError> {
        let mut slots: LastWins<Slot> = LastWins::with_capacity(0);
        self.object_members(|p, key| {
            let slot = p.member_value()?;
            slots.insert(key, slot);
            Ok(())
        })?;
        Ok(slots
            .into_entries()
            .into_iter()
            .filter_map(|(k, slot)| match slot {
                Slot::Lines(lines) if !lines.is_empty() => Some((k, lines)),
                _ => None,
            })
            .collect())
    }

    /// [`Parser::top_object`] keeping only the propagation headers, borrowed where possible.
    fn top_object_propagation(&mut self) -> Result<PropagationLines<'a>, CarrierError> {
        let mut found = PropagationLines::default();
        self.object_members(|p, key| {
            // Python dict semantics: the last value of a repeated key wins.
            let slot = match key.as_ref() {
                "traceparent" => &mut found.traceparent,
                "tracestate" => &mut found.tracestate,
                "baggage" => &mut found.baggage,
                _ => return p.skip_value(1),
            };
            *slot = p.member_lines()?;
            Ok(())
        })?;
        Ok(found)
    }

    /// [`Parser::member_value`] as borrowed lines.
    fn member_lines(&mut self) -> Result<JsonLines<'a>, CarrierError> {
        match self.peek() {
            Some(b'"') => Ok(JsonLines::One(self.string_cow()?)),
            Some(b'[') => {
                if self.depth_limit < 2 {
                    return Err(self.too_deep());
                }
                self.pos += 1;
                let mut lines = Some(Vec::new());
                self.skip_ws();
                if self.peek() == Some(b']') {
                    self.pos += 1;
                    return Ok(JsonLines::Absent);
                }
                loop {
                    self.skip_ws();
                    match (&mut lines, self.peek()) {
                        (Some(list), Some(b'"')) => list.push(self.string_cow()?),
                        (None, Some(b'"')) => self.string(None)?,
                        _ => {
                            lines = None;
                            self.skip_value(2)?;
                        }
                    }
                    self.skip_ws();
                    match self.peek() {
                        Some(b',') => self.pos += 1,
                        Some(b']') => {
                            self.pos += 1;
                            break;
                        }
                        _ => return Err(self.err("expected ',' or ']' in an array")),
                    }
                }
                Ok(match lines {
                    Some(mut list) if list.len() == 1 => {
                        list.pop().map_or(JsonLines::Absent, JsonLines::One)
                    }
                    Some(list) if !list.is_empty() => JsonLines::Many(list),
                    _ => JsonLines::Absent,
                })
            }
            _ => {
                self.skip_value(1)?;
                Ok(JsonLines::Absent)
            }
        }
    }

    /// A JSON string, the cursor on its opening quote: borrowed from the input unless it holds
    /// an escape.
    fn string_cow(&mut self) -> Result<Cow<'a, str>, CarrierError> {
        let start = self.pos;
        let text: &'a str = self.text;
        // Common case: no escape and no control character before the closing quote.
        let bytes = self.b;
        // Where the plain run stops (the end of the input when it never does).
        let end = bytes
            .get(start + 1..)
            .map_or(bytes.len(), |rest| start + 1 + plain_run(rest));
        if bytes.get(end) == Some(&b'"') {
            self.pos = end + 1;
            // Cut at ASCII bytes, so on character boundaries.
            return Ok(Cow::Borrowed(text.get(start + 1..end).unwrap_or_default()));
        }
        let mut owned = String::new();
        self.string(Some(&mut owned))?;
        Ok(Cow::Owned(owned))
    }

    /// Parses the value of a top-level key (level 2 if it is a container).
    fn member_value(&mut self) -> Result<Slot, CarrierError> {
        // An empty array, like a value of another type, leaves the key absent but keeps its
        // position for a later duplicate.
        Ok(match self.member_lines()? {
            JsonLines::Absent => Slot::Ignored,
            JsonLines::One(line) => Slot::Lines(Lines::One(line.into_owned())),
            JsonLines::Many(lines) => Slot::Lines(Lines::from_vec(
                lines.into_iter().map(Cow::into_owned).collect(),
            )),
        })
    }

    /// Validates one JSON value held in a container at level `outer` (0 for the top level),
    /// without keeping it. Iterative: nesting is bounded by the depth limit, not the call stack.
    fn skip_value(&mut self, outer: usize) -> Result<(), CarrierError> {
        // Open containers below `outer`: `true` for an object, `false` for an array.
        let mut stack: Vec<bool> = Vec::new();
        'value: loop {
            self.skip_ws();
            match self.peek() {
                Some(open @ (b'{' | b'[')) => {
                    if outer + stack.len() + 1 > self.depth_limit {
                        return Err(self.too_deep());
                    }
                    let is_object = open == b'{';
                    stack.push(is_object);
                    self.pos += 1;
                    self.skip_ws();
                    let close = if is_object { b'}' } else { b']' };
                    if self.peek() == Some(close) {
                        self.pos += 1;
                        stack.pop();
                    } else {
                        if is_object {
                            self.object_key()?;
                        }
                        continue 'value;
                    }
                }
                Some(b'"') => self.string(None)?,
                Some(b'-' | b'0'..=b'9') => self.number()?,
                Some(b't') => self.literal(b"true")?,
                Some(b'f') => self.literal(b"false")?,
                Some(b'n') => self.literal(b"null")?,
                Some(b'N' | b'I') => return Err(self.err("NaN and Infinity are not JSON")),
                Some(_) => return Err(self.err("expected a JSON value")),
                None => return Err(self.err("unexpected end of input")),
            }
            // After a complete value: close containers or move on to the next element.
            loop {
                let Some(&is_object) = stack.last() else {
                    return Ok(());
                };
                self.skip_ws();
                match self.peek() {
                    Some(b',') => {
                        self.pos += 1;
                        if is_object {
                            self.skip_ws();
                            self.object_key()?;
                        }
                        continue 'value;
                    }
                    Some(b'}') if is_object => {
                        self.pos += 1;
                        stack.pop();
                    }
                    Some(b']') if !is_object => {
                        self.pos += 1;
                        stack.pop();
                    }
                    _ if is_object => return Err(self.err("expected ',' or '}' in an object")),
                    _ => return Err(self.err("expected ',' or ']' in an array")),
                }
            }
        }
    }

    /// A key and its `:` inside an object being skipped, the cursor on the key.
    fn object_key(&mut self) -> Result<(), CarrierError> {
        if self.peek() != Some(b'"') {
            return Err(self.err("expected a string key"));
        }
        self.string(None)?;
        self.skip_ws();
        self.expect(b':', "expected ':' after a key")
    }

    fn literal(&mut self, word: &'static [u8]) -> Result<(), CarrierError> {
        if self.b.get(self.pos..self.pos + word.len()) == Some(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(self.err("invalid literal"))
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - start
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    fn number(&mut self) -> Result<(), CarrierError> {
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => {
                self.pos += 1;
                if let Some(b'0'..=b'9') = self.peek() {
                    return Err(self.err("leading zero in a number"));
                }
            }
            Some(b'1'..=b'9') => {
                self.digits();
            }
            Some(b'I') => return Err(self.err("NaN and Infinity are not JSON")),
            _ => return Err(self.err("expected a digit")),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.err("expected a digit after '.'"));
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.err("expected a digit in the exponent"));
            }
        }
        Ok(())
    }

    fn hex4(&mut self) -> Result<u32, CarrierError> {
        let mut v = 0u32;
        for _ in 0..4 {
            let d = match self.peek() {
                Some(c @ b'0'..=b'9') => c - b'0',
                Some(c @ b'a'..=b'f') => c - b'a' + 10,
                Some(c @ b'A'..=b'F') => c - b'A' + 10,
                _ => return Err(self.err("invalid \\u escape")),
            };
            v = (v << 4) | u32::from(d);
            self.pos += 1;
        }
        Ok(v)
    }

    /// A string, the cursor on its opening quote; decoded into `out` when given.
    fn string(&mut self, mut out: Option<&mut String>) -> Result<(), CarrierError> {
        self.pos += 1;
        loop {
            let run_start = self.pos;
            self.pos += self.b.get(run_start..).map_or(0, plain_run);
            if let Some(s) = out.as_deref_mut() {
                // Cut at ASCII bytes only, so always on character boundaries.
                s.push_str(self.text.get(run_start..self.pos).unwrap_or_default());
            }
            match self.peek() {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(b'\\') => {
                    let escape_at = self.pos;
                    self.pos += 1;
                    let c = match self.peek() {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            self.pos += 1;
                            let unit = self.hex4()?;
                            let cp = match unit {
                                0xd800..=0xdbff => {
                                    if self.b.get(self.pos..self.pos + 2) != Some(b"\\u") {
                                        return Err(self.lone_surrogate(escape_at));
                                    }
                                    self.pos += 2;
                                    let low = self.hex4()?;
                                    if !(0xdc00..=0xdfff).contains(&low) {
                                        return Err(self.lone_surrogate(escape_at));
                                    }
                                    0x1_0000 + ((unit - 0xd800) << 10) + (low - 0xdc00)
                                }
                                0xdc00..=0xdfff => return Err(self.lone_surrogate(escape_at)),
                                _ => unit,
                            };
                            let Some(c) = char::from_u32(cp) else {
                                return Err(self.lone_surrogate(escape_at));
                            };
                            if let Some(s) = out.as_deref_mut() {
                                s.push(c);
                            }
                            continue;
                        }
                        _ => return Err(self.err("invalid escape")),
                    };
                    self.pos += 1;
                    if let Some(s) = out.as_deref_mut() {
                        s.push(c);
                    }
                }
                Some(_) => return Err(self.err("control character in a string")),
                None => return Err(self.err("unterminated string")),
            }
        }
    }

    fn lone_surrogate(&self, at: usize) -> CarrierError {
        CarrierError::InvalidJson {
            offset: at,
            reason: "lone surrogate escape",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{ends_plain_run, plain_run};
    use proptest::prelude::*;

    /// The plain run byte by byte: what [`plain_run`] must find, eight bytes at a time.
    fn plain_run_bytewise(bytes: &[u8]) -> usize {
        bytes
            .iter()
            .position(|&c| ends_plain_run(c))
            .unwrap_or(bytes.len())
    }

    /// Every byte value at every position of three words and a tail, after bytes that come
    /// close to a stop (a space, `!`, `#`, `[`, `]`, DEL, 0x80, 0xff) and before other stops,
    /// whose borrows must not flag a byte below them.
    #[test]
    fn the_run_stops_at_the_first_quote_backslash_or_control_byte_in_any_position() {
        let near = [b' ', b'!', b'#', b'[', b']', 0x7f, 0x80, 0xff];
        for len in 0..27 {
            for at in 0..len {
                for byte in 0..=255u8 {
                    let mut bytes: Vec<u8> = (0..len).map(|i| near[i % near.len()]).collect();
                    bytes[at] = byte;
                    // Stops after `at` too: each kind in a later word.
                    for (i, stop) in [(at + 1, b'"'), (at + 9, 0), (at + 17, b'\\')] {
                        if let Some(b) = bytes.get_mut(i) {
                            *b = stop;
                        }
                    }
                    assert_eq!(
                        plain_run(&bytes),
                        plain_run_bytewise(&bytes),
                        "byte {byte:#04x} at {at} of {len}"
                    );
                }
            }
        }
    }

    proptest! {
        #[test]
        fn the_run_is_the_same_eight_bytes_at_a_time(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            prop_assert_eq!(plain_run(&bytes), plain_run_bytewise(&bytes));
        }

        #[test]
        fn the_run_is_the_same_over_string_like_text(bytes in proptest::collection::vec(prop_oneof![
            8 => 0x20u8..0x7f,
            1 => Just(b'"'),
            1 => Just(b'\\'),
            1 => 0u8..0x20,
            2 => 0x80u8..=0xff,
        ], 0..80)) {
            prop_assert_eq!(plain_run(&bytes), plain_run_bytewise(&bytes));
        }
    }
}
