//! W3C Baggage codec: parsing incoming `baggage` header lines and building the header lens sends
//! (SPEC.md §3, §8 and the baggage rows of §9).
//!
//! [`BaggageList`] keeps the members in order together with the exact `baggage` header value lens
//! would send for them, updated on every change, so injecting costs nothing but a copy.
//!
//! ```
//! use lens_core::Limits;
//! use lens_core::baggage::BaggageList;
//!
//! let limits = Limits::default();
//! let mut list = BaggageList::parse(["user=alice, job=a%20b;p1 ; p2 = x"], &limits, false);
//! assert_eq!(list.get("job").map(|e| e.value()), Some("a b"));
//! assert_eq!(list.header(), "user=alice,job=a%20b;p1;p2=x");
//!
//! list.set("rank", "3", "", &limits)?;
//! list.remove("user");
//! assert_eq!(list.header(), "job=a%20b;p1;p2=x,rank=3");
//! # Ok::<(), lens_core::baggage::BaggageError>(())
//! ```
//!
//! Cost: parsing examines every byte at most a small constant number of times, stops at the first
//! member that would break a limit, and allocates nothing in proportion to the input beyond the
//! limits (a member is decoded only once it is known that its encoded form could fit).

use std::borrow::Cow;
use std::fmt;

use opentelemetry::baggage::{Baggage, BaggageMetadata};

use crate::Limits;
use crate::lexical::{split_byte, split_once_byte, trim_ows};

/// One baggage member: a key, its percent-decoded value and its properties (metadata).
///
/// ```
/// use lens_core::Limits;
/// use lens_core::baggage::BaggageList;
///
/// let list = BaggageList::parse(["k=a%2Bb;ttl=3"], &Limits::default(), false);
/// let entry = &list.entries()[0];
/// assert_eq!((entry.key(), entry.value(), entry.properties()), ("k", "a+b", "ttl=3"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BaggageEntry {
    /// Key, value and properties back to back: one allocation per member on the hot path.
    text: String,
    key_len: usize,
    value_len: usize,
}

impl BaggageEntry {
    /// Builds an entry; `write_properties` appends the (normalized) properties.
    fn with_parts(
        key: &str,
        value: &str,
        properties_len: usize,
        write_properties: impl FnOnce(&mut String),
    ) -> Self {
        let mut text = String::with_capacity(key.len() + value.len() + properties_len);
        text.push_str(key);
        text.push_str(value);
        write_properties(&mut text);
        BaggageEntry {
            text,
            key_len: key.len(),
            value_len: value.len(),
        }
    }

    /// Replaces the value and the properties, keeping the key.
    fn replace(&mut self, value: &str, write_properties: impl FnOnce(&mut String)) {
        self.text.truncate(self.key_len);
        self.text.push_str(value);
        self.value_len = value.len();
        write_properties(&mut self.text);
    }

    /// The key, exactly as received or set (an HTTP token, never percent-decoded).
    pub fn key(&self) -> &str {
        self.text.get(..self.key_len).unwrap_or_default()
    }

    /// The value, percent-decoded.
    pub fn value(&self) -> &str {
        self.text
            .get(self.key_len..self.key_len + self.value_len)
            .unwrap_or_default()
    }

    /// The properties (metadata): the `;`-separated properties after the value, without the
    /// leading `;`, each trimmed of spaces and tabs (also around its `=`), joined by `;`
    /// (for example `p1=x;p2`); `""` when there are none. Sent on as they are.
    pub fn properties(&self) -> &str {
        self.text
            .get(self.key_len + self.value_len..)
            .unwrap_or_default()
    }

    /// Bytes this member takes in the header lens sends.
    fn encoded_len(&self) -> usize {
        member_len(
            self.key(),
            encoded_len(self.value()),
            self.properties().len(),
        )
    }

    /// Appends this member, as lens sends it, to `out`.
    fn write(&self, out: &mut String) {
        out.push_str(self.key());
        out.push('=');
        encode_value(self.value(), out);
        let properties = self.properties();
        if !properties.is_empty() {
            out.push(';');
            out.push_str(properties);
        }
    }
}

/// Ordered baggage together with the `baggage` header lens would send for it, kept up to date.
///
/// Members keep the order in which they were received or set; a repeated key keeps its first
/// position and takes the last value. The list never holds more than the [`Limits`] it was built
/// or changed with allow (SPEC.md §3, §8).
///
/// ```
/// use lens_core::Limits;
/// use lens_core::baggage::BaggageList;
///
/// let limits = Limits::default();
/// let list = BaggageList::parse(["a=1, b=x y", "a=2,c=%C3%A9"], &limits, false);
/// // `b` has a raw space inside its value: only that member is dropped.
/// let pairs: Vec<_> = list.iter().map(|e| (e.key(), e.value())).collect();
/// assert_eq!(pairs, [("a", "2"), ("c", "é")]);
/// assert_eq!(list.header(), "a=2,c=%C3%A9");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BaggageList {
    entries: Vec<BaggageEntry>,
    header: String,
}

