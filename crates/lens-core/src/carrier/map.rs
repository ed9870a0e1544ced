//! Plain string maps as carriers (docs/propagation-rules.md#carriers).

use opentelemetry::propagation::{Extractor, Injector};
use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;

/// Plain string maps: keys exact and case-sensitive, as in Python (`Traceparent` is not
/// `traceparent`).
///
/// opentelemetry's own `Injector`/`Extractor` for `HashMap` lowercases keys; this wrapper does
/// not. It reads through `MapCarrier(&map)` or `MapCarrier(&mut map)` and writes through
/// `MapCarrier(&mut map)`, for `HashMap<String, String, S>` and `BTreeMap<String, String>`.
///
/// ```
/// use lens_core::carrier::MapCarrier;
/// use opentelemetry::propagation::{Extractor, Injector};
/// use std::collections::HashMap;
///
/// let mut map = HashMap::new();
/// MapCarrier(&mut map).set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".to_owned());
/// map.insert("Baggage".to_owned(), "k=v".to_owned());
///
/// let carrier = MapCarrier(&map);
/// assert!(carrier.get("traceparent").is_some());
/// assert_eq!(carrier.get("baggage"), None); // exact keys only
/// assert_eq!(carrier.get("Baggage"), Some("k=v"));
/// ```
#[derive(Debug)]
pub struct MapCarrier<M>(pub M);

impl<S: BuildHasher> Extractor for MapCarrier<&HashMap<String, String, S>> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

impl<S: BuildHasher> Extractor for MapCarrier<&mut HashMap<String, String, S>> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

impl Extractor for MapCarrier<&BTreeMap<String, String>> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

impl Extractor for MapCarrier<&mut BTreeMap<String, String>> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

impl<S: BuildHasher> Injector for MapCarrier<&mut HashMap<String, String, S>> {
    /// Inserts, replacing the value of an existing key. One hash per call: hashing the key a
    /// second time to spare its allocation costs more than the allocation.
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_owned(), value);
    }

    fn reserve(&mut self, additional: usize) {
        // A hint only: never abort on an absurd one.
        let _ = self.0.try_reserve(additional);
    }
}

impl Injector for MapCarrier<&mut BTreeMap<String, String>> {
    /// Overwrites the value of an existing key in place (no key allocation), else inserts.
    fn set(&mut self, key: &str, value: String) {
        match self.0.get_mut(key) {
            Some(slot) => *slot = value,
            None => {
                self.0.insert(key.to_owned(), value);
            }
        }
    }
}
