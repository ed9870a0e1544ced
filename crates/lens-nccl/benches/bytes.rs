//! CPU: `serialize_context_from` and `extract_nccl_context` against opentelemetry_sdk's W3C
//! propagators + serde_json doing the same, on the same context (the vectors' benchmark payload,
//! ser-020: a sampled span and three baggage entries), in the same run. Also the floor: building
//! the resulting opentelemetry Context alone. And the frame codec.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::HashMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use lens_core::LensContextExt;
use lens_nccl::{FrameCodec, extract_nccl_context, serialize_context_from};
use lens_testkit::fixtures;
use opentelemetry::Context;
use opentelemetry::KeyValue;
use opentelemetry::baggage::{Baggage, BaggageExt};
use opentelemetry::propagation::{TextMapCompositePropagator, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};

fn payload_context() -> Context {
    fixtures::w3c_context(
        false,
        &[],
        &[
            ("user.id", "alice"),
            ("job.name", "pretrain llama"),
            ("rank", "3"),
        ],
    )
}

fn stock() -> TextMapCompositePropagator {
    TextMapCompositePropagator::new(vec![
        Box::new(TraceContextPropagator::new()),
        Box::new(BaggagePropagator::new()),
    ])
}

fn bench(c: &mut Criterion) {
    let cx = payload_context();
    let stock = stock();

    // Both baselines see the same context: lens mirrors its baggage into opentelemetry's.
    let mut check = HashMap::new();
    stock.inject_context(&cx, &mut check);
    // (The stock propagator also writes an empty `tracestate`.)
    assert!(check.contains_key("traceparent") && check.contains_key("baggage"));
    assert_eq!(cx.baggage().len(), 3);

    let mut g = c.benchmark_group("nccl_serialize");
    g.bench_function("lens serialize_context_from", |b| {
        b.iter(|| serialize_context_from(black_box(&cx)))
    });
    g.bench_function("stock propagators + serde_json", |b| {
        b.iter(|| {
            let mut map: HashMap<String, String> = HashMap::new();
            stock.inject_context(black_box(&cx), &mut map);
            serde_json::to_vec(&map).unwrap()
        })
    });
    g.finish();

    let bytes = serialize_context_from(&cx);
    let stock_bytes = {
        let mut map: HashMap<String, String> = HashMap::new();
        stock.inject_context(&cx, &mut map);
        serde_json::to_vec(&map).unwrap()
    };
    // The same context comes out of both.
    let a = extract_nccl_context(&bytes);
    let map: HashMap<String, String> = serde_json::from_slice(&stock_bytes).unwrap();
    let b = stock.extract(&map);
    assert_eq!(a.span().span_context(), b.span().span_context());
    assert_eq!(
        a.baggage_value("job.name"),
        b.baggage().get("job.name").map(|v| v.to_string())
    );

    let sc = a.span().span_context().clone();
    let entries: Vec<KeyValue> = [
        ("user.id", "alice"),
        ("job.name", "pretrain llama"),
        ("rank", "3"),
    ]
    .into_iter()
    .map(|(k, v)| KeyValue::new(k, v))
    .collect();

    let mut g = c.benchmark_group("nccl_extract");
    g.bench_function("lens extract_nccl_context", |b| {
        b.iter(|| extract_nccl_context(black_box(&bytes)))
    });
    g.bench_function("stock serde_json + propagators", |b| {
        b.iter(|| {
            let map: HashMap<String, String> =
                serde_json::from_slice(black_box(&stock_bytes)).unwrap();
            stock.extract(&map)
        })
    });
    g.bench_function("floor: build the opentelemetry Context", |b| {
        b.iter(|| {
            let baggage: Baggage = black_box(&entries).iter().cloned().collect();
            Context::new()
                .with_remote_span_context(black_box(&sc).clone())
                .with_baggage(baggage)
        })
    });
    g.finish();

    let codec = FrameCodec::default();
    let frame = codec.encode(&cx).unwrap();
    let mut buf = Vec::with_capacity(codec.capacity());
    let mut g = c.benchmark_group("nccl_frame");
    g.bench_function("encode_into (4 KiB frame, reused buffer)", |b| {
        b.iter(|| codec.encode_into(black_box(&cx), &mut buf).unwrap())
    });
    g.bench_function("extract (4 KiB frame)", |b| {
        b.iter(|| codec.extract(black_box(&frame)))
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(700))
        .measurement_time(Duration::from_secs(2))
        .sample_size(25);
    targets = bench
}
criterion_main!(benches);