/// Why a member was dropped while parsing (for `lens inspect` to explain rejections).
///
/// ```
/// use lens_core::Limits;
/// use lens_core::baggage::{BaggageIssue, BaggageIssueReason, BaggageList};
///
/// let mut issues = Vec::new();
/// let list = BaggageList::parse_reporting(
///     ["a b=1, c=2"],
///     &Limits::default(),
///     false,
///     |issue| issues.push(issue),
/// );
/// assert_eq!(list.header(), "c=2");
/// assert_eq!(
///     issues,
///     [BaggageIssue { member: "a b=1", reason: BaggageIssueReason::InvalidKey }]
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BaggageIssue<'a> {
    /// The raw member text, spaces and tabs around it removed.
    pub member: &'a str,
    /// Why it was dropped.
    pub reason: BaggageIssueReason,
}

impl fmt::Display for BaggageIssue<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "baggage member `{}` dropped: {}",
            self.member, self.reason
        )
    }
}

/// The SPEC.md §3 rule that made the parser drop a member.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BaggageIssueReason {
    /// The key is empty or not an HTTP token.
    InvalidKey,
    /// The member has no `=` between key and value.
    MissingEquals,
    /// The value holds a raw character outside the baggage value octets.
    InvalidValueCharacter,
    /// A property after the value is not `key`, or `key = value`, with a token key.
    InvalidProperty,
    /// Keeping the member would exceed the member limit; it and every later member are dropped.
    TooManyMembers,
    /// Keeping the member would make the header too long; it and every later member are dropped.
    TooLarge,
}

impl fmt::Display for BaggageIssueReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::InvalidKey => {
                "a baggage key must be an HTTP token (letters, digits and !#$%&'*+-.^_`|~), \
                 taken literally (SPEC.md §3)"
            }
            Self::MissingEquals => {
                "a baggage member must be `key=value`, and this one has no `=` (SPEC.md §3)"
            }
            Self::InvalidValueCharacter => {
                "a raw space inside the value, `\"`, `,`, `;`, `\\`, a control or a non-ASCII \
                 character is not allowed in a baggage value, so the member is dropped \
                 (SPEC.md §3)"
            }
            Self::InvalidProperty => {
                "every baggage property after the value must be `key` or `key=value` with a \
                 token key (SPEC.md §3)"
            }
            Self::TooManyMembers => {
                "baggage keeps at most the member limit (180 by default); the first member \
                 over it and every member after it are dropped (SPEC.md §3)"
            }
            Self::TooLarge => {
                "the baggage header lens would send is limited (8192 bytes by default); the \
                 first member that would break it and every member after it are dropped \
                 (SPEC.md §3)"
            }
        })
    }
}

/// Why [`BaggageList::set`] refused a change; the list is left unchanged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BaggageError {
    /// The key is empty or not an HTTP token (RFC 7230 tchar).
    #[error("invalid baggage key {0:?}: a key must be a non-empty HTTP token")]
    InvalidKey(String),
    /// The properties are not a `;`-separated list of `key` or `key=value` properties.
    #[error(
        "invalid baggage properties {0:?}: expected `key` or `key=value` parts separated by `;`"
    )]
    InvalidProperties(String),
    /// The change would exceed the member limit.
    #[error("baggage would exceed {limit} members")]
    TooManyMembers {
        /// The member limit in force.
        limit: usize,
    },
    /// The change would make the header lens sends longer than the byte limit.
    #[error("baggage header would exceed {limit} bytes")]
    TooLarge {
        /// The byte limit in force.
        limit: usize,
    },
}

