//! lens-core against stock opentelemetry_sdk 0.33 propagators and against the floor, in ONE run.
//!
//! Same context for everyone: a sampled span, a tracestate of 2 members, 3 baggage entries; same
//! carriers: `HashMap<String, String>` and `http::HeaderMap`. `cargo xtask bench core` runs it.
//!
//! * stock: `TextMapCompositePropagator[TraceContextPropagator, BaggagePropagator]`, over the
//!   carriers' stock adapters (opentelemetry's `HashMap` impls, opentelemetry-http's header
//!   injector/extractor).
//! * floor (inject): storing the same three header strings into the same carrier.
//! * floor (extract): building the same opentelemetry Context (span context with tracestate,
//!   plus baggage) from already-parsed values.
//! * floor (traceparent): formatting 55 bytes into a fixed buffer / parsing 55 bytes into ids and
//!   flags, by hand.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use http::{HeaderMap, HeaderName, HeaderValue};
use lens_core::traceparent::TraceParent;
use lens_core::{HeaderCarrier, MapCarrier, W3cPropagator};
use opentelemetry::Context;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry_http::{HeaderExtractor, HeaderInjector};

#[path = "support/fixture.rs"]
mod fixture;
#[path = "support/floor.rs"]
mod floor;
#[path = "support/traceparent_floor.rs"]
mod traceparent_floor;
use fixture::{BAGGAGE, TRACEPARENT, TRACESTATE, incoming_headers, incoming_map, stock};
use floor::Parsed;
use traceparent_floor::{encode_floor, parse_floor};

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
}

fn inject(c: &mut Criterion) {
    let lens = W3cPropagator::new();
    let stock = stock();
    // One context for everyone: what lens extracts holds the opentelemetry values stock reads.
    let cx = lens.extract(&MapCarrier(&incoming_map()));
    let (tp, ts, bg) = (
        TRACEPARENT.to_owned(),
        TRACESTATE.to_owned(),
        BAGGAGE.to_owned(),
    );

    let mut g = c.benchmark_group("inject/hashmap");
    g.bench_function("stock", |b| {
        b.iter_batched_ref(
            HashMap::<String, String>::new,
            |m| stock.inject_context(&cx, m),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("lens", |b| {
        b.iter_batched_ref(
            HashMap::<String, String>::new,
            |m| lens.inject_context(&cx, &mut MapCarrier(m)),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("floor", |b| {
        b.iter_batched_ref(
            HashMap::<String, String>::new,
            |m| {
                m.insert("traceparent".to_owned(), black_box(&tp).clone());
                m.insert("tracestate".to_owned(), black_box(&ts).clone());
                m.insert("baggage".to_owned(), black_box(&bg).clone());
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();

    let mut g = c.benchmark_group("inject/headermap");
    g.bench_function("stock", |b| {
        b.iter_batched_ref(
            HeaderMap::new,
            |h| stock.inject_context(&cx, &mut HeaderInjector(h)),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("lens", |b| {
        b.iter_batched_ref(
            HeaderMap::new,
            |h| lens.inject_context(&cx, &mut HeaderCarrier(h)),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("floor", |b| {
        b.iter_batched_ref(
            HeaderMap::new,
            |h| {
                for (k, v) in [("traceparent", &tp), ("tracestate", &ts), ("baggage", &bg)] {
                    let name = HeaderName::from_bytes(k.as_bytes()).unwrap();
                    h.insert(name, HeaderValue::try_from(black_box(v).clone()).unwrap());
                }
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

fn extract(c: &mut Criterion) {
    let lens = W3cPropagator::new();
    let stock = stock();
    let map = incoming_map();
    let headers = incoming_headers();
    let parsed = Parsed::new();

    let mut g = c.benchmark_group("extract/hashmap");
    g.bench_function("stock", |b| b.iter(|| stock.extract(black_box(&map))));
    g.bench_function("lens", |b| {
        b.iter(|| lens.extract(&MapCarrier(black_box(&map))))
    });
    g.bench_function("floor", |b| b.iter(|| parsed.floor_context()));
    g.finish();

    let mut g = c.benchmark_group("extract/headermap");
    g.bench_function("stock", |b| {
        b.iter(|| stock.extract(&HeaderExtractor(black_box(&headers))))
    });
    g.bench_function("lens", |b| {
        b.iter(|| lens.extract(&HeaderCarrier(black_box(&headers))))
    });
    // What the HTTP and gRPC server layers call: the same extract, reading the map directly.
    g.bench_function("lens extract_headers", |b| {
        b.iter(|| lens.extract_headers(&Context::current(), black_box(&headers)))
    });
    g.bench_function("floor", |b| b.iter(|| parsed.floor_context()));
    g.finish();
}

fn traceparent(c: &mut Criterion) {
    let tp = TraceParent::parse(TRACEPARENT).unwrap();
    let (trace, span) = (tp.trace_id.to_bytes(), tp.parent_id.to_bytes());
    let mut g = c.benchmark_group("traceparent/encode");
    g.bench_function("lens", |b| b.iter(|| black_box(&tp).encode()));
    g.bench_function("floor", |b| {
        b.iter(|| encode_floor(black_box(&trace), black_box(&span), 1))
    });
    g.finish();
    let mut g = c.benchmark_group("traceparent/parse");
    g.bench_function("lens", |b| {
        b.iter(|| TraceParent::parse(black_box(TRACEPARENT)))
    });
    g.bench_function("floor", |b| {
        b.iter(|| parse_floor(black_box(TRACEPARENT.as_bytes())))
    });
    g.finish();
}

criterion_group! { name = benches; config = config(); targets = inject, extract, traceparent }
criterion_main!(benches);
