//! `serde` support for [`Carrier`] and [`CarrierField`] (feature `serde`).
//!
//! Serialized as a map whose values are a string (one line) or an array of strings (several
//! lines), the shape of [`Carrier::to_json_bytes`]. Deserialized with the acceptance rules of
//! [`Carrier::from_json_bytes`] for values: a value that is neither a string nor an array of
//! strings is ignored (not an error), an empty array is the same as no key, and a repeated key
//! takes its last value at its first position. A key that is not a string is ignored with its
//! value. The carrier is rejected whole when it is not a map, when a key or string value is not
//! UTF-8 (a format such as msgpack may hand over such a string as bytes), or when it is larger
//! than [`Limits::carrier_bytes`] counted as its JSON encoding's size (strings unescaped).

use super::error::CarrierError;
use super::json_carrier::Carrier;
use super::last_wins::LastWins;
use super::lines::Lines as Stored;
use crate::limits::Limits;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
use std::borrow::Cow;
use std::fmt;

/// One line or several, serialized as a string or an array of strings.
struct Lines<'a>(&'a [String]);

impl Serialize for Lines<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            [line] => serializer.serialize_str(line),
            lines => lines.serialize(serializer),
        }
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl Serialize for Carrier {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let count = self
            .entries
            .iter()
            .filter(|(_, lines)| !lines.is_empty())
            .count();
        let mut map = serializer.serialize_map(Some(count))?;
        for (key, lines) in &self.entries {
            if !lines.is_empty() {
                map.serialize_entry(key, &Lines(lines.as_slice()))?;
            }
        }
        map.end()
    }
}

/// A string as a format hands it over: text, or bytes (msgpack's non-UTF-8 `str`, or `bin`).
enum Text {
    Str(String),
    /// Bytes that are not UTF-8: the offset of the first bad byte.
    NotUtf8(usize),
    /// Not a string at all (a number, a map, bytes that are UTF-8).
    Other,
}

fn bytes_text(v: &[u8]) -> Text {
    match std::str::from_utf8(v) {
        // `bin` holding text is still not a string: ignored, as JSON ignores a number.
        Ok(_) => Text::Other,
        Err(e) => Text::NotUtf8(e.valid_up_to()),
    }
}

macro_rules! ignore_scalars {
    ($out:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($out)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($out)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($out)
        }
        fn visit_i128<E: de::Error>(self, _: i128) -> Result<Self::Value, E> {
            Ok($out)
        }
        fn visit_u128<E: de::Error>(self, _: u128) -> Result<Self::Value, E> {
            Ok($out)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($out)
        }
        fn visit_char<E: de::Error>(self, _: char) -> Result<Self::Value, E> {
            Ok($out)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($out)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($out)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            IgnoredAny::deserialize(d)?;
            Ok($out)
        }
        fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            IgnoredAny::deserialize(d)?;
            Ok($out)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok($out)
        }
        fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
            IgnoredAny.visit_enum(data)?;
            Ok($out)
        }
    };
}