impl BaggageList {
    /// An empty list; its header is `""`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses `baggage` header lines (several lines are one list) under `limits`.
    ///
    /// Invalid members are dropped one by one; the first member that would break a limit and
    /// every member after it are dropped (SPEC.md §3). `plus_as_space` decodes `+` in values as
    /// a space. Never panics.
    ///
    /// ```
    /// use lens_core::Limits;
    /// use lens_core::baggage::BaggageList;
    ///
    /// let list = BaggageList::parse(["k=a+b"], &Limits::default(), true);
    /// assert_eq!(list.get("k").map(|e| e.value()), Some("a b"));
    /// assert_eq!(list.header(), "k=a%20b");
    /// ```
    pub fn parse<'a>(
        lines: impl IntoIterator<Item = &'a str>,
        limits: &Limits,
        plus_as_space: bool,
    ) -> BaggageList {
        Self::parse_reporting(lines, limits, plus_as_space, |_| {})
    }

    /// [`BaggageList::parse`], calling `report` for every dropped member, in order.
    ///
    /// Parsing stops at the first member that would break a limit: that member is reported
    /// ([`BaggageIssueReason::TooManyMembers`] or [`BaggageIssueReason::TooLarge`]); the members
    /// after it are dropped without being examined or reported. Empty members are skipped
    /// silently.
    pub fn parse_reporting<'a>(
        lines: impl IntoIterator<Item = &'a str>,
        limits: &Limits,
        plus_as_space: bool,
        mut report: impl FnMut(BaggageIssue<'a>),
    ) -> BaggageList {
        let mut parser = Parser {
            limits,
            plus_as_space,
            list: BaggageList::new(),
            size: 0,
            dirty: false,
            scratch: Vec::new(),
            index: KeyIndex::default(),
        };
        'lines: for line in lines {
            if parser.list.header.capacity() == 0 {
                let hint = trim_ows(line).len().min(limits.baggage_bytes);
                parser.list.header.reserve(hint);
            }
            for member in split_byte(line, b',') {
                if !parser.member(member, &mut report) {
                    break 'lines;
                }
            }
        }
        parser.finish()
    }

    /// The members, in order.
    pub fn entries(&self) -> &[BaggageEntry] {
        &self.entries
    }

    /// Iterates over the members, in order.
    pub fn iter(&self) -> std::slice::Iter<'_, BaggageEntry> {
        self.entries.iter()
    }

    /// The member with this key (compared exactly, case-sensitive).
    pub fn get(&self, key: &str) -> Option<&BaggageEntry> {
        self.entries.iter().find(|e| e.key() == key)
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no members.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Exactly the `baggage` header value lens sends for this list (`""` when empty): members
    /// `key=value;properties` joined by `,`, values percent-encoded with [`encode_value`].
    pub fn header(&self) -> &str {
        &self.header
    }

    /// Sets `key` to `value` (given decoded; encoded on send) with `properties` (`""` for none;
    /// otherwise `;`-separated `key` or `key=value` parts, normalized as
    /// [`BaggageEntry::properties`] describes).
    ///
    /// An existing key keeps its position and gets the new value and properties; a new key goes
    /// last. Refused, leaving the list unchanged, when the key is not an HTTP token, the
    /// properties are invalid, or the result would break `limits`.
    ///
    /// ```
    /// use lens_core::Limits;
    /// use lens_core::baggage::{BaggageError, BaggageList};
    ///
    /// let limits = Limits::default();
    /// let mut list = BaggageList::new();
    /// list.set("user", "Zoë Smith", "", &limits)?;
    /// assert_eq!(list.header(), "user=Zo%C3%AB%20Smith");
    /// assert_eq!(
    ///     list.set("bad key", "v", "", &limits),
    ///     Err(BaggageError::InvalidKey("bad key".into()))
    /// );
    /// # Ok::<(), BaggageError>(())
    /// ```
    pub fn set(
        &mut self,
        key: &str,
        value: &str,
        properties: &str,
        limits: &Limits,
    ) -> Result<(), BaggageError> {
        if !is_token(key) {
            return Err(BaggageError::InvalidKey(key.to_owned()));
        }
        let props_len = if properties.is_empty() {
            0
        } else {
            properties_len(properties)
                .ok_or_else(|| BaggageError::InvalidProperties(properties.to_owned()))?
        };
        let new_len = member_len(key, encoded_len(value), props_len);
        let position = self.entries.iter().position(|e| e.key() == key);
        let new_size = match position.and_then(|i| self.entries.get(i)) {
            Some(old) => self.header.len().saturating_sub(old.encoded_len()) + new_len,
            None => {
                if self.entries.len() >= limits.baggage_members {
                    return Err(BaggageError::TooManyMembers {
                        limit: limits.baggage_members,
                    });
                }
                self.header.len() + usize::from(!self.entries.is_empty()) + new_len
            }
        };
        if new_size > limits.baggage_bytes {
            return Err(BaggageError::TooLarge {
                limit: limits.baggage_bytes,
            });
        }
        let props = |out: &mut String| write_properties(properties, out);
        match position.and_then(|i| self.entries.get_mut(i)) {
            Some(entry) => {
                entry.replace(value, props);
                self.rebuild_header();
            }
            None => {
                let entry = BaggageEntry::with_parts(key, value, props_len, props);
                if !self.header.is_empty() {
                    self.header.push(',');
                }
                entry.write(&mut self.header);
                self.entries.push(entry);
            }
        }
        Ok(())
    }

    /// Removes the member with this key and returns it; `None` when there is none.
    pub fn remove(&mut self, key: &str) -> Option<BaggageEntry> {
        let position = self.entries.iter().position(|e| e.key() == key)?;
        let entry = self.entries.remove(position);
        self.rebuild_header();
        Some(entry)
    }

    fn rebuild_header(&mut self) {
        self.header.clear();
        for (i, entry) in self.entries.iter().enumerate() {
            if i > 0 {
                self.header.push(',');
            }
            entry.write(&mut self.header);
        }
    }
}

