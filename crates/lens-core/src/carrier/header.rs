//! `http::HeaderMap` as a carrier (docs/propagation-rules.md#carriers).

use std::borrow::Cow;

use http::header::{GetAll, HeaderMap, HeaderName, HeaderValue};
use opentelemetry::propagation::{Extractor, Injector};

use crate::propagator::outbound::Outbound;
use crate::propagator::w3c::{BAGGAGE_HEADER, TRACEPARENT_HEADER, TRACESTATE_HEADER};
use crate::traceparent::TraceParent;

const TRACEPARENT: HeaderName = HeaderName::from_static(TRACEPARENT_HEADER);
const TRACESTATE: HeaderName = HeaderName::from_static(TRACESTATE_HEADER);
const BAGGAGE: HeaderName = HeaderName::from_static(BAGGAGE_HEADER);

/// `http::HeaderMap`: names case-insensitive, all lines of a name read.
///
/// Reading (`HeaderCarrier(&headers)` or `HeaderCarrier(&mut headers)`) sees only lines that are
/// visible ASCII; writing (`HeaderCarrier(&mut headers)`) replaces every line of the name, and
/// silently drops a key that is not a valid header name or a value that is not a valid header
/// value.
///
/// ```
/// use http::{HeaderMap, HeaderValue};
/// use lens_core::carrier::HeaderCarrier;
/// use opentelemetry::propagation::{Extractor, Injector};
///
/// let mut headers = HeaderMap::new();
/// headers.append("Baggage", HeaderValue::from_static("a=1"));
/// headers.append("baggage", HeaderValue::from_static("b=2"));
///
/// let carrier = HeaderCarrier(&headers);
/// assert_eq!(carrier.get("BAGGAGE"), Some("a=1"));
/// assert_eq!(carrier.get_all("baggage"), Some(vec!["a=1", "b=2"]));
///
/// HeaderCarrier(&mut headers).set("baggage", "c=3".to_owned());
/// assert_eq!(headers.get_all("baggage").iter().count(), 1);
/// ```
#[derive(Debug)]
pub struct HeaderCarrier<M>(pub M);

/// Every line of `key`; lens's own three names are looked up without parsing the name.
fn lines_of<'a>(headers: &'a HeaderMap, key: &str) -> GetAll<'a, HeaderValue> {
    match key {
        TRACEPARENT_HEADER => headers.get_all(&TRACEPARENT),
        TRACESTATE_HEADER => headers.get_all(&TRACESTATE),
        BAGGAGE_HEADER => headers.get_all(&BAGGAGE),
        _ => headers.get_all(key),
    }
}

fn first_line<'a>(headers: &'a HeaderMap, key: &str) -> Option<&'a str> {
    lines_of(headers, key)
        .iter()
        .find_map(|value| value.to_str().ok())
}

fn all_lines<'a>(headers: &'a HeaderMap, key: &str) -> Option<Vec<&'a str>> {
    let lines: Vec<&str> = lines_of(headers, key)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .collect();
    if lines.is_empty() { None } else { Some(lines) }
}

fn names(headers: &HeaderMap) -> Vec<&str> {
    headers.keys().map(HeaderName::as_str).collect()
}

impl Extractor for HeaderCarrier<&HeaderMap> {
    /// The first line of the name that is visible ASCII.
    fn get(&self, key: &str) -> Option<&str> {
        first_line(self.0, key)
    }

    fn keys(&self) -> Vec<&str> {
        names(self.0)
    }

    /// Every line of the name that is visible ASCII; `None` if there is none.
    fn get_all(&self, key: &str) -> Option<Vec<&str>> {
        all_lines(self.0, key)
    }
}

impl Extractor for HeaderCarrier<&mut HeaderMap> {
    /// The first line of the name that is visible ASCII.
    fn get(&self, key: &str) -> Option<&str> {
        first_line(self.0, key)
    }

    fn keys(&self) -> Vec<&str> {
        names(self.0)
    }

    /// Every line of the name that is visible ASCII; `None` if there is none.
    fn get_all(&self, key: &str) -> Option<Vec<&str>> {
        all_lines(self.0, key)
    }
}

impl Injector for HeaderCarrier<&mut HeaderMap> {
    /// Replaces every line of the name. An invalid name or value is dropped, never a panic.
    fn set(&mut self, key: &str, value: String) {
        // lens's own three names need no parsing (nor, being static, an allocation).
        let name = match key {
            TRACEPARENT_HEADER => TRACEPARENT,
            TRACESTATE_HEADER => TRACESTATE,
            BAGGAGE_HEADER => BAGGAGE,
            _ => match HeaderName::from_bytes(key.as_bytes()) {
                Ok(name) => name,
                Err(_) => return,
            },
        };
        // Reuses the String's buffer.
        if let Ok(value) = HeaderValue::try_from(value) {
            self.replace(name, value);
        }
    }

    fn reserve(&mut self, additional: usize) {
        // A hint only: never abort on an absurd one.
        let _ = self.0.try_reserve(additional);
    }
}

impl HeaderCarrier<&mut HeaderMap> {
    /// Replaces every line of `name` with `value`. Fails only when the map is at its maximum
    /// size: the value is dropped rather than a panic.
    fn replace(&mut self, name: HeaderName, value: HeaderValue) {
        let _ = self.0.try_insert(name, value);
    }
}

/// What [`W3cPropagator::inject_headers`](crate::W3cPropagator::inject_headers) writes with: the
/// rules of [`Injector::set`] above, without a `String` for the `traceparent` or a match on the
/// name.
impl Outbound for HeaderCarrier<&mut HeaderMap> {
    fn traceparent(&mut self, tp: &TraceParent) {
        // ASCII only, so always a valid value; checked all the same rather than assumed.
        if let Ok(value) = HeaderValue::from_bytes(&tp.encode()) {
            self.replace(TRACEPARENT, value);
        }
    }

    fn header(&mut self, name: &'static str, value: Cow<'_, str>) {
        // `tracestate` or `baggage`: the `traceparent` has its own method.
        let name = if name == TRACESTATE_HEADER {
            TRACESTATE
        } else {
            BAGGAGE
        };
        let value = match value {
            Cow::Borrowed(text) => HeaderValue::from_str(text),
            // Reuses the String's buffer.
            Cow::Owned(text) => HeaderValue::try_from(text),
        };
        if let Ok(value) = value {
            self.replace(name, value);
        }
    }
}
