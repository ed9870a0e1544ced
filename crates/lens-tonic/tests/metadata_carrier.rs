//! The carrier over tonic's `MetadataMap`: keys lowercased, non-ASCII values dropped, `-bin` keys
//! skipped, every line of a name read, and no panic whatever the key or value.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lens_tonic::{MetadataCarrier, extract_metadata, inject_metadata};
use opentelemetry::propagation::{Extractor, Injector};
use opentelemetry::trace::TraceContextExt;
use tonic::metadata::{MetadataMap, MetadataValue};

const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[test]
fn uppercase_keys_are_written_lowercase_and_read_case_insensitively() {
    let mut md = MetadataMap::new();
    MetadataCarrier(&mut md).set("TraceParent", TP.to_owned());
    assert_eq!(md.keys_len(), 1);
    assert_eq!(md.get("traceparent").unwrap(), TP);
    let carrier = MetadataCarrier(&md);
    assert_eq!(carrier.get("TRACEPARENT"), Some(TP));
    assert_eq!(carrier.keys(), vec!["traceparent"]);
    // And extraction finds it.
    let cx = extract_metadata(&md);
    assert_eq!(
        cx.span().span_context().trace_id().to_string(),
        "4bf92f3577b34da6a3ce929d0e0e4736"
    );
}

#[test]
fn set_replaces_every_line_of_the_name() {
    let mut md = MetadataMap::new();
    md.append("baggage", MetadataValue::from_static("a=1"));
    md.append("baggage", MetadataValue::from_static("b=2"));
    assert_eq!(
        MetadataCarrier(&md).get_all("Baggage"),
        Some(vec!["a=1", "b=2"])
    );
    MetadataCarrier(&mut md).set("baggage", "c=3".to_owned());
    assert_eq!(MetadataCarrier(&md).get_all("baggage"), Some(vec!["c=3"]));
}

#[test]
fn values_that_are_not_printable_ascii_are_dropped() {
    let mut md = MetadataMap::new();
    let mut carrier = MetadataCarrier(&mut md);
    carrier.set("a", "caf\u{e9}".to_owned());
    carrier.set("b", "line\nbreak".to_owned());
    carrier.set("c", "tab\there".to_owned());
    carrier.set("d", "nul\0".to_owned());
    carrier.set("e", "del\u{7f}".to_owned());
    carrier.set("ok", " printable ~ ascii ".to_owned());
    assert_eq!(md.keys().count(), 1, "{md:?}");
    assert_eq!(md.get("ok").unwrap(), " printable ~ ascii ");
}

#[test]
fn bin_keys_are_skipped_both_ways() {
    let mut md = MetadataMap::new();
    MetadataCarrier(&mut md).set("traceparent-bin", "AAAA".to_owned());
    MetadataCarrier(&mut md).set("Baggage-BIN", "AAAA".to_owned());
    assert!(md.is_empty());

    md.insert_bin(
        "trace-bin",
        tonic::metadata::MetadataValue::from_bytes(b"\x00\x01"),
    );
    md.insert("baggage", MetadataValue::from_static("k=v"));
    let carrier = MetadataCarrier(&md);
    assert_eq!(carrier.get("trace-bin"), None);
    assert_eq!(carrier.get_all("TRACE-BIN"), None);
    assert_eq!(carrier.keys(), vec!["baggage"]);
}

#[test]
fn invalid_keys_never_panic() {
    let mut md = MetadataMap::new();
    let mut carrier = MetadataCarrier(&mut md);
    for key in ["", " ", "bad key", "k\u{e9}y", "a:b", "\0", "-bin", "x\r\n"] {
        carrier.set(key, "v".to_owned());
        assert_eq!(carrier.get(key), None, "{key:?}");
        assert_eq!(carrier.get_all(key), None, "{key:?}");
    }
    carrier.reserve(usize::MAX);
    assert!(md.is_empty());
}

#[test]
fn obs_text_in_received_metadata_is_ignored() {
    let mut headers = http::HeaderMap::new();
    headers.append("baggage", http::HeaderValue::from_bytes(b"a=\xff").unwrap());
    headers.append("baggage", http::HeaderValue::from_static("b=2"));
    let md = MetadataMap::from_headers(headers);
    assert_eq!(MetadataCarrier(&md).get("baggage"), Some("b=2"));
    assert_eq!(MetadataCarrier(&md).get_all("baggage"), Some(vec!["b=2"]));
}

#[test]
fn inject_metadata_writes_what_lens_core_writes() {
    let mut carrier = lens_core::Carrier::new();
    carrier.insert("traceparent", TP);
    carrier.insert("tracestate", "congo=t61rcWkgMzE");
    carrier.insert("baggage", "user=alice%20smith");
    let cx = lens_core::extract_context(&carrier);
    let mut md = MetadataMap::new();
    inject_metadata(&cx, &mut md);
    assert_eq!(md.get("traceparent").unwrap(), TP);
    assert_eq!(md.get("tracestate").unwrap(), "congo=t61rcWkgMzE");
    assert_eq!(md.get("baggage").unwrap(), "user=alice%20smith");
}