impl<'a> IntoIterator for &'a BaggageList {
    type Item = &'a BaggageEntry;
    type IntoIter = std::slice::Iter<'a, BaggageEntry>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter()
    }
}

/// Parsing state: the list so far, the size of the header it would send, and a reusable buffer.
struct Parser<'l> {
    limits: &'l Limits,
    plus_as_space: bool,
    list: BaggageList,
    /// Bytes of the header lens would send for `list.entries`.
    size: usize,
    /// `list.header` is stale (a duplicate key changed a member in place) and is rebuilt at the end.
    dirty: bool,
    /// Percent-decoding buffer, reused across members.
    scratch: Vec<u8>,
    /// Finds a repeated key without comparing it to every member.
    index: KeyIndex,
}

/// Open-addressing hash index from key to entry position, built only once a list grows past
/// [`KeyIndex::LINEAR`] members (a plain scan is faster below that). Its size follows the number
/// of members kept, so it is bounded by the member limit.
#[derive(Default)]
struct KeyIndex {
    /// Entry position + 1; 0 marks a free slot. The length is 0 or a power of two.
    slots: Vec<u32>,
}

impl KeyIndex {
    /// Lists up to this many members are searched linearly.
    const LINEAR: usize = 8;

    fn hash(key: &str) -> usize {
        // FNV-1a: keys are short, and the index only has to spread them, not resist attack:
        // a collision costs one more key comparison, still bounded by the member limit.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in key.as_bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        // Truncation is fine: only the low bits select a slot.
        h as usize
    }

    fn find(&self, entries: &[BaggageEntry], key: &str) -> Option<usize> {
        if self.slots.is_empty() {
            return entries.iter().position(|e| e.key() == key);
        }
        let mask = self.slots.len() - 1;
        let mut slot = Self::hash(key) & mask;
        loop {
            let position = usize::try_from(*self.slots.get(slot)?)
                .ok()?
                .checked_sub(1)?;
            if entries.get(position).is_some_and(|e| e.key() == key) {
                return Some(position);
            }
            slot = (slot + 1) & mask;
        }
    }

    /// Records that `entries` just gained its last member.
    fn pushed(&mut self, entries: &[BaggageEntry]) {
        let len = entries.len();
        if len <= Self::LINEAR {
            return;
        }
        if self.slots.len() < 2 * len {
            self.slots.clear();
            self.slots.resize((2 * len).next_power_of_two().max(32), 0);
            for i in 0..len {
                self.insert(entries, i);
            }
        } else {
            self.insert(entries, len - 1);
        }
    }

    fn insert(&mut self, entries: &[BaggageEntry], position: usize) {
        let (Some(entry), Ok(stored)) = (entries.get(position), u32::try_from(position + 1)) else {
            return;
        };
        let mask = self.slots.len() - 1;
        let mut slot = Self::hash(entry.key()) & mask;
        while let Some(occupied) = self.slots.get_mut(slot) {
            if *occupied == 0 {
                *occupied = stored;
                return;
            }
            slot = (slot + 1) & mask;
        }
    }
}

/// A syntactically valid member, not yet decoded.
struct RawMember<'a> {
    key: &'a str,
    value: &'a str,
    /// Everything after the first `;` following the value, when there is a `;`.
    properties: Option<&'a str>,
    /// Normalized length of the properties (0 when none).
    properties_len: usize,
}