/// A key or an element of an array: a string, or why it is not one.
struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Text, E> {
        Ok(Text::Str(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Text, E> {
        Ok(Text::Str(v))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Text, E> {
        Ok(bytes_text(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Text, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Text::Other)
    }

    ignore_scalars!(Text::Other);
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TextVisitor)
    }
}

/// A decoded value: one line (no `Vec` of its own), its lines, ignored (another type), or not
/// UTF-8.
enum Value {
    One(String),
    Lines(Vec<String>),
    Ignored,
    NotUtf8(usize),
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string or an array of strings")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::One(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::One(v))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Value, E> {
        Ok(match bytes_text(v) {
            Text::NotUtf8(offset) => Value::NotUtf8(offset),
            _ => Value::Ignored,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut value = Value::Lines(Vec::new());
        while let Some(element) = seq.next_element::<Text>()? {
            match (&mut value, element) {
                (Value::Lines(list), Text::Str(line)) => list.push(line),
                (Value::NotUtf8(_), _) => {}
                (_, Text::NotUtf8(offset)) => value = Value::NotUtf8(offset),
                _ => value = Value::Ignored,
            }
        }
        Ok(value)
    }

    ignore_scalars!(Value::Ignored);
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

/// Reads a map into a carrier within `limits`, consuming the whole map whatever it holds: a
/// rejection is the inner `Err`, so that the data around the map still decodes.
fn read_map<'de, A: MapAccess<'de>>(
    mut map: A,
    limits: &Limits,
) -> Result<Result<Carrier, CarrierError>, A::Error> {
    let mut slots: LastWins<Option<Stored>> = LastWins::with_capacity(map.size_hint().unwrap_or(0));
    // The JSON encoding's size, strings unescaped: `{}`, then per member `"k": v` and `, `.
    let mut size = 2usize;
    let mut rejected: Option<CarrierError> = None;
    while let Some(key) = map.next_key::<Text>()? {
        if rejected.is_some() {
            map.next_value::<IgnoredAny>()?;
            continue;
        }
        let value = map.next_value::<Value>()?;
        let key = match key {
            Text::Str(key) => key,
            Text::NotUtf8(offset) => {
                rejected = Some(CarrierError::NotUtf8 { offset });
                continue;
            }
            Text::Other => continue,
        };
        size = size.saturating_add(key.len() + 6);
        let lines = match value {
            Value::One(line) => {
                size = size.saturating_add(line.len() + 4);
                Some(Stored::One(line))
            }
            Value::Lines(lines) => {
                for line in &lines {
                    size = size.saturating_add(line.len() + 4);
                }
                // An empty array is the same as no key.
                (!lines.is_empty()).then(|| Stored::from_vec(lines))
            }
            Value::Ignored => None,
            Value::NotUtf8(offset) => {
                rejected = Some(CarrierError::NotUtf8 { offset });
                continue;
            }
        };
        if size > limits.carrier_bytes {
            rejected = Some(CarrierError::TooLarge {
                len: size,
                limit: limits.carrier_bytes,
            });
            continue;
        }
        slots.insert(Cow::Owned(key), lines);
    }
    if let Some(error) = rejected {
        return Ok(Err(error));
    }
    let entries = slots
        .into_entries()
        .into_iter()
        .filter_map(|(k, lines)| lines.map(|l| (k, l)))
        .collect();
    Ok(Ok(Carrier { entries }))
}

/// Reads any value as a carrier field: absent (`null`, `nil`, `None`), a carrier, or rejected.
struct FieldVisitor;

impl<'de> Visitor<'de> for FieldVisitor {
    type Value = CarrierField;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map of strings or arrays of strings, or nothing")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<CarrierField, A::Error> {
        Ok(match read_map(map, &Limits::DEFAULT)? {
            Ok(carrier) => CarrierField::Carrier(carrier),
            Err(error) => CarrierField::Rejected(error),
        })
    }

    fn visit_unit<E: de::Error>(self) -> Result<CarrierField, E> {
        Ok(CarrierField::Absent)
    }

    fn visit_none<E: de::Error>(self) -> Result<CarrierField, E> {
        Ok(CarrierField::Absent)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<CarrierField, D::Error> {
        d.deserialize_any(FieldVisitor)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<CarrierField, D::Error> {
        d.deserialize_any(FieldVisitor)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<CarrierField, E> {
        Ok(CarrierField::Rejected(CarrierError::NotAnObject))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<CarrierField, E> {
        Ok(CarrierField::Rejected(match bytes_text(v) {
            Text::NotUtf8(offset) => CarrierError::NotUtf8 { offset },
            _ => CarrierError::NotAnObject,
        }))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<CarrierField, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(CarrierField::Rejected(CarrierError::NotAnObject))
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<CarrierField, E> {
        Ok(CarrierField::Rejected(CarrierError::NotAnObject))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<CarrierField, E> {
        Ok(CarrierField::Rejected(CarrierError::NotAnObject))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<CarrierField, E> {
        Ok(CarrierField::Rejected(CarrierError::NotAnObject))
    }
    fn visit_i128<E: de::Error>(self, _: i128) -> Result<CarrierField, E> {
        Ok(CarrierField::Rejected(CarrierError::NotAnObject))
    }
    fn visit_u128<E: de::Error>(self, _: u128) -> Result<CarrierField, E> {
        Ok(CarrierField::Rejected(CarrierError::NotAnObject))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<CarrierField, E> {
        Ok(CarrierField::Rejected(CarrierError::NotAnObject))
    }
    fn visit_char<E: de::Error>(self, _: char) -> Result<CarrierField, E> {
        Ok(CarrierField::Rejected(CarrierError::NotAnObject))
    }
    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<CarrierField, A::Error> {
        IgnoredAny.visit_enum(data)?;
        Ok(CarrierField::Rejected(CarrierError::NotAnObject))
    }
}

struct CarrierVisitor;

impl<'de> Visitor<'de> for CarrierVisitor {
    type Value = Carrier;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map of strings or arrays of strings")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Carrier, A::Error> {
        read_map(map, &Limits::DEFAULT)?.map_err(de::Error::custom)
    }
}

/// A map, else an error: the whole value fails to decode. [`CarrierField`] never fails.
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl<'de> Deserialize<'de> for Carrier {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(CarrierVisitor)
    }
}

/// A carrier as a field of a message (vLLM's `trace_headers`, a Ray call's `_otel_carrier`):
/// decoding it never fails the message around it.
///
/// What a peer put in the field is one of: nothing (`null`, msgpack `nil`, Python `None`, or the
/// field missing with `#[serde(default)]`), a carrier (a map, read by the rules of
/// [`Carrier`]'s `Deserialize`), or something rejected whole: not a map, a key or string value
/// that is not UTF-8, larger than [`Limits::carrier_bytes`] (the default limits) counted as its
/// JSON encoding's size (docs/propagation-rules.md#json-carrier-rejected). A rejected field is
/// kept as its [`CarrierError`], so that a consumer can record why its span starts a new trace,
/// and the message is still delivered.
///
/// Serialized as the carrier's map, or as nothing (`None`) when absent or rejected.
///
/// ```
/// use lens_core::carrier::{Carrier, CarrierField};
///
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Request {
///     request_id: String,
///     #[serde(default)]
///     trace_headers: CarrierField,
/// }
///
/// let ok: Request = serde_json::from_str(
///     r#"{"request_id": "r1", "trace_headers": {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}"#,
/// )?;
/// assert!(ok.trace_headers.carrier().is_some_and(|c| c.get("traceparent").is_some()));
///
/// // Not a map: the request still decodes, the field says why it was rejected.
/// let odd: Request = serde_json::from_str(r#"{"request_id": "r2", "trace_headers": "oops"}"#)?;
/// assert!(odd.trace_headers.rejection().is_some_and(|e| e.is_not_an_object()));
///
/// let none: Request = serde_json::from_str(r#"{"request_id": "r3", "trace_headers": null}"#)?;
/// assert!(none.trace_headers.is_absent());
/// assert_eq!(serde_json::to_string(&none)?, r#"{"request_id":"r3","trace_headers":null}"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum CarrierField {
    /// No carrier: the field was null or missing.
    #[default]
    Absent,
    /// A carrier, read by the carrier rules.
    Carrier(Carrier),
    /// What the field held was rejected whole, for this reason.
    Rejected(CarrierError),
}

impl CarrierField {
    /// The carrier, when the field held one.
    pub fn carrier(&self) -> Option<&Carrier> {
        match self {
            CarrierField::Carrier(carrier) => Some(carrier),
            _ => None,
        }
    }

    /// Why the field was rejected, when it was.
    pub fn rejection(&self) -> Option<&CarrierError> {
        match self {
            CarrierField::Rejected(error) => Some(error),
            _ => None,
        }
    }

    /// Whether the field held nothing.
    pub fn is_absent(&self) -> bool {
        matches!(self, CarrierField::Absent)
    }
}

impl From<Carrier> for CarrierField {
    fn from(carrier: Carrier) -> Self {
        CarrierField::Carrier(carrier)
    }
}

impl From<Option<Carrier>> for CarrierField {
    fn from(carrier: Option<Carrier>) -> Self {
        carrier.map_or(CarrierField::Absent, CarrierField::Carrier)
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl Serialize for CarrierField {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            CarrierField::Carrier(carrier) => serializer.serialize_some(carrier),
            _ => serializer.serialize_none(),
        }
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl<'de> Deserialize<'de> for CarrierField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(FieldVisitor)
    }
}
