//! Map and header carriers (docs/propagation-rules.md#carriers).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use http::header::{HeaderMap, HeaderValue};
use lens_core::carrier::{HeaderCarrier, MapCarrier};
use opentelemetry::propagation::{Extractor, Injector};
use std::collections::{BTreeMap, HashMap};

const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

// ------------------------------------------------------------------------------------------
// MapCarrier
// ------------------------------------------------------------------------------------------

#[test]
fn hashmap_get_is_exact_case() {
    let mut map = HashMap::new();
    map.insert("Traceparent".to_owned(), TP.to_owned());
    let carrier = MapCarrier(&map);
    assert_eq!(carrier.get("traceparent"), None);
    assert_eq!(carrier.get("Traceparent"), Some(TP));
}

#[test]
fn hashmap_set_keeps_key_case() {
    let mut map: HashMap<String, String> = HashMap::new();
    MapCarrier(&mut map).set("Baggage", "k=v".to_owned());
    assert_eq!(map.get("Baggage").map(String::as_str), Some("k=v"));
    assert!(!map.contains_key("baggage"));
}

#[test]
fn hashmap_set_overwrites_existing_key() {
    let mut map = HashMap::new();
    map.insert("traceparent".to_owned(), "old".to_owned());
    map.insert("other".to_owned(), "kept".to_owned());
    let mut carrier = MapCarrier(&mut map);
    carrier.set("traceparent", TP.to_owned());
    assert_eq!(carrier.get("traceparent"), Some(TP));
    assert_eq!(map.len(), 2);
    assert_eq!(map["other"], "kept");
}

#[test]
fn hashmap_keys_and_get_all_through_mut_ref() {
    let mut map = HashMap::new();
    map.insert("a".to_owned(), "1".to_owned());
    let mut carrier = MapCarrier(&mut map);
    carrier.reserve(4);
    carrier.set("b", "2".to_owned());
    let mut keys = carrier.keys();
    keys.sort_unstable();
    assert_eq!(keys, vec!["a", "b"]);
    assert_eq!(carrier.get_all("b"), Some(vec!["2"]));
    assert_eq!(carrier.get_all("B"), None);
}

#[test]
fn hashmap_with_custom_hasher() {
    use std::hash::BuildHasherDefault;
    type Map =
        HashMap<String, String, BuildHasherDefault<std::collections::hash_map::DefaultHasher>>;
    let mut map = Map::default();
    MapCarrier(&mut map).set("k", "v".to_owned());
    assert_eq!(MapCarrier(&map).get("k"), Some("v"));
}

#[test]
fn btreemap_exact_case_get_and_set() {
    let mut map = BTreeMap::new();
    map.insert("TraceParent".to_owned(), "x".to_owned());
    {
        let mut carrier = MapCarrier(&mut map);
        carrier.set("traceparent", TP.to_owned());
        carrier.set("TraceParent", "y".to_owned());
        assert_eq!(carrier.keys(), vec!["TraceParent", "traceparent"]);
    }
    let carrier = MapCarrier(&map);
    assert_eq!(carrier.get("traceparent"), Some(TP));
    assert_eq!(carrier.get("TraceParent"), Some("y"));
    assert_eq!(carrier.get("TRACEPARENT"), None);
}

// ------------------------------------------------------------------------------------------
// HeaderCarrier
// ------------------------------------------------------------------------------------------

#[test]
fn header_get_is_case_insensitive() {
    let mut headers = HeaderMap::new();
    headers.insert("traceparent", HeaderValue::from_static(TP));
    let carrier = HeaderCarrier(&headers);
    assert_eq!(carrier.get("Traceparent"), Some(TP));
    assert_eq!(carrier.get("TRACEPARENT"), Some(TP));
}

#[test]
fn header_get_all_reads_every_line() {
    let mut headers = HeaderMap::new();
    headers.append("baggage", HeaderValue::from_static("a=1"));
    headers.append("Baggage", HeaderValue::from_static("b=2"));
    headers.append("BAGGAGE", HeaderValue::from_static("c=3"));
    let carrier = HeaderCarrier(&headers);
    assert_eq!(carrier.get_all("baggage"), Some(vec!["a=1", "b=2", "c=3"]));
    assert_eq!(carrier.get("baggage"), Some("a=1"));
}

#[test]
fn header_non_visible_ascii_lines_are_skipped() {
    let mut headers = HeaderMap::new();
    headers.append("baggage", HeaderValue::from_bytes(b"k=\xc3\xa9").unwrap());
    headers.append("baggage", HeaderValue::from_static("b=2"));
    let carrier = HeaderCarrier(&headers);
    assert_eq!(carrier.get("baggage"), Some("b=2"));
    assert_eq!(carrier.get_all("baggage"), Some(vec!["b=2"]));
}

