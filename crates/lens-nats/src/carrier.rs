//! A message's NATS headers ([`async_nats::HeaderMap`]) as a propagation carrier
//! (docs/propagation-rules.md#carriers).

use std::str::FromStr;

use async_nats::header::{HeaderMap, HeaderName, HeaderValue};
use lens_core::{BAGGAGE_HEADER, TRACEPARENT_HEADER, TRACESTATE_HEADER};
use lens_span::MessageCarrier;
use opentelemetry::propagation::{Extractor, Injector};

const TRACEPARENT: HeaderName = HeaderName::from_static(TRACEPARENT_HEADER);
const TRACESTATE: HeaderName = HeaderName::from_static(TRACESTATE_HEADER);
const BAGGAGE: HeaderName = HeaderName::from_static(BAGGAGE_HEADER);

/// NATS message headers as a carrier. Names are exact and case-sensitive, as NATS and nats-py
/// compare them (`Traceparent` is not `traceparent`), with one tolerance: when a message has no
/// `traceparent`, `tracestate` or `baggage` under its exact name, the same name in other case
/// is read (`Traceparent`, `TraceParent`: Go's `propagation.HeaderCarrier` canonicalises names
/// so). Every value of a name is read (NATS headers are multi-valued: two `traceparent` values
/// that differ are invalid, identical repeats count as one; so are values under two spellings).
///
/// - Reading never panics: a name that is not a valid NATS header name is simply absent.
/// - Writing replaces every value of the name; a name or a value NATS would refuse (a control
///   character, `:`, CR or LF) is dropped, never a panic.
///
/// ```
/// use async_nats::HeaderMap;
/// use lens_nats::NatsHeaders;
/// use opentelemetry::propagation::{Extractor, Injector};
///
/// let mut headers = HeaderMap::new();
/// headers.append("baggage", "a=1");
/// headers.append("baggage", "b=2");
/// assert_eq!(NatsHeaders(&headers).get_all("baggage"), Some(vec!["a=1", "b=2"]));
/// assert_eq!(NatsHeaders(&headers).get("Baggage"), None); // exact names
///
/// // What Go's HeaderCarrier writes, read when no exact `traceparent` is there.
/// let mut from_go = HeaderMap::new();
/// from_go.append("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
/// assert_eq!(
///     NatsHeaders(&from_go).get("traceparent"),
///     Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
/// );
///
/// NatsHeaders(&mut headers).set("baggage", "c=3".to_owned());
/// NatsHeaders(&mut headers).set("bad:name", "x".to_owned()); // dropped
/// assert_eq!(headers.get_all("baggage").count(), 1);
/// assert_eq!(headers.len(), 1);
/// ```
#[derive(Debug)]
pub struct NatsHeaders<M>(pub M);

/// The header name for `key`: lens's three without parsing (nor allocating), any other
/// parsed; `None` when NATS would refuse it.
fn name_of(key: &str) -> Option<HeaderName> {
    match key {
        TRACEPARENT_HEADER => Some(TRACEPARENT),
        TRACESTATE_HEADER => Some(TRACESTATE),
        BAGGAGE_HEADER => Some(BAGGAGE),
        _ => HeaderName::from_str(key).ok(),
    }
}

/// Whether `key` is one of the fields read in any case when absent under its exact name.
fn is_propagation_field(key: &str) -> bool {
    matches!(key, TRACEPARENT_HEADER | TRACESTATE_HEADER | BAGGAGE_HEADER)
}

/// Every value of the names that spell `key` in another case (`Traceparent`, `TraceParent`).
fn other_case<'a>(headers: &'a HeaderMap, key: &str) -> impl Iterator<Item = &'a str> {
    headers
        .iter()
        .filter(move |(name, _)| {
            let name: &str = name.as_ref();
            name != key && name.eq_ignore_ascii_case(key)
        })
        .flat_map(|(_, values)| values.iter().map(HeaderValue::as_str))
}

