//! The one baggage parser (docs/propagation-rules.md#baggage, docs/propagation-rules.md#limits): every path (lens's list, extract straight into
//! opentelemetry's `Baggage`, header lines, JSON carriers) runs [`parse_into`], which applies the
//! grammar ([`scan_member`]), the limits and the duplicate rule once, and builds the header lens
//! sends; only where the members go differs ([`Sink`]).

use std::borrow::Cow;

use opentelemetry::baggage::{Baggage, BaggageMetadata};

use super::entry::BaggageEntry;
use super::index::KeyIndex;
use super::issue::{BaggageIssue, BaggageIssueReason};
use super::keys::otel_key;
use super::member::{
    Scanned, ScannedMember, member_len, member_text, scan_member, write_member, write_properties,
};
use super::percent::{decode_value, encoded_len};
use crate::lexical::trim_ows;
use crate::limits::Limits;

/// Most entries opentelemetry's `Baggage` holds.
pub(crate) const OTEL_BAGGAGE_MAX: usize = 64;

/// Where [`parse_into`] puts the members it keeps.
pub(super) trait Sink {
    /// The position of the kept member with this key and its length in the header lens sends;
    /// `Err(())` when this sink cannot take a repeated key (parsing gives up).
    fn find(&self, key: &str) -> Result<Option<(usize, usize)>, ()>;
    /// Whether `key` repeats a kept member that [`Sink::find`] does not report (a sink that
    /// finds repeats only when it keeps them); asked only where parsing stops at a limit.
    fn repeats(&self, _key: &str) -> bool {
        false
    }
    /// Members kept.
    fn len(&self) -> usize;
    /// Keeps a new member (properties raw, known valid); `false` when the sink cannot take it
    /// (parsing gives up).
    fn push(
        &mut self,
        key: &str,
        value: Cow<'_, str>,
        properties: Option<&str>,
        props_len: usize,
    ) -> bool;
    /// Gives the member at `position` (found by [`Sink::find`]) a new value and properties.
    fn replace(&mut self, position: usize, value: &str, properties: Option<&str>);
    /// Writes the header lens sends for every member kept (after a [`Sink::replace`]).
    fn write_header(&self, out: &mut String);
}

/// The header being built: a plain slice of the first line while its members are already what
/// lens sends and follow each other after a bare `,`; written member by member after that.
struct HeaderBuilder<'a> {
    slice: Option<(&'a str, usize, usize)>,
    text: String,
    /// Bytes to reserve once the header is written member by member.
    hint: usize,
}

impl<'a> HeaderBuilder<'a> {
    #[inline(always)]
    fn push(
        &mut self,
        line: &'a str,
        first_line: bool,
        first: bool,
        m: &ScannedMember,
        value: &str,
        canonical: bool,
    ) {
        let extends_slice = match self.slice {
            None => first && first_line,
            Some((_, _, end)) => first_line && m.key.0 == end + 1,
        };
        if canonical && extends_slice {
            let start = self.slice.map_or(m.key.0, |(_, start, _)| start);
            self.slice = Some((line, start, m.end));
            return;
        }
        if self.text.capacity() == 0 {
            self.text.reserve(self.hint.max(trim_ows(line).len()));
        }
        if let Some((l, a, b)) = self.slice.take() {
            self.text.push_str(l.get(a..b).unwrap_or_default());
        }
        if !first {
            self.text.push(',');
        }
        let key = line.get(m.key.0..m.key.1).unwrap_or_default();
        let properties = m.properties.and_then(|(a, b)| line.get(a..b));
        if m.scan.reserved == 0 {
            // Only unreserved bytes: the value is sent as it came.
            self.text.push_str(key);
            self.text.push('=');
            self.text.push_str(value);
            if let Some(props) = properties {
                self.text.push(';');
                write_properties(props, &mut self.text);
            }
        } else {
            write_member(&mut self.text, key, value, properties.unwrap_or_default());
        }
    }