#[test]
fn header_get_all_none_when_no_readable_line() {
    let mut headers = HeaderMap::new();
    headers.append("baggage", HeaderValue::from_bytes(b"\xff").unwrap());
    let carrier = HeaderCarrier(&headers);
    assert_eq!(carrier.get("baggage"), None);
    assert_eq!(carrier.get_all("baggage"), None);
    assert_eq!(carrier.get_all("missing"), None);
}

#[test]
fn header_get_with_invalid_name_is_none() {
    let headers = HeaderMap::new();
    let carrier = HeaderCarrier(&headers);
    assert_eq!(carrier.get("bad name"), None);
    assert_eq!(carrier.get(""), None);
    assert_eq!(carrier.get_all("bad\nname"), None);
}

#[test]
fn header_keys_lists_each_name_once() {
    let mut headers = HeaderMap::new();
    headers.append("baggage", HeaderValue::from_static("a=1"));
    headers.append("baggage", HeaderValue::from_static("b=2"));
    headers.append("traceparent", HeaderValue::from_static(TP));
    let carrier = HeaderCarrier(&headers);
    let mut keys = carrier.keys();
    keys.sort_unstable();
    assert_eq!(keys, vec!["baggage", "traceparent"]);
}

/// A carrier over `&mut HeaderMap` (what an injector is given) reads exactly as one over
/// `&HeaderMap`: first readable line, every readable line, each name once.
#[test]
fn header_reads_the_same_through_a_mutable_reference() {
    type Read = (Vec<String>, Vec<(Option<String>, Option<Vec<String>>)>);
    const KEYS: [&str; 4] = ["baggage", "TRACEPARENT", "x-other", "missing"];
    fn read(carrier: &dyn Extractor) -> Read {
        let mut keys: Vec<String> = carrier.keys().into_iter().map(str::to_owned).collect();
        keys.sort_unstable();
        let lines = KEYS
            .iter()
            .map(|key| {
                (
                    carrier.get(key).map(str::to_owned),
                    carrier
                        .get_all(key)
                        .map(|lines| lines.into_iter().map(str::to_owned).collect()),
                )
            })
            .collect();
        (keys, lines)
    }
    let mut headers = HeaderMap::new();
    headers.append("baggage", HeaderValue::from_bytes(b"bad\xff").unwrap());
    headers.append("Baggage", HeaderValue::from_static("a=1"));
    headers.append("baggage", HeaderValue::from_static("b=2"));
    headers.append("traceparent", HeaderValue::from_static(TP));
    headers.append("x-other", HeaderValue::from_static("1"));
    let shared = read(&HeaderCarrier(&headers));
    assert_eq!(shared.0, ["baggage", "traceparent", "x-other"]);
    assert_eq!(
        shared.1[0],
        (Some("a=1".into()), Some(vec!["a=1".into(), "b=2".into()]))
    );
    assert_eq!(read(&HeaderCarrier(&mut headers)), shared);
}

#[test]
fn header_set_replaces_all_lines() {
    let mut headers = HeaderMap::new();
    headers.append("baggage", HeaderValue::from_static("a=1"));
    headers.append("baggage", HeaderValue::from_static("b=2"));
    let mut carrier = HeaderCarrier(&mut headers);
    carrier.reserve(2);
    carrier.set("Baggage", "c=3".to_owned());
    assert_eq!(carrier.get_all("baggage"), Some(vec!["c=3"]));
    assert_eq!(headers.get_all("baggage").iter().count(), 1);
}

#[test]
fn header_set_invalid_value_dropped() {
    let mut headers = HeaderMap::new();
    headers.insert("traceparent", HeaderValue::from_static(TP));
    let mut carrier = HeaderCarrier(&mut headers);
    carrier.set("traceparent", "bad\r\nvalue".to_owned());
    carrier.set("baggage", "nul\0".to_owned());
    carrier.set("tracestate", "del\x7f".to_owned());
    assert_eq!(carrier.get("traceparent"), Some(TP));
    assert_eq!(headers.len(), 1);
}

#[test]
fn header_set_invalid_name_dropped() {
    let mut headers = HeaderMap::new();
    let mut carrier = HeaderCarrier(&mut headers);
    carrier.set("bad name", "v".to_owned());
    carrier.set("", "v".to_owned());
    carrier.set("caf\u{e9}", "v".to_owned());
    carrier.set("a:b", "v".to_owned());
    assert!(headers.is_empty());
}
