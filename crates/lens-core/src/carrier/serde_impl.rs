//! `serde` support for [`Carrier`] (feature `serde`).
//!
//! Serialized as a map whose values are a string (one line) or an array of strings (several
//! lines), the shape of [`Carrier::to_json_bytes`]. Deserialized with the acceptance rules of
//! [`Carrier::from_json_bytes`] for values: a value that is neither a string nor an array of
//! strings is ignored (not an error), an empty array is the same as no key, and a repeated key
//! takes its last value at its first position.

use super::{Carrier, Lines as Stored};
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
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

/// A decoded value: its lines, or `None` for a value of an ignored type.
struct Value(Option<Vec<String>>);

/// An element of an array: `Some` for a string, `None` for anything else.
struct Element(Option<String>);

struct ValueVisitor;
struct ElementVisitor;

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
        fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Self::Value, E> {
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

impl<'de> Visitor<'de> for ElementVisitor {
    type Value = Element;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Element, E> {
        Ok(Element(Some(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Element, E> {
        Ok(Element(Some(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Element, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Element(None))
    }

    ignore_scalars!(Element(None));
}

impl<'de> Deserialize<'de> for Element {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ElementVisitor)
    }
}

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string or an array of strings")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value(Some(vec![v.to_owned()])))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value(Some(vec![v])))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut lines = Some(Vec::new());
        while let Some(Element(element)) = seq.next_element::<Element>()? {
            match (&mut lines, element) {
                (Some(list), Some(line)) => list.push(line),
                _ => lines = None,
            }
        }
        Ok(Value(lines))
    }

    ignore_scalars!(Value(None));
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

struct CarrierVisitor;

impl<'de> Visitor<'de> for CarrierVisitor {
    type Value = Carrier;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a map of strings or arrays of strings")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Carrier, A::Error> {
        let mut slots: Vec<(String, Option<Vec<String>>)> = Vec::new();
        while let Some((key, Value(value))) = map.next_entry::<String, Value>()? {
            // Python dict semantics: the last value wins, at the key's first position.
            match slots.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = value,
                None => slots.push((key, value)),
            }
        }
        let entries = slots
            .into_iter()
            .filter_map(|(k, lines)| {
                lines
                    .filter(|l| !l.is_empty())
                    .map(|l| (k, Stored::from_vec(l)))
            })
            .collect();
        Ok(Carrier { entries })
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
impl<'de> Deserialize<'de> for Carrier {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(CarrierVisitor)
    }
}
