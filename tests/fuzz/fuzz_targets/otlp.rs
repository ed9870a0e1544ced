//! lens-watch's OTLP decoding on arbitrary bytes, as protobuf and as OTLP/JSON: no panic, no
//! unbounded recursion; every span of a decodable request is kept or counted as rejected; what
//! is kept re-encodes (protobuf and JSON) to the same spans; and the assembler and the three
//! renderers take whatever was kept (cycles, duplicate ids, times backwards) without panicking.
#![no_main]

use std::time::{Duration, Instant};

use lens_watch::assemble::{Assembler, Config};
use lens_watch::decode::{Batch, decode_json, decode_protobuf};
use lens_watch::{encode, render};
use libfuzzer_sys::fuzz_target;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message as _;

/// The spans, as OTLP/JSON text: equal text, equal spans (NaN included, which `==` is not).
fn json_of(batch: &Batch) -> String {
    encode::to_json_line(&batch.spans)
}

fn check(batch: &Batch) {
    // Protobuf round trip.
    let bytes = encode::to_request(&batch.spans).encode_to_vec();
    let again = decode_protobuf(&bytes).expect("lens-watch reads the protobuf it writes");
    assert_eq!(again.rejected, 0);
    assert_eq!(json_of(&again), json_of(batch));
    // JSON round trip.
    let line = json_of(batch);
    let again = decode_json(line.as_bytes()).expect("lens-watch reads the JSON it writes");
    assert_eq!(again.rejected, 0);
    assert_eq!(json_of(&again), line);

    // Assemble and render every trace.
    let mut assembler = Assembler::new(Config {
        max_traces: 4,
        max_spans_per_trace: 64,
        max_spans: 128,
        ..Config::default()
    });
    let t0 = Instant::now();
    assembler.insert(batch.spans.iter().cloned(), t0);
    let stats = assembler.stats();
    assert_eq!(stats.spans_received, batch.spans.len() as u64);
    assert_eq!(stats.unaccounted(), 0, "every span shown, held or dropped");
    for id in assembler.poll(t0 + Duration::from_secs(3)) {
        let Some(entry) = assembler.trace(&id) else {
            continue;
        };
        let view = render::TraceView::from_spans(id, &entry.spans, render::HopNames::default())
            .with_lost_spans(entry.lost_spans);
        assert_eq!(view.layout().rows.len(), entry.spans.len(), "every span shown once");
        let mut out = String::new();
        render::Output::Text { colour: true }.trace(&view, &mut out);
        render::html::trace(&view, &mut out);
        render::Output::Json.trace(&view, &mut out);
    }
    assert_eq!(assembler.stats().unaccounted(), 0);
}

fuzz_target!(|data: &[u8]| {
    if let Ok(batch) = decode_protobuf(data) {
        let request = ExportTraceServiceRequest::decode(data).expect("decoded once already");
        let total: usize = request
            .resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .map(|s| s.spans.len())
            .sum();
        assert_eq!(batch.spans.len() as u64 + batch.rejected, total as u64);
        check(&batch);
    }
    if let Ok(batch) = decode_json(data) {
        check(&batch);
    }
});
