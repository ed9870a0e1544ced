//! The OTLP/JSON value forms: `null` as absent, hex ids, 64-bit integers as strings or
//! numbers, enums as integers or names, doubles (with `NaN` and `Infinity`), base64 bytes, and
//! the AnyValue with its key-value lists.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use base64::Engine as _;
use opentelemetry_proto::tonic::common::v1 as otlp_common;
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};

/// `null` or absent: the default.
pub(super) fn nullable<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

#[derive(Deserialize)]
pub(super) struct KeyValue {
    #[serde(default, deserialize_with = "nullable")]
    key: String,
    #[serde(default)]
    value: Option<AnyValue>,
}

#[derive(Default, Deserialize)]
struct KeyValues {
    #[serde(default, deserialize_with = "nullable")]
    values: Vec<KeyValue>,
}

#[derive(Default, Deserialize)]
struct Values {
    #[serde(default, deserialize_with = "nullable")]
    values: Vec<AnyValue>,
}

/// An id in hex; anything else becomes one zero byte (a wrong length: the span is rejected).
#[derive(Default)]
pub(super) struct HexId(pub(super) Vec<u8>);

impl<'de> Deserialize<'de> for HexId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let Some(text) = Option::<Cow<'de, str>>::deserialize(deserializer)? else {
            return Ok(HexId::default());
        };
        if text.len() % 2 != 0 {
            return Ok(HexId(vec![0]));
        }
        let mut out = Vec::with_capacity(text.len() / 2);
        for pair in text.as_bytes().chunks_exact(2) {
            match (
                char::from(pair[0]).to_digit(16),
                char::from(pair[1]).to_digit(16),
            ) {
                (Some(hi), Some(lo)) => out.push(u8::try_from(hi * 16 + lo).unwrap_or(0)),
                _ => return Ok(HexId(vec![0])),
            }
        }
        Ok(HexId(out))
    }
}

/// An integer as a JSON number (a float with no fraction included) or a string.
#[derive(Default)]
pub(super) struct Int<T>(pub(super) T);

pub(super) trait FromJsonInt:
    Sized + Copy + Default + TryFrom<u64> + TryFrom<i64> + std::str::FromStr
{
    const WHAT: &'static str;
    fn from_f64(f: f64) -> Option<Self>;
}

impl FromJsonInt for u64 {
    const WHAT: &'static str = "an unsigned integer (string or number)";
    fn from_f64(f: f64) -> Option<Self> {
        (f.fract() == 0.0 && (0.0..=u64::MAX as f64).contains(&f)).then_some(f as u64)
    }
}

impl FromJsonInt for u32 {
    const WHAT: &'static str = "a 32-bit unsigned integer";
    fn from_f64(f: f64) -> Option<Self> {
        (f.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&f)).then_some(f as u32)
    }
}

impl FromJsonInt for i64 {
    const WHAT: &'static str = "an integer (string or number)";
    fn from_f64(f: f64) -> Option<Self> {
        (f.fract() == 0.0 && (i64::MIN as f64..=i64::MAX as f64).contains(&f)).then_some(f as i64)
    }
}

struct IntVisitor<T>(PhantomData<T>);

impl<'de, T: FromJsonInt> Visitor<'de> for IntVisitor<T> {
    type Value = Int<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::WHAT)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        T::try_from(v)
            .map(Int)
            .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        T::try_from(v)
            .map(Int)
            .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        T::from_f64(v)
            .map(Int)
            .ok_or_else(|| E::invalid_value(de::Unexpected::Float(v), &self))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        v.trim()
            .parse()
            .map(Int)
            .map_err(|_| E::invalid_value(de::Unexpected::Str(v), &self))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Int(T::default()))
    }
}

impl<'de, T: FromJsonInt> Deserialize<'de> for Int<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(IntVisitor(PhantomData))
    }
}

/// The names of an enum's values, index = value.
pub(super) trait Names {
    const NAMES: &'static [&'static str];
}

pub(super) struct SpanKinds;

impl Names for SpanKinds {
    const NAMES: &'static [&'static str] = &[
        "SPAN_KIND_UNSPECIFIED",
        "SPAN_KIND_INTERNAL",
        "SPAN_KIND_SERVER",
        "SPAN_KIND_CLIENT",
        "SPAN_KIND_PRODUCER",
        "SPAN_KIND_CONSUMER",
    ];
}

pub(super) struct StatusCodes;

pub(super) struct SeverityNumbers;

impl Names for SeverityNumbers {
    const NAMES: &'static [&'static str] = &[
        "SEVERITY_NUMBER_UNSPECIFIED",
        "SEVERITY_NUMBER_TRACE",
        "SEVERITY_NUMBER_TRACE2",
        "SEVERITY_NUMBER_TRACE3",
        "SEVERITY_NUMBER_TRACE4",
        "SEVERITY_NUMBER_DEBUG",
        "SEVERITY_NUMBER_DEBUG2",
        "SEVERITY_NUMBER_DEBUG3",
        "SEVERITY_NUMBER_DEBUG4",
        "SEVERITY_NUMBER_INFO",
        "SEVERITY_NUMBER_INFO2",
        "SEVERITY_NUMBER_INFO3",
        "SEVERITY_NUMBER_INFO4",
        "SEVERITY_NUMBER_WARN",
        "SEVERITY_NUMBER_WARN2",
        "SEVERITY_NUMBER_WARN3",
        "SEVERITY_NUMBER_WARN4",
        "SEVERITY_NUMBER_ERROR",
        "SEVERITY_NUMBER_ERROR2",
        "SEVERITY_NUMBER_ERROR3",
        "SEVERITY_NUMBER_ERROR4",
        "SEVERITY_NUMBER_FATAL",
        "SEVERITY_NUMBER_FATAL2",
        "SEVERITY_NUMBER_FATAL3",
        "SEVERITY_NUMBER_FATAL4",
    ];
}

