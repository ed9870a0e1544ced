//! `cargo xtask bench watch`: ingest of OTLP batches of 512 realistic spans (10 attributes, one
//! event), from the request's bytes to the spans assembled by trace, on one core, beside the
//! floor: prost decoding the same bytes alone (what any OTLP receiver must do). Criterion reports
//! each row's time per batch and spans per second (`Throughput::Elements`); the ratio to the floor
//! is read from the same run.
//!
//! The gRPC receiver decodes with the same `from_request` after its codec's prost decode, and the
//! HTTP receiver calls `decode_protobuf`: the `protobuf` row is the work of both. `json` is
//! OTLP/JSON (as the JS SDK and the Collector's file exporter send it).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::Instant;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use lens_watch::assemble::{Assembler, Config};
use lens_watch::decode::{decode_json, decode_protobuf};
use lens_watch::encode;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message as _;

#[path = "support/fixture.rs"]
mod fixture;

fn ingest(c: &mut Criterion) {
    let spans = fixture::spans(0);
    let protobuf = encode::to_request(&spans).encode_to_vec();
    let json = encode::to_json_line(&spans).into_bytes();
    // Every contender's result is checked before it is timed.
    assert_eq!(decode_protobuf(&protobuf).unwrap().spans, spans);
    assert_eq!(decode_json(&json).unwrap().spans, spans);
    let request = ExportTraceServiceRequest::decode(&protobuf[..]).unwrap();
    assert_eq!(
        request
            .resource_spans
            .iter()
            .flat_map(|r| &r.scope_spans)
            .map(|s| s.spans.len())
            .sum::<usize>(),
        fixture::BATCH
    );
    println!(
        "fixture: {} spans a batch, {} bytes as protobuf, {} bytes as OTLP/JSON",
        fixture::BATCH,
        protobuf.len(),
        json.len()
    );

    let mut group = c.benchmark_group("watch ingest (512 spans)");
    group.throughput(Throughput::Elements(fixture::BATCH as u64));
    group.bench_function("floor: prost decode", |b| {
        b.iter(|| ExportTraceServiceRequest::decode(black_box(&protobuf[..])).unwrap())
    });
    let assembler = || Assembler::new(Config::default());
    group.bench_function("protobuf: decode + assemble", |b| {
        b.iter_batched_ref(
            assembler,
            |a| {
                let batch = decode_protobuf(black_box(&protobuf)).unwrap();
                a.insert(batch.spans, Instant::now());
            },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("json: decode + assemble", |b| {
        b.iter_batched_ref(
            assembler,
            |a| {
                let batch = decode_json(black_box(&json)).unwrap();
                a.insert(batch.spans, Instant::now());
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, ingest);
criterion_main!(benches);
