//! [`Carrier`]: the JSON carrier, an ordered map from a key to its lines.

use opentelemetry::propagation::{Extractor, Injector};

use super::error::CarrierError;
use super::json;
use super::lines::Lines;
use crate::limits::Limits;

/// The JSON carrier: an ordered map from a key to one or more string lines (several header lines
/// of one name), as sent in NCCL bytes and Ray-style remote calls (docs/propagation-rules.md#carriers, docs/propagation-rules.md#json-byte-format).
///
/// Keys are exact and case-sensitive, as in Python. Keys keep their insertion order; replacing the
/// value of an existing key keeps its position (Python `dict` semantics). Every key holds at least
/// one line.
///
/// Encoding ([`Carrier::to_json_bytes`]) produces exactly Python's `json.dumps(carrier)`: a key
/// with one line is a JSON string, a key with several lines a JSON array of strings. Decoding
/// ([`Carrier::from_json_bytes`]) is strict JSON within [`Limits`]; values that are neither a
/// string nor an array of strings are ignored.
///
/// ```
/// use lens_core::carrier::Carrier;
///
/// let mut carrier = Carrier::new();
/// carrier.insert("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
/// carrier.insert("baggage", "k=v\u{e9}");
/// carrier.append("baggage", "k2=v2");
/// assert_eq!(
///     carrier.to_json_bytes(),
///     br#"{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "baggage": ["k=v\u00e9", "k2=v2"]}"#
/// );
///
/// let back = Carrier::from_json_bytes(&carrier.to_json_bytes())?;
/// assert_eq!(back, carrier);
/// assert_eq!(back.get("baggage"), Some("k=v\u{e9}"));
/// assert_eq!(back.get("Baggage"), None);
/// # Ok::<(), lens_core::carrier::CarrierError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Carrier {
    pub(super) entries: Vec<(String, Lines)>,
}

impl Carrier {
    /// An empty carrier.
    pub fn new() -> Self {
        Carrier {
            entries: Vec::new(),
        }
    }

    /// An empty carrier with room for `keys` keys.
    pub fn with_capacity(keys: usize) -> Self {
        Carrier {
            entries: Vec::with_capacity(keys),
        }
    }

    fn position(&self, key: &str) -> Option<usize> {
        self.entries.iter().position(|(k, _)| k == key)
    }

    /// The first line of `key` (exact, case-sensitive match).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, lines)| lines.as_slice().first())
            .map(String::as_str)
    }

    /// All lines of `key` (exact, case-sensitive match), in order.
    pub fn get_all(&self, key: &str) -> Option<&[String]> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, lines)| lines.as_slice())
            .filter(|lines| !lines.is_empty())
    }

    /// Sets `key` to the single line `value`, replacing all its lines. An existing key keeps its
    /// position; a new key goes last.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<String>) {
        let key = key.into();
        let value = value.into();
        match self.position(&key) {
            Some(i) => self.entries[i].1 = Lines::One(value),
            None => self.entries.push((key, Lines::One(value))),
        }
    }

    /// Adds `value` as another line of `key` (a new key goes last).
    pub fn append(&mut self, key: impl Into<String>, value: impl Into<String>) {
        let key = key.into();
        let value = value.into();
        match self.position(&key) {
            Some(i) => self.entries[i].1.push(value),
            None => self.entries.push((key, Lines::One(value))),
        }
    }

    /// Removes `key`, returning its lines.
    pub fn remove(&mut self, key: &str) -> Option<Vec<String>> {
        self.position(key).map(|i| match self.entries.remove(i).1 {
            Lines::One(line) => vec![line],
            Lines::Many(lines) => lines,
        })
    }

    /// The keys and their lines, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[String])> {
        self.entries
            .iter()
            .map(|(k, lines)| (k.as_str(), lines.as_slice()))
    }

    /// The number of keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the carrier holds no key.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The carrier as Python's `json.dumps(carrier)` encodes it (docs/propagation-rules.md#json-byte-format): `{}` when empty,
    /// separators `", "` and `": "`, non-ASCII as lowercase `\uXXXX` escapes.
    pub fn to_json_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_json(&mut out);
        out
    }

    /// Appends [`Carrier::to_json_bytes`] to `out`.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        json::write_carrier(&self.entries, out);
    }

    /// Decodes a JSON carrier within the default [`Limits`] (docs/propagation-rules.md#carriers, docs/propagation-rules.md#limits).
    pub fn from_json_bytes(bytes: &[u8]) -> Result<Carrier, CarrierError> {
        Self::from_json_bytes_with_limits(bytes, &Limits::DEFAULT)
    }

    /// Decodes a JSON carrier within `limits` (docs/propagation-rules.md#carriers, docs/propagation-rules.md#limits).
    ///
    /// Input longer than [`Limits::carrier_bytes`], not UTF-8 (a byte-order mark included), not
    /// strict JSON (`NaN`, `Infinity`, lone surrogate escapes, leading zeros, trailing garbage),
    /// nested deeper than [`Limits::carrier_depth`] anywhere, or whose top-level value is not an
    /// object is rejected whole. A string value is one line, an array of strings several lines (an
    /// empty array is the same as no key); any other value is ignored for its key. A repeated key:
    /// the last value wins, at the position where the key first appeared; if that last value is
    /// of an ignored type, the key is absent.
    pub fn from_json_bytes_with_limits(
        bytes: &[u8],
        limits: &Limits,
    ) -> Result<Carrier, CarrierError> {
        json::parse_carrier(bytes, limits).map(|entries| Carrier { entries })
    }
}

impl Injector for Carrier {
    /// Same as [`Carrier::insert`].
    fn set(&mut self, key: &str, value: String) {
        match self.position(key) {
            Some(i) => self.entries[i].1 = Lines::One(value),
            None => self.entries.push((key.to_owned(), Lines::One(value))),
        }
    }

    fn reserve(&mut self, additional: usize) {
        // A hint only: never abort on an absurd one.
        let _ = self.entries.try_reserve(additional);
    }
}

impl Extractor for Carrier {
    /// Same as [`Carrier::get`].
    fn get(&self, key: &str) -> Option<&str> {
        Carrier::get(self, key)
    }

    fn keys(&self) -> Vec<&str> {
        self.entries.iter().map(|(k, _)| k.as_str()).collect()
    }

    /// All lines of `key`, not only the first.
    fn get_all(&self, key: &str) -> Option<Vec<&str>> {
        Carrier::get_all(self, key).map(|lines| lines.iter().map(String::as_str).collect())
    }
}

/// Collects pairs with [`Carrier::insert`]: a later pair with the same key replaces the earlier
/// value (at the earlier position); it is not added as another line.
impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for Carrier {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut carrier = Carrier::new();
        carrier.extend(iter);
        carrier
    }
}

/// Adds pairs with [`Carrier::insert`] (a repeated key replaces, it does not append).
impl<K: Into<String>, V: Into<String>> Extend<(K, V)> for Carrier {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}
