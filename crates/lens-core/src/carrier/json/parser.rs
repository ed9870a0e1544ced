//! The JSON parser behind decoding: objects, strings, numbers and literals, within the depth
//! limit.

use super::propagation_lines::{JsonLines, PropagationLines};
use super::scan::plain_run;
use crate::carrier::error::CarrierError;
use crate::carrier::last_wins::LastWins;
use crate::carrier::lines::Lines;
use std::borrow::Cow;

/// The value of one top-level key while parsing.
enum Slot {
    /// Lines of a string or an array of strings (possibly none).
    Lines(Lines),
    /// A value of another type: the key is ignored, but keeps its position for a later duplicate.
    Ignored,
}

pub(super) struct Parser<'a> {
    pub(super) text: &'a str,
    pub(super) b: &'a [u8],
    pub(super) pos: usize,
    pub(super) depth_limit: usize,
}

impl<'a> Parser<'a> {
    pub(super) fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    pub(super) fn err(&self, reason: &'static str) -> CarrierError {
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

    pub(super) fn skip_ws(&mut self) {
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
    pub(super) fn top_object(&mut self) -> Result<Vec<(String, Lines)>, CarrierError> {
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
    pub(super) fn top_object_propagation(&mut self) -> Result<PropagationLines<'a>, CarrierError> {
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
    pub(super) fn skip_value(&mut self, outer: usize) -> Result<(), CarrierError> {
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
