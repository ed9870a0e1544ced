//! [`BaggageList`]: ordered baggage and the header lens sends for it, and why a change to it was
//! refused ([`BaggageError`]).

use super::entry::{BaggageEntry, write_entries};
use super::issue::BaggageIssue;
use super::member::{member_len, properties_len, write_properties};
use super::parse::{ListSink, SentHeader, parse_into};
use super::percent::encoded_len;
use crate::lexical::is_token;
use crate::limits::Limits;

#[cfg(doc)]
use super::issue::BaggageIssueReason;
#[cfg(doc)]
use super::percent::encode_value;

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