    fn finish(self) -> SentHeader<'a> {
        match self.slice {
            Some((line, start, end)) => SentHeader::Slice(line.get(start..end).unwrap_or_default()),
            None => SentHeader::Built(self.text),
        }
    }
}

/// The header lens sends for the members [`parse_into`] kept: most often a slice of the first
/// line, copied only where the caller keeps it (and as it keeps it); else written member by member.
pub(crate) enum SentHeader<'a> {
    /// The members kept are this part of the first line, as it came.
    Slice(&'a str),
    /// Written member by member.
    Built(String),
}

impl SentHeader<'_> {
    /// The header as its own `String`.
    pub(crate) fn into_string(self) -> String {
        match self {
            SentHeader::Slice(text) => text.to_owned(),
            SentHeader::Built(text) => text,
        }
    }

    /// Whether no member was kept.
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            SentHeader::Slice(text) => text.is_empty(),
            SentHeader::Built(text) => text.is_empty(),
        }
    }
}

/// Parses baggage lines (several lines are one list) into `sink` and returns the header lens
/// sends for what was kept; `None` when the sink gave up. Invalid members are reported and
/// dropped one by one; the first member that would break a limit is reported and it and
/// everything after it are dropped (docs/propagation-rules.md#baggage). A member is decoded only once it is known that
/// its encoded form could fit, so nothing is allocated in proportion to hostile input.
pub(super) fn parse_into<'a, S: Sink>(
    lines: impl IntoIterator<Item = &'a str>,
    limits: &Limits,
    plus_as_space: bool,
    sink: &mut S,
    report: &mut impl FnMut(BaggageIssue<'a>),
) -> Option<SentHeader<'a>> {
    let mut header = HeaderBuilder {
        slice: None,
        text: String::new(),
        hint: 0,
    };
    // Bytes of the header lens would send for the members kept.
    let mut size = 0usize;
    // A repeated key changed a member in place: the header is rebuilt at the end.
    let mut dirty = false;
    'lines: for (line_no, line) in lines.into_iter().enumerate() {
        if line_no == 0 {
            header.hint = trim_ows(line).len().min(limits.baggage_bytes);
        }
        let mut pos = 0;
        while pos <= line.len() {
            let (scanned, next) = scan_member(line, pos, plus_as_space);
            pos = next;
            let m = match scanned {
                Scanned::Empty => continue,
                Scanned::Invalid(start, reason) => {
                    report(BaggageIssue {
                        member: member_text(line, start),
                        reason,
                    });
                    continue;
                }
                Scanned::Member(m) => m,
            };
            let issue = |reason| BaggageIssue {
                member: member_text(line, m.key.0),
                reason,
            };
            let key = line.get(m.key.0..m.key.1).unwrap_or_default();
            let raw_value = line.get(m.value.0..m.value.1).unwrap_or_default();
            let existing = sink.find(key).ok()?;
            // Size of the header without the member being replaced, plus the separator for a
            // new one.
            let base = match existing {
                Some((_, old_len)) => size.saturating_sub(old_len),
                None => {
                    if sink.len() >= limits.baggage_members {
                        if sink.repeats(key) {
                            return None;
                        }
                        report(issue(BaggageIssueReason::TooManyMembers));
                        break 'lines;
                    }
                    size + usize::from(sink.len() > 0)
                }
            };
            // Each raw byte, or each 3-byte escape, encodes to at least one byte: a member that
            // cannot fit is refused before it is decoded.
            let lower_bound = member_len(key, raw_value.len().div_ceil(3), m.properties_len);
            if base + lower_bound > limits.baggage_bytes {
                if existing.is_none() && sink.repeats(key) {
                    return None;
                }
                report(issue(BaggageIssueReason::TooLarge));
                break 'lines;
            }
            let mut canonical = m.canonical;
            let (value, encoded) = if m.scan.needs_decoding {
                let (decoded, exact) = decode_value(raw_value, plus_as_space);
                // Canonical escapes re-encode to themselves when they decode to UTF-8.
                canonical &= exact;
                let len = if canonical {
                    raw_value.len()
                } else {
                    encoded_len(&decoded)
                };
                (Cow::Owned(decoded), len)
            } else {
                (
                    Cow::Borrowed(raw_value),
                    raw_value.len() + 2 * m.scan.reserved,
                )
            };
            let new_size = base + member_len(key, encoded, m.properties_len);
            if new_size > limits.baggage_bytes {
                if existing.is_none() && sink.repeats(key) {
                    return None;
                }
                report(issue(BaggageIssueReason::TooLarge));
                break 'lines;
            }
            size = new_size;
            let properties = m.properties.and_then(|(a, b)| line.get(a..b));
            match existing {
                Some((position, _)) => {
                    sink.replace(position, &value, properties);
                    dirty = true;
                }
                None => {
                    if !dirty {
                        header.push(line, line_no == 0, sink.len() == 0, &m, &value, canonical);
                    }
                    if !sink.push(key, value, properties, m.properties_len) {
                        return None;
                    }
                }
            }
        }
    }
    if dirty {
        let mut text = String::with_capacity(size);
        sink.write_header(&mut text);
        return Some(SentHeader::Built(text));
    }
    Some(header.finish())
}

