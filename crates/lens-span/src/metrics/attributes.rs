//! The bounded set of metric attributes one call records, kept inline.

use opentelemetry::{Key, KeyValue, StringValue, Value};

use super::kinds::{Instruments, MAX_ATTRIBUTES};

/// The value of one metric attribute, in 24 bytes (a `Value` takes 32, for arrays no metric
/// attribute has): text or an integer, the only kinds the conventions give these keys.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Slot {
    Text(StringValue),
    Int(i64),
}

impl Slot {
    pub(super) fn of(value: &Value) -> Slot {
        match value {
            Value::String(text) => Slot::Text(text.clone()),
            Value::I64(n) => Slot::Int(*n),
            Value::Bool(b) => Slot::Text(StringValue::from(if *b { "true" } else { "false" })),
            // No metric attribute is one: kept as text rather than lost.
            other => Slot::Text(StringValue::from(other.to_string())),
        }
    }

    pub(super) fn into_value(self) -> Value {
        match self {
            Slot::Text(text) => Value::String(text),
            Slot::Int(n) => Value::I64(n),
        }
    }
}

/// The metric attributes of one call, inline: the value of each of its kind's keys
/// ([`Instruments::keys`]) that is set. Recorded in the keys' order, the same for every call.
pub(super) struct Attributes {
    pub(super) kind: Instruments,
    pub(super) values: [Option<Slot>; MAX_ATTRIBUTES],
}

impl Attributes {
    pub(super) fn new(kind: Instruments) -> Self {
        Attributes {
            kind,
            values: [const { None }; MAX_ATTRIBUTES],
        }
    }

    /// Sets `key` to `value` when it is one of the kind's metric attributes (replaced when set
    /// again).
    pub(super) fn set(&mut self, key: &str, value: &Value) {
        if let Some(i) = self.kind.slot(key) {
            self.values[i] = Some(Slot::of(value));
        }
    }

    pub(super) fn remove(&mut self, key: &str) {
        if let Some(i) = self.kind.slot(key) {
            self.values[i] = None;
        }
    }

    pub(super) fn get(&self, key: &str) -> Option<&Slot> {
        self.values[self.kind.slot(key)?].as_ref()
    }

    /// The set attributes as key-values, in the keys' order, cloned (a clone of a value of a
    /// span attribute shares its text: lens's values are static or reference-counted), with
    /// `keep` choosing among the keys.
    pub(super) fn key_values(
        &self,
        keep: impl Fn(&str) -> bool,
    ) -> ([KeyValue; MAX_ATTRIBUTES], usize) {
        let mut kvs: [KeyValue; MAX_ATTRIBUTES] = std::array::from_fn(|_| placeholder());
        let mut n = 0;
        for (key, slot) in self.kind.keys().iter().zip(&self.values) {
            if let Some(slot) = slot
                && keep(key)
            {
                kvs[n] = KeyValue::new(Key::from_static_str(key), slot.clone().into_value());
                n += 1;
            }
        }
        (kvs, n)
    }

    /// The set attributes as key-values, in the keys' order, moved out (nothing cloned).
    pub(super) fn take_key_values(&mut self) -> ([KeyValue; MAX_ATTRIBUTES], usize) {
        let mut kvs: [KeyValue; MAX_ATTRIBUTES] = std::array::from_fn(|_| placeholder());
        let mut n = 0;
        for (key, slot) in self.kind.keys().iter().zip(&mut self.values) {
            if let Some(slot) = slot.take() {
                kvs[n] = KeyValue::new(Key::from_static_str(key), slot.into_value());
                n += 1;
            }
        }
        (kvs, n)
    }
}

/// A key-value that fills an unused place of an array (nothing allocated).
pub(super) fn placeholder() -> KeyValue {
    KeyValue::new(Key::from_static_str(""), Value::Bool(false))
}

/// The attributes of `http.server.active_requests` among `kvs` (the method and the scheme are
/// static text: nothing allocated).
pub(super) fn active_attributes(kvs: &[KeyValue]) -> ([KeyValue; 2], usize) {
    let mut pair = [placeholder(), placeholder()];
    let mut n = 0;
    for kv in kvs {
        if Instruments::keeps_active(kv.key.as_str()) && n < pair.len() {
            pair[n] = kv.clone();
            n += 1;
        }
    }
    (pair, n)
}
