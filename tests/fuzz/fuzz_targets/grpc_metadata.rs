//! A whole extract over gRPC metadata (`lens_tonic::MetadataCarrier`) built like the HTTP target
//! (repeated lines, any case, `-bin` keys): no panic; the Context round-trips through fresh
//! metadata and through HTTP headers, within the limits.
#![no_main]

use lens_core::{extract_context, inject_context_from};
use lens_fuzz::{check_roundtrip, header_map, via_headers};
use lens_tonic::MetadataCarrier;
use libfuzzer_sys::fuzz_target;
use opentelemetry::Context;
use tonic::metadata::MetadataMap;

fn via_metadata(cx: &Context) -> Context {
    let mut md = MetadataMap::new();
    inject_context_from(cx, &mut MetadataCarrier(&mut md));
    extract_context(&MetadataCarrier(&md))
}

fuzz_target!(|data: &[u8]| {
    let md = MetadataMap::from_headers(header_map(data));
    let cx = extract_context(&MetadataCarrier(&md));
    check_roundtrip(&cx, via_metadata);
    check_roundtrip(&cx, via_headers);
});