/// Appends the normalized form of a member's raw properties (known valid), when it has any.
fn write_raw_properties(properties: Option<&str>, out: &mut String) {
    if let Some(props) = properties {
        write_properties(props, out);
    }
}

/// Members kept as lens's own list, with the index that finds a repeated key.
#[derive(Default)]
pub(super) struct ListSink {
    pub(super) entries: Vec<BaggageEntry>,
    index: KeyIndex,
}

impl Sink for ListSink {
    fn find(&self, key: &str) -> Result<Option<(usize, usize)>, ()> {
        Ok(self.index.find(&self.entries, key).and_then(|position| {
            let entry = self.entries.get(position)?;
            Some((position, entry.encoded_len()))
        }))
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    fn push(
        &mut self,
        key: &str,
        value: Cow<'_, str>,
        properties: Option<&str>,
        props_len: usize,
    ) -> bool {
        let entry = BaggageEntry::with_parts(key, &value, props_len, |out| {
            write_raw_properties(properties, out);
        });
        self.entries.push(entry);
        self.index.pushed(&self.entries);
        true
    }

    fn replace(&mut self, position: usize, value: &str, properties: Option<&str>) {
        if let Some(entry) = self.entries.get_mut(position) {
            entry.replace(value, |out| write_raw_properties(properties, out));
        }
    }

    fn write_header(&self, out: &mut String) {
        super::entry::write_entries(&self.entries, out);
    }
}

/// Members put straight into opentelemetry's `Baggage`: one allocation per value and
/// properties (what `Baggage` itself needs), and per key unless [`otel_key`] borrows it. Gives up on a repeated key (opentelemetry's map
/// cannot say where the key first appeared), a 65th member, or an entry opentelemetry refuses.
/// A repeated key is found by the insert itself (the map does not grow), not by a lookup first.
#[derive(Default)]
pub(crate) struct OtelSink {
    pub(crate) otel: Baggage,
    count: usize,
}

impl Sink for OtelSink {
    fn find(&self, _key: &str) -> Result<Option<(usize, usize)>, ()> {
        Ok(None)
    }

    fn repeats(&self, key: &str) -> bool {
        self.otel.get(key).is_some()
    }

    fn len(&self) -> usize {
        self.count
    }

    #[inline]
    fn push(
        &mut self,
        key: &str,
        value: Cow<'_, str>,
        properties: Option<&str>,
        props_len: usize,
    ) -> bool {
        let metadata = match properties {
            Some(_) => {
                let mut normalized = String::with_capacity(props_len);
                write_raw_properties(properties, &mut normalized);
                BaggageMetadata::from(normalized)
            }
            None => BaggageMetadata::default(),
        };
        self.otel
            .insert_with_metadata(otel_key(key), value.into_owned(), metadata);
        self.count += 1;
        self.otel.len() == self.count
    }

