//! [`BaggageEntry`]: one baggage member as lens keeps it, and the header it writes for a list of
//! them.

use super::member::{member_len, write_member};
use super::percent::encoded_len;

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
    pub(super) fn with_parts(
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
    pub(super) fn replace(&mut self, value: &str, write_properties: impl FnOnce(&mut String)) {
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
    pub(super) fn encoded_len(&self) -> usize {
        member_len(
            self.key(),
            encoded_len(self.value()),
            self.properties().len(),
        )
    }

    /// Appends this member, as lens sends it, to `out`.
    pub(super) fn write(&self, out: &mut String) {
        write_member(out, self.key(), self.value(), self.properties());
    }
}

/// Appends the header lens sends for `entries`: each member as [`write_member`] writes it,
/// joined by `,`.
pub(super) fn write_entries(entries: &[BaggageEntry], out: &mut String) {
    for (i, entry) in entries.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        entry.write(out);
    }
}