impl Parser<'_> {
    /// Handles one raw member; `false` when parsing must stop (a limit was reached).
    fn member<'a>(&mut self, raw: &'a str, report: &mut impl FnMut(BaggageIssue<'a>)) -> bool {
        let member = trim_ows(raw);
        if member.is_empty() {
            return true;
        }
        let parsed = match split_member(member) {
            Ok(parsed) => parsed,
            Err(reason) => {
                report(BaggageIssue { member, reason });
                return true;
            }
        };
        let limits = self.limits;
        let position = self.index.find(&self.list.entries, parsed.key);
        let issue = |reason| BaggageIssue { member, reason };
        // Size of the header without the member being replaced, plus the separator for a new one.
        let base = match position.and_then(|i| self.list.entries.get(i)) {
            Some(old) => self.size.saturating_sub(old.encoded_len()),
            None => {
                if self.list.entries.len() >= limits.baggage_members {
                    report(issue(BaggageIssueReason::TooManyMembers));
                    return false;
                }
                self.size + usize::from(!self.list.entries.is_empty())
            }
        };
        // Each raw byte, or each 3-byte escape, encodes to at least one byte: reject a member
        // that cannot fit before decoding it, so nothing is allocated for hostile sizes.
        let lower_bound = member_len(
            parsed.key,
            parsed.value.len().div_ceil(3),
            parsed.properties_len,
        );
        if base + lower_bound > limits.baggage_bytes {
            report(issue(BaggageIssueReason::TooLarge));
            return false;
        }
        let value = decode_value(parsed.value, self.plus_as_space, &mut self.scratch);
        let new_size = base + member_len(parsed.key, encoded_len(&value), parsed.properties_len);
        if new_size > limits.baggage_bytes {
            report(issue(BaggageIssueReason::TooLarge));
            return false;
        }
        self.size = new_size;
        match position.and_then(|i| self.list.entries.get_mut(i)) {
            Some(entry) => {
                entry.replace(&value, |out| {
                    if let Some(props) = parsed.properties {
                        write_properties(props, out);
                    }
                });
                self.dirty = true;
            }
            None => {
                let entry =
                    BaggageEntry::with_parts(parsed.key, &value, parsed.properties_len, |out| {
                        if let Some(props) = parsed.properties {
                            write_properties(props, out);
                        }
                    });
                if !self.dirty {
                    let header = &mut self.list.header;
                    if !header.is_empty() {
                        header.push(',');
                    }
                    entry.write(header);
                }
                self.list.entries.push(entry);
                self.index.pushed(&self.list.entries);
            }
        }
        true
    }

    fn finish(mut self) -> BaggageList {
        if self.dirty {
            self.list.rebuild_header();
        }
        self.list
    }
}

/// Result of one pass over a raw (trimmed) value already split from its member.
#[derive(Clone, Copy)]
struct ValueScan {
    /// Holds a `%` (or a `+` decoded as a space): the decoded value differs from the raw one.
    needs_decoding: bool,
    /// Bytes outside the RFC 3986 unreserved set (each encodes to 3 bytes).
    reserved: usize,
    /// Bytes that stop the raw value from being what lens sends for its decoded value: any
    /// reserved byte other than a `%XX` escape (uppercase hex) of a byte lens escapes too.
    not_canonical: usize,
}

/// Whether the `%` at `at` starts an escape that [`encode_value`] writes exactly so: two
/// uppercase hex digits, for a byte outside the unreserved set.
#[inline]
fn canonical_escape(bytes: &[u8], at: usize) -> bool {
    let digit = |i: usize| match bytes.get(i) {
        Some(&b @ b'0'..=b'9') => Some(b - b'0'),
        Some(&b @ b'A'..=b'F') => Some(b - b'A' + 10),
        _ => None,
    };
    match (digit(at + 1), digit(at + 2)) {
        (Some(hi), Some(lo)) => !is_unreserved(hi << 4 | lo),
        _ => false,
    }
}

/// Byte classes of [`BYTE_CLASS`].
const INVALID: u8 = 0;
const UNRESERVED: u8 = 1;
const OCTET: u8 = 2;
const PERCENT: u8 = 3;
const PLUS: u8 = 4;

/// Every byte's class for [`scan_value`]: not a baggage-octet, RFC 3986 unreserved, another
/// baggage-octet, `%`, `+`.
const BYTE_CLASS: [u8; 256] = {
    let mut t = [INVALID; 256];
    let mut b = 0;
    while b < 256 {
        // `b < 256`, so the cast is exact.
        let byte = b as u8;
        let octet = matches!(byte, 0x21 | 0x23..=0x2B | 0x2D..=0x3A | 0x3C..=0x5B | 0x5D..=0x7E);
        let unreserved = byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~');
        t[b] = if byte == b'%' {
            PERCENT
        } else if byte == b'+' {
            PLUS
        } else if unreserved {
            UNRESERVED
        } else if octet {
            OCTET
        } else {
            INVALID
        };
        b += 1;
    }
    t
};