    fn replace(&mut self, _position: usize, _value: &str, _properties: Option<&str>) {
        // Never called: `find` never reports a kept member (a repeat makes `push` give up).
    }

    fn write_header(&self, _out: &mut String) {
        // Never called: without `replace`, the header is never rebuilt.
    }
}

/// What extract keeps of baggage lines when opentelemetry's `Baggage` can hold it all:
/// that `Baggage` and the header lens sends (which [`BaggageList::parse`](super::BaggageList::parse)
/// turns back into the same list). `None` when it cannot (a repeated key, more than 64 members,
/// an entry opentelemetry refuses): then the caller builds lens's list.
pub(crate) fn parse_to_otel<'a>(
    lines: &[&'a str],
    limits: &Limits,
    plus_as_space: bool,
) -> Option<(Baggage, SentHeader<'a>)> {
    let mut sink = OtelSink::default();
    let header = parse_into(
        lines.iter().copied(),
        limits,
        plus_as_space,
        &mut sink,
        &mut |_| {},
    )?;
    Some((sink.otel, header))
}

#[cfg(test)]
mod tests {
    //! [`parse_to_otel`] is extract's fast path: where it gives up, extract parses lens's list
    //! instead and builds the same Context, so only these tests see which path ran.
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::parse_to_otel;
    use crate::Limits;

    /// Key, value and metadata of one opentelemetry entry.
    type Entry = (String, String, String);

    fn entries(lines: &[&str], limits: &Limits) -> Option<(Vec<Entry>, String)> {
        let (otel, header) = parse_to_otel(lines, limits, false)?;
        let header = header.into_string();
        let mut entries: Vec<_> = otel
            .iter()
            .map(|(k, (v, m))| {
                (
                    k.as_str().to_owned(),
                    v.as_str().to_owned(),
                    m.as_str().to_owned(),
                )
            })
            .collect();
        entries.sort();
        Some((entries, header))
    }

    fn entry(k: &str, v: &str, m: &str) -> Entry {
        (k.to_owned(), v.to_owned(), m.to_owned())
    }

    #[test]
    fn every_member_opentelemetry_can_hold_goes_straight_into_its_baggage() {
        let got = entries(
            &["user=alice%20smith , tier=gold;p1; p2=x", "job=pre"],
            &Limits::DEFAULT,
        );
        assert_eq!(
            got,
            Some((
                vec![
                    entry("job", "pre", ""),
                    entry("tier", "gold", "p1;p2=x"),
                    entry("user", "alice smith", ""),
                ],
                "user=alice%20smith,tier=gold;p1;p2=x,job=pre".to_owned()
            ))
        );
    }

    #[test]
    fn a_member_past_the_member_limit_is_dropped_on_the_fast_path_too() {
        let limits = Limits::DEFAULT.with_baggage_members(2);
        assert_eq!(
            entries(&["a=1,b=2,c=3"], &limits),
            Some((
                vec![entry("a", "1", ""), entry("b", "2", "")],
                "a=1,b=2".to_owned()
            ))
        );
    }

    #[test]
    fn a_repeated_key_or_a_65th_member_leaves_it_to_lens_list() {
        assert_eq!(entries(&["a=1,b=2,a=3"], &Limits::DEFAULT), None);
        // At the limit, a repeated key is still a repeat (its new value would win).
        let limits = Limits::DEFAULT.with_baggage_members(2);
        assert_eq!(entries(&["a=1,b=2,a=3"], &limits), None);
        let many: Vec<String> = (0..65).map(|i| format!("k{i}=v")).collect();
        assert_eq!(entries(&[many.join(",").as_str()], &Limits::DEFAULT), None);
        let most: Vec<String> = (0..64).map(|i| format!("k{i}=v")).collect();
        let (kept, _) = entries(&[most.join(",").as_str()], &Limits::DEFAULT).unwrap();
        assert_eq!(kept.len(), 64);
    }
}