/// Up to this many names, a name is found by comparing it with each (a length and a few bytes
/// each); beyond, through the map's hash (SipHash over the name costs about as much as eight
/// comparisons). A message carries a handful of headers.
const SCAN_UP_TO: usize = 8;

/// The first value of `name` (what `HeaderMap::get` gives, without hashing a small map).
pub(crate) fn value_of<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Option<&'a str> {
    if headers.len() <= SCAN_UP_TO {
        let (_, values) = headers.iter().find(|(key, _)| *key == name)?;
        return values.first().map(HeaderValue::as_str);
    }
    headers.get(name.clone()).map(HeaderValue::as_str)
}

/// Pushes every value of `name` onto `lines` (what `HeaderMap::get_all` gives, without hashing
/// a small map).
fn values_of<'a>(headers: &'a HeaderMap, name: &HeaderName, lines: &mut Vec<&'a str>) {
    if headers.len() <= SCAN_UP_TO {
        if let Some((_, values)) = headers.iter().find(|(key, _)| *key == name) {
            lines.extend(values.iter().map(HeaderValue::as_str));
        }
        return;
    }
    lines.extend(headers.get_all(name.clone()).map(HeaderValue::as_str));
}

fn first<'a>(headers: &'a HeaderMap, key: &str) -> Option<&'a str> {
    let exact = value_of(headers, &name_of(key)?);
    if exact.is_none() && is_propagation_field(key) && !headers.is_empty() {
        return other_case(headers, key).next();
    }
    exact
}

fn all<'a>(headers: &'a HeaderMap, key: &str) -> Option<Vec<&'a str>> {
    let mut lines = Vec::new();
    values_of(headers, &name_of(key)?, &mut lines);
    if lines.is_empty() && is_propagation_field(key) {
        lines.extend(other_case(headers, key));
    }
    if lines.is_empty() { None } else { Some(lines) }
}

fn names(headers: &HeaderMap) -> Vec<&str> {
    headers.iter().map(|(name, _)| name.as_ref()).collect()
}

impl Extractor for NatsHeaders<&HeaderMap> {
    /// The first value of the name.
    fn get(&self, key: &str) -> Option<&str> {
        first(self.0, key)
    }

    fn keys(&self) -> Vec<&str> {
        names(self.0)
    }

    /// Every value of the name; `None` if there is none.
    fn get_all(&self, key: &str) -> Option<Vec<&str>> {
        all(self.0, key)
    }
}

impl Extractor for NatsHeaders<&mut HeaderMap> {
    /// The first value of the name.
    fn get(&self, key: &str) -> Option<&str> {
        first(self.0, key)
    }

    fn keys(&self) -> Vec<&str> {
        names(self.0)
    }

    /// Every value of the name; `None` if there is none.
    fn get_all(&self, key: &str) -> Option<Vec<&str>> {
        all(self.0, key)
    }
}

impl Injector for NatsHeaders<&mut HeaderMap> {
    /// Replaces every value of the name. A name or value NATS would refuse is dropped.
    fn set(&mut self, key: &str, value: String) {
        let Some(name) = name_of(key) else {
            return;
        };
        // Reuses the String's buffer.
        if let Ok(value) = HeaderValue::try_from(value) {
            self.0.insert(name, value);
        }
    }
}

impl MessageCarrier for NatsHeaders<&mut HeaderMap> {
    /// Removes every value of `field`. async-nats's map has no `remove`: the map is rebuilt,
    /// only when the field is there (a caller's stale `traceparent`), which is rare.
    fn remove(&mut self, field: &str) {
        // The headers of a plain `publish` are a new, empty map: nothing to look up or hash.
        if self.0.is_empty() {
            return;
        }
        let Some(name) = name_of(field) else {
            return;
        };
        if self.0.get(name.clone()).is_none() {
            return;
        }
        let mut kept = HeaderMap::new();
        for (key, values) in self.0.iter() {
            if *key != name {
                for value in values {
                    kept.append(key.clone(), value.clone());
                }
            }
        }
        *self.0 = kept;
    }
}