/// What extract keeps of the baggage lines when no key repeats: opentelemetry's `Baggage`
/// holding every member, and the header lens sends (which [`BaggageList::parse`] turns back
/// into the same list).
pub(crate) struct FastBaggage {
    pub(crate) otel: Baggage,
    pub(crate) header: String,
}

/// Most entries opentelemetry's `Baggage` holds.
pub(crate) const OTEL_BAGGAGE_MAX: usize = 64;

/// One member found by [`scan_member`], as offsets into its line.
struct ScannedMember {
    key: (usize, usize),
    value: (usize, usize),
    scan: ValueScan,
    /// The raw properties after the `;` (up to the next `,`), when there is a `;`.
    properties: Option<(usize, usize)>,
    /// Normalized length of the properties (0 when none).
    properties_len: usize,
    /// Where the member's text ends (before any spaces or tabs that end it).
    end: usize,
    /// The member's text is exactly what lens sends for it: no spaces or tabs inside, a value
    /// that re-encodes to itself, properties already normalized.
    canonical: bool,
}

#[inline]
fn is_ows(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// Index of the first byte at or after `from` that is not a space or tab.
#[inline]
fn skip_ows(bytes: &[u8], mut from: usize) -> usize {
    while bytes.get(from).is_some_and(|&b| is_ows(b)) {
        from += 1;
    }
    from
}

/// Index just after the next `,` at or after `from` (past the end when there is none).
#[inline]
fn next_member(bytes: &[u8], from: usize) -> usize {
    bytes
        .get(from..)
        .and_then(|rest| rest.iter().position(|&b| b == b',').map(|at| from + at + 1))
        .unwrap_or(bytes.len() + 1)
}

/// Scans the member starting at `start` in one pass: `(member, where the next one starts)`.
/// `None` for an empty or invalid member: the same members [`split_member`] rejects.
fn scan_member(line: &str, start: usize, plus_as_space: bool) -> (Option<ScannedMember>, usize) {
    let bytes = line.as_bytes();
    let key_start = skip_ows(bytes, start);
    let mut i = key_start;
    while bytes.get(i).is_some_and(|&b| is_tchar(b)) {
        i += 1;
    }
    let key_end = i;
    i = skip_ows(bytes, i);
    if key_end == key_start || bytes.get(i) != Some(&b'=') {
        return (None, next_member(bytes, i));
    }
    let mut canonical = i == key_end;
    let value_start = skip_ows(bytes, i + 1);
    canonical &= value_start == i + 1;
    let mut scan = ValueScan {
        needs_decoding: false,
        reserved: 0,
        not_canonical: 0,
    };
    i = value_start;
    while let Some(&b) = bytes.get(i) {
        match BYTE_CLASS[usize::from(b)] {
            UNRESERVED => {}
            OCTET => {
                scan.reserved += 1;
                scan.not_canonical += 1;
            }
            PERCENT => {
                scan.needs_decoding = true;
                scan.reserved += 1;
                scan.not_canonical += usize::from(!canonical_escape(bytes, i));
            }
            PLUS => {
                scan.needs_decoding |= plus_as_space;
                scan.reserved += 1;
                scan.not_canonical += 1;
            }
            _ => break,
        }
        i += 1;
    }
    let value_end = i;
    // Escapes are checked here; whether they decode to UTF-8 is known only once decoded.
    canonical &= scan.not_canonical == 0;
    i = skip_ows(bytes, i);
    let member = |properties, properties_len, end, canonical| ScannedMember {
        key: (key_start, key_end),
        value: (value_start, value_end),
        scan,
        properties,
        properties_len,
        end,
        canonical,
    };
    match bytes.get(i) {
        None => (Some(member(None, 0, value_end, canonical)), bytes.len() + 1),
        Some(b',') => (Some(member(None, 0, value_end, canonical)), i + 1),
        Some(b';') => {
            let next = next_member(bytes, i);
            let raw_end = next.saturating_sub(1).min(bytes.len());
            // The member ends before the spaces and tabs that precede its `,`.
            let mut end = raw_end;
            while end > i + 1 && bytes.get(end - 1).is_some_and(|&b| is_ows(b)) {
                end -= 1;
            }
            match line.get(i + 1..end).and_then(properties_len) {
                Some(len) => {
                    let canonical = canonical && i == value_end && len == end - (i + 1);
                    (Some(member(Some((i + 1, end)), len, end, canonical)), next)
                }
                None => (None, next),
            }
        }
        // A raw space inside the value, or a character no value may hold.
        Some(_) => (None, next_member(bytes, i)),
    }
}

/// Parses baggage lines straight into opentelemetry's `Baggage` and lens's header, without
/// building a [`BaggageList`]: one pass over each member, one allocation per key, value and
/// properties (what `Baggage` itself needs) plus the header, which is a plain copy of the line
/// when the line already is what lens sends.
///
/// Gives exactly what `BaggageList::parse` followed by mirroring its first 64 entries gives,
/// or `None` when it cannot (a repeated key, more than 64 members, an entry opentelemetry
/// refuses): then the caller takes that slower path.
pub(crate) fn parse_fast(
    lines: &[&str],
    limits: &Limits,
    plus_as_space: bool,
) -> Option<FastBaggage> {
    let mut otel = Baggage::new();
    let mut header = String::new();
    // While every member so far is canonical and follows the previous one after a bare `,` on
    // the first line, the header is `line[start..end]` and `header` stays empty.
    let mut slice: Option<(&str, usize, usize)> = None;
    let mut size = 0usize;
    let mut count = 0usize;
    for (line_no, line) in lines.iter().enumerate() {
        let mut pos = 0;
        while pos <= line.len() {
            let (member, next) = scan_member(line, pos, plus_as_space);
            pos = next;
            let Some(m) = member else {
                continue;
            };
            let key = line.get(m.key.0..m.key.1).unwrap_or_default();
            let raw_value = line.get(m.value.0..m.value.1).unwrap_or_default();
            // Limits, as `Parser::member` applies them to a new key. A repeated key is judged
            // differently there: leave it to that path.
            let base = size + usize::from(count > 0);
            let stop = count >= limits.baggage_members
                || base + member_len(key, raw_value.len().div_ceil(3), m.properties_len)
                    > limits.baggage_bytes;
            let mut canonical = m.canonical;
            let (value, encoded) = if stop {
                (Cow::Borrowed(raw_value), 0)
            } else if m.scan.needs_decoding {
                // Decoded straight into the String opentelemetry's `Baggage` keeps.
                let (decoded, exact) = decode_value_owned(raw_value, plus_as_space);
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
            if stop || new_size > limits.baggage_bytes {
                return if otel.get(key).is_some() {
                    None
                } else {
                    Some(FastBaggage {
                        otel,
                        header: finish_header(header, slice),
                    })
                };
            }
            size = new_size;
            let extends_slice = match slice {
                None => count == 0 && line_no == 0,
                Some((_, _, end)) => line_no == 0 && m.key.0 == end + 1,
            };
            let properties = m.properties.and_then(|(a, b)| line.get(a..b));
            if canonical && extends_slice {
                let start = slice.map_or(m.key.0, |(_, start, _)| start);
                slice = Some((line, start, m.end));
            } else {
                if header.capacity() == 0 {
                    header.reserve(trim_ows(line).len().min(limits.baggage_bytes));
                }
                if let Some((l, a, b)) = slice.take() {
                    header.push_str(l.get(a..b).unwrap_or_default());
                }
                if !header.is_empty() {
                    header.push(',');
                }
                header.push_str(key);
                header.push('=');
                if m.scan.reserved > 0 {
                    encode_value(&value, &mut header);
                } else {
                    header.push_str(&value);
                }
                if let Some(props) = properties {
                    header.push(';');
                    write_properties(props, &mut header);
                }
                // Later members can no longer extend a slice.
                slice = None;
            }
            let metadata = match properties {
                Some(props) => {
                    let mut normalized = String::with_capacity(m.properties_len);
                    write_properties(props, &mut normalized);
                    BaggageMetadata::from(normalized)
                }
                None => BaggageMetadata::default(),
            };
            otel.insert_with_metadata(key.to_owned(), value.into_owned(), metadata);
            count += 1;
            if otel.len() != count {
                // A repeated key, a 65th member or an entry opentelemetry refused.
                return None;
            }
        }
    }
    Some(FastBaggage {
        otel,
        header: finish_header(header, slice),
    })
}

fn finish_header(header: String, slice: Option<(&str, usize, usize)>) -> String {
    match slice {
        Some((line, start, end)) => line.get(start..end).unwrap_or_default().to_owned(),
        None => header,
    }
}

/// Splits and validates a trimmed, non-empty member without allocating.
fn split_member(member: &str) -> Result<RawMember<'_>, BaggageIssueReason> {
    let Some((key, rest)) = split_once_byte(member, b'=') else {
        return Err(BaggageIssueReason::MissingEquals);
    };
    let key = trim_ows(key);
    if !is_token(key) {
        return Err(BaggageIssueReason::InvalidKey);
    }
    let (value, properties) = match split_once_byte(rest, b';') {
        Some((value, props)) => (value, Some(props)),
        None => (rest, None),
    };
    let value = trim_ows(value);
    if !value.bytes().all(is_value_octet) {
        return Err(BaggageIssueReason::InvalidValueCharacter);
    }
    let properties_len = match properties {
        Some(props) => properties_len(props).ok_or(BaggageIssueReason::InvalidProperty)?,
        None => 0,
    };
    Ok(RawMember {
        key,
        value,
        properties,
        properties_len,
    })
}

/// Bytes of `key=<encoded value>;<properties>` given the encoded value length.
fn member_len(key: &str, encoded_value_len: usize, properties_len: usize) -> usize {
    key.len()
        + 1
        + encoded_value_len
        + if properties_len > 0 {
            1 + properties_len
        } else {
            0
        }
}

/// Walks the `;`-separated properties, giving the normalized pieces to `sink`; `false` when a
/// property is invalid (an empty one included).
fn visit_properties(raw: &str, mut sink: impl FnMut(&str)) -> bool {
    for (i, part) in split_byte(raw, b';').enumerate() {
        let part = trim_ows(part);
        if i > 0 {
            sink(";");
        }
        match split_once_byte(part, b'=') {
            Some((key, value)) => {
                let key = trim_ows(key);
                let value = trim_ows(value);
                if !is_token(key) || !value.bytes().all(is_value_octet) {
                    return false;
                }
                sink(key);
                sink("=");
                sink(value);
            }
            None => {
                if !is_token(part) {
                    return false;
                }
                sink(part);
            }
        }
    }
    true
}

/// Normalized length of valid properties; `None` when invalid.
fn properties_len(raw: &str) -> Option<usize> {
    let mut len = 0;
    visit_properties(raw, |piece| len += piece.len()).then_some(len)
}

/// Appends the normalized form of properties already known to be valid.
fn write_properties(raw: &str, out: &mut String) {
    visit_properties(raw, |piece| out.push_str(piece));
}

/// Percent-decodes a value already known to hold only value octets (so only ASCII).
fn decode_value<'s>(raw: &'s str, plus_as_space: bool, scratch: &'s mut Vec<u8>) -> Cow<'s, str> {
    if !needs_decoding(raw, plus_as_space) {
        return Cow::Borrowed(raw);
    }
    scratch.clear();
    scratch.reserve(raw.len());
    decode_into(raw, plus_as_space, scratch);
    match std::str::from_utf8(scratch) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(lossy(scratch)),
    }
}