impl Names for StatusCodes {
    const NAMES: &'static [&'static str] =
        &["STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"];
}

/// An enum as its integer value or its name.
pub(super) struct Enum<N>(pub(super) i32, PhantomData<N>);

impl<N> Default for Enum<N> {
    fn default() -> Self {
        Enum(0, PhantomData)
    }
}

struct EnumVisitor<N>(PhantomData<N>);

impl<'de, N: Names> Visitor<'de> for EnumVisitor<N> {
    type Value = Enum<N>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an enum value (an integer or its name)")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        i32::try_from(v)
            .map(|v| Enum(v, PhantomData))
            .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        i32::try_from(v)
            .map(|v| Enum(v, PhantomData))
            .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        N::NAMES
            .iter()
            .position(|name| *name == v)
            .and_then(|i| i32::try_from(i).ok())
            .or_else(|| v.parse().ok())
            .map(|v| Enum(v, PhantomData))
            .ok_or_else(|| E::invalid_value(de::Unexpected::Str(v), &self))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Enum::default())
    }
}

impl<'de, N: Names> Deserialize<'de> for Enum<N> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(EnumVisitor(PhantomData))
    }
}

/// A double as a number, or `"NaN"`, `"Infinity"`, `"-Infinity"` or a number in a string.
pub(super) struct Double(pub(super) f64);

struct DoubleVisitor;

impl Visitor<'_> for DoubleVisitor {
    type Value = Double;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number")
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Double, E> {
        Ok(Double(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Double, E> {
        Ok(Double(v as f64))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Double, E> {
        Ok(Double(v as f64))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Double, E> {
        match v {
            "NaN" => Ok(Double(f64::NAN)),
            "Infinity" => Ok(Double(f64::INFINITY)),
            "-Infinity" => Ok(Double(f64::NEG_INFINITY)),
            other => other
                .trim()
                .parse()
                .map(Double)
                .map_err(|_| E::invalid_value(de::Unexpected::Str(v), &self)),
        }
    }
}

impl<'de> Deserialize<'de> for Double {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(DoubleVisitor)
    }
}

/// Base64 bytes (standard or URL-safe alphabet).
pub(super) struct Base64(pub(super) Vec<u8>);

impl<'de> Deserialize<'de> for Base64 {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = Cow::<'de, str>::deserialize(deserializer)?;
        base64::engine::general_purpose::STANDARD
            .decode(text.as_bytes())
            .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(text.as_bytes()))
            .map(Base64)
            .map_err(|_| de::Error::invalid_value(de::Unexpected::Str(&text), &"base64"))
    }
}

/// An AnyValue: one of its `*Value` fields, or none (`{}`, an empty value).
pub(super) struct AnyValue(pub(super) Option<otlp_common::any_value::Value>);

struct AnyValueVisitor;

impl<'de> Visitor<'de> for AnyValueVisitor {
    type Value = AnyValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an AnyValue object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AnyValue, A::Error> {
        use otlp_common::any_value::Value as P;
        let mut value = None;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            let next = match &*key {
                "stringValue" | "string_value" => {
                    map.next_value::<Option<String>>()?.map(P::StringValue)
                }
                "boolValue" | "bool_value" => map.next_value::<Option<bool>>()?.map(P::BoolValue),
                "intValue" | "int_value" => map
                    .next_value::<Option<Int<i64>>>()?
                    .map(|i| P::IntValue(i.0)),
                "doubleValue" | "double_value" => map
                    .next_value::<Option<Double>>()?
                    .map(|d| P::DoubleValue(d.0)),
                "bytesValue" | "bytes_value" => map
                    .next_value::<Option<Base64>>()?
                    .map(|b| P::BytesValue(b.0)),
                "arrayValue" | "array_value" => map.next_value::<Option<Values>>()?.map(|a| {
                    P::ArrayValue(otlp_common::ArrayValue {
                        values: a.values.into_iter().map(Into::into).collect(),
                    })
                }),
                "kvlistValue" | "kvlist_value" => map.next_value::<Option<KeyValues>>()?.map(|l| {
                    P::KvlistValue(otlp_common::KeyValueList {
                        values: kvs(l.values),
                    })
                }),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    None
                }
            };
            if next.is_some() {
                value = next;
            }
        }
        Ok(AnyValue(value))
    }
}

impl<'de> Deserialize<'de> for AnyValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(AnyValueVisitor)
    }
}

// ---- into the protobuf messages ----

impl From<AnyValue> for otlp_common::AnyValue {
    fn from(v: AnyValue) -> Self {
        otlp_common::AnyValue { value: v.0 }
    }
}

impl From<KeyValue> for otlp_common::KeyValue {
    fn from(kv: KeyValue) -> Self {
        otlp_common::KeyValue {
            key: kv.key,
            value: kv.value.map(Into::into),
            ..Default::default()
        }
    }
}

pub(super) fn kvs(list: Vec<KeyValue>) -> Vec<otlp_common::KeyValue> {
    list.into_iter().map(Into::into).collect()
}
