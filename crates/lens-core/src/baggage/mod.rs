//! W3C Baggage codec: parsing incoming `baggage` header lines and building the header lens sends
//! (docs/propagation-rules.md#baggage, docs/propagation-rules.md#limits and the baggage rows of docs/propagation-rules.md#differences-from-nemo-lens).
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

use std::fmt;

use crate::Limits;
use crate::lexical::is_token;

mod index;
mod keys;
mod member;
mod otel;
mod parse;
mod percent;

pub(crate) use otel::{header_from_otel, list_from_otel, to_otel_baggage};
pub(crate) use parse::{SentHeader, parse_to_otel};
pub use percent::encode_value;

use member::{member_len, properties_len, write_member, write_properties};
use parse::{ListSink, parse_into};
use percent::encoded_len;

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
        write_member(out, self.key(), self.value(), self.properties());
    }
}

/// Ordered baggage together with the `baggage` header lens would send for it, kept up to date.
///
/// Members keep the order in which they were received or set; a repeated key keeps its first
/// position and takes the last value. The list never holds more than the [`Limits`] it was built
/// or changed with allow (docs/propagation-rules.md#baggage, docs/propagation-rules.md#limits).
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

/// The docs/propagation-rules.md#baggage rule that made the parser drop a member.
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
                 taken literally (docs/propagation-rules.md#baggage)"
            }
            Self::MissingEquals => {
                "a baggage member must be `key=value`, and this one has no `=` (docs/propagation-rules.md#baggage)"
            }
            Self::InvalidValueCharacter => {
                "a raw space inside the value, `\"`, `,`, `;`, `\\`, a control or a non-ASCII \
                 character is not allowed in a baggage value, so the member is dropped \
                 (docs/propagation-rules.md#baggage)"
            }
            Self::InvalidProperty => {
                "every baggage property after the value must be `key` or `key=value` with a \
                 token key (docs/propagation-rules.md#baggage)"
            }
            Self::TooManyMembers => {
                "baggage keeps at most the member limit (180 by default); the first member \
                 over it and every member after it are dropped (docs/propagation-rules.md#baggage)"
            }
            Self::TooLarge => {
                "the baggage header lens would send is limited (8192 bytes by default); the \
                 first member that would break it and every member after it are dropped \
                 (docs/propagation-rules.md#baggage)"
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
    /// every member after it are dropped (docs/propagation-rules.md#baggage). `plus_as_space` decodes `+` in values as
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
        let mut sink = ListSink::default();
        let header = parse_into(lines, limits, plus_as_space, &mut sink, &mut report)
            .map(SentHeader::into_string)
            .unwrap_or_default();
        BaggageList {
            entries: sink.entries,
            header,
        }
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
        write_entries(&self.entries, &mut self.header);
    }
}

impl<'a> IntoIterator for &'a BaggageList {
    type Item = &'a BaggageEntry;
    type IntoIter = std::slice::Iter<'a, BaggageEntry>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter()
    }
}

/// Appends the header lens sends for `entries`: each member as [`write_member`] writes it,
/// joined by `,`.
fn write_entries(entries: &[BaggageEntry], out: &mut String) {
    for (i, entry) in entries.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        entry.write(out);
    }
}