/// [`decode_value`] into a `String` of its own: the decoded value, and whether it is the bytes
/// the escapes stand for (`false`: they were not UTF-8, and the value holds U+FFFD for them).
fn decode_value_owned(raw: &str, plus_as_space: bool) -> (String, bool) {
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

fn needs_decoding(raw: &str, plus_as_space: bool) -> bool {
    raw.bytes()
        .any(|b| b == b'%' || (plus_as_space && b == b'+'))
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

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Appends `value` percent-encoded per RFC 3986 to `out`: every byte outside the unreserved set
/// (`A-Z a-z 0-9 - . _ ~`) as `%XX` with uppercase hex, `%` included, a space as `%20`.
///
/// ```
/// let mut out = String::new();
/// lens_core::baggage::encode_value("a b%é", &mut out);
/// assert_eq!(out, "a%20b%25%C3%A9");
/// ```
pub fn encode_value(value: &str, out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    out.reserve(value.len());
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
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0x0f)]));
            used += 1;
        }
        rest = &tail[used..];
    }
}

/// Length of `value` once encoded by [`encode_value`].
fn encoded_len(value: &str) -> usize {
    value
        .bytes()
        .map(|b| if is_unreserved(b) { 1 } else { 3 })
        .sum()
}

/// RFC 3986 unreserved.
fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// RFC 7230 tchar.
#[inline]
fn is_tchar(b: u8) -> bool {
    TCHAR[usize::from(b)]
}

/// Whether each byte is an RFC 7230 tchar: letters, digits and ``!#$%&'*+-.^_`|~``.
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

/// A non-empty RFC 7230 token.
fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(is_tchar)
}

/// W3C baggage-octet: %x21 / %x23-2B / %x2D-3A / %x3C-5B / %x5D-7E.
fn is_value_octet(b: u8) -> bool {
    matches!(b, 0x21 | 0x23..=0x2B | 0x2D..=0x3A | 0x3C..=0x5B | 0x5D..=0x7E)
}
