//! gRPC metadata ([`tonic::metadata::MetadataMap`]) as a propagation carrier (docs/propagation-rules.md#carriers),
//! and a Context injected into it and extracted from it.

use http::header::{HeaderMap, HeaderName, HeaderValue};
use lens_core::{BAGGAGE_HEADER, TRACEPARENT_HEADER, TRACESTATE_HEADER};
use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use tonic::metadata::MetadataMap;

/// Injects `cx` into gRPC metadata with lens's process-wide propagator.
pub fn inject_metadata(cx: &Context, metadata: &mut MetadataMap) {
    lens_core::propagator().inject_context(cx, &mut MetadataCarrier(metadata));
}

/// Extracts the Context in gRPC metadata with lens's process-wide propagator, starting from an
/// empty Context (docs/propagation-rules.md#extract-and-inject).
pub fn extract_metadata(metadata: &MetadataMap) -> Context {
    lens_core::extract_context(&MetadataCarrier(metadata))
}

/// gRPC request metadata as a carrier: names case-insensitive, every line of a name read.
///
/// - Reading sees only ASCII metadata: keys ending in `-bin` (binary metadata) are skipped and
///   values that are not visible ASCII are ignored.
/// - Writing lowercases the key, skips `-bin` keys and keys that are not valid metadata names,
///   drops a value that is not printable ASCII (`0x20`-`0x7E`, gRPC's `ASCII-Value`), and
///   replaces every line of the name. It never panics, whatever the input.
///
/// ```
/// use lens_tonic::MetadataCarrier;
/// use opentelemetry::propagation::{Extractor, Injector};
/// use tonic::metadata::MetadataMap;
///
/// let mut metadata = MetadataMap::new();
/// let mut carrier = MetadataCarrier(&mut metadata);
/// carrier.set("Baggage", "k=v".to_owned()); // stored as `baggage`
/// carrier.set("baggage-bin", "x".to_owned()); // binary keys are skipped
/// carrier.set("tracestate", "k=v\u{e9}".to_owned()); // not ASCII: dropped
///
/// let carrier = MetadataCarrier(&metadata);
/// assert_eq!(carrier.get("BAGGAGE"), Some("k=v"));
/// assert_eq!(carrier.get("tracestate"), None);
/// assert_eq!(metadata.len(), 1);
/// ```
#[derive(Debug)]
pub struct MetadataCarrier<M>(pub M);

/// Whether `key` names binary metadata (`-bin` suffix, any case).
fn is_binary_key(key: &str) -> bool {
    let b = key.as_bytes();
    b.len() >= 4 && b[b.len() - 4..].eq_ignore_ascii_case(b"-bin")
}

/// gRPC `ASCII-Value`: printable ASCII only.
fn is_ascii_metadata_value(value: &str) -> bool {
    value.bytes().all(|b| (0x20..=0x7e).contains(&b))
}

fn first_line<'a>(headers: &'a HeaderMap, key: &str) -> Option<&'a str> {
    if is_binary_key(key) {
        return None;
    }
    headers
        .get_all(key)
        .iter()
        .find_map(|value| value.to_str().ok())
}

fn all_lines<'a>(headers: &'a HeaderMap, key: &str) -> Option<Vec<&'a str>> {
    if is_binary_key(key) {
        return None;
    }
    let lines: Vec<&str> = headers
        .get_all(key)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .collect();
    if lines.is_empty() { None } else { Some(lines) }
}

fn ascii_keys(headers: &HeaderMap) -> Vec<&str> {
    headers
        .keys()
        .map(HeaderName::as_str)
        .filter(|k| !is_binary_key(k))
        .collect()
}

/// Writes `key: value` into `headers` following the rules of [`MetadataCarrier`].
pub(crate) fn set_metadata(headers: &mut HeaderMap, key: &str, value: String) {
    if is_binary_key(key) || !is_ascii_metadata_value(&value) {
        return;
    }
    // The propagator's own keys (every call) as static names: no parsing per call. Any other
    // key: `from_bytes` lowercases; it fails (no panic) on characters not allowed in a name.
    let name = match key {
        TRACEPARENT_HEADER => HeaderName::from_static(TRACEPARENT_HEADER),
        TRACESTATE_HEADER => HeaderName::from_static(TRACESTATE_HEADER),
        BAGGAGE_HEADER => HeaderName::from_static(BAGGAGE_HEADER),
        _ => match HeaderName::from_bytes(key.as_bytes()) {
            Ok(name) => name,
            Err(_) => return,
        },
    };
    // Reuses the String's buffer.
    let Ok(value) = HeaderValue::try_from(value) else {
        return;
    };
    // Fails only when the map is at its maximum size: drop the value rather than panic.
    let _ = headers.try_insert(name, value);
}

impl Extractor for MetadataCarrier<&MetadataMap> {
    /// The first ASCII line of the name (case-insensitive); `None` for a `-bin` key.
    fn get(&self, key: &str) -> Option<&str> {
        first_line(self.0.as_ref(), key)
    }

    /// The ASCII (non-`-bin`) keys, lowercase.
    fn keys(&self) -> Vec<&str> {
        ascii_keys(self.0.as_ref())
    }

    /// Every ASCII line of the name; `None` if there is none.
    fn get_all(&self, key: &str) -> Option<Vec<&str>> {
        all_lines(self.0.as_ref(), key)
    }
}

impl Extractor for MetadataCarrier<&mut MetadataMap> {
    /// The first ASCII line of the name (case-insensitive); `None` for a `-bin` key.
    fn get(&self, key: &str) -> Option<&str> {
        first_line(self.0.as_ref(), key)
    }

    /// The ASCII (non-`-bin`) keys, lowercase.
    fn keys(&self) -> Vec<&str> {
        ascii_keys(self.0.as_ref())
    }

    /// Every ASCII line of the name; `None` if there is none.
    fn get_all(&self, key: &str) -> Option<Vec<&str>> {
        all_lines(self.0.as_ref(), key)
    }
}

impl Injector for MetadataCarrier<&mut MetadataMap> {
    /// Replaces every line of the (lowercased) name. `-bin` keys, invalid names and values that
    /// are not printable ASCII are dropped, never a panic.
    fn set(&mut self, key: &str, value: String) {
        set_metadata(self.0.as_mut(), key, value);
    }

    fn reserve(&mut self, additional: usize) {
        // A hint only: never abort on an absurd one.
        let _ = self.0.as_mut().try_reserve(additional);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_suffix_any_case() {
        assert!(is_binary_key("trace-bin"));
        assert!(is_binary_key("TRACE-BIN"));
        assert!(!is_binary_key("bin"));
        assert!(!is_binary_key("traceparent"));
    }
}
