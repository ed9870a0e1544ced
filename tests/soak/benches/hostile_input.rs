//! Time of an extract from hostile input is linear in the bytes actually examined: input past a
//! limit costs nothing more. Baseline: the same extract of an ordinary header.
//!
//! `cargo bench -p lens-soak --bench hostile_input`; figures in docs/performance.md.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use http::{HeaderMap, HeaderValue};
use lens_core::{Carrier, HeaderCarrier, extract_context};

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const KIB: usize = 1024;

fn headers(name: &str, value: &str) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("traceparent", HeaderValue::from_static(TRACEPARENT));
    h.insert(
        http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
        HeaderValue::from_str(value).unwrap(),
    );
    h
}

fn distinct_members(n: usize) -> String {
    let mut s = String::with_capacity(n + 16);
    let mut i = 0;
    while s.len() < n {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&format!("k{i:07}=v"));
        i += 1;
    }
    s
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("hostile_input");
    g.measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500))
        .sample_size(20);

    let cases: Vec<(&str, HeaderMap)> = vec![
        // Baseline: an ordinary request.
        (
            "baseline: traceparent + 2 baggage members",
            headers("baggage", "user=alice,tier=gold"),
        ),
        // Baggage: examined until a limit stops the parse.
        (
            "baggage 8 KiB of distinct members (at the limit)",
            headers("baggage", &distinct_members(8 * KIB)),
        ),
        (
            "baggage 1 MiB of distinct members",
            headers("baggage", &distinct_members(1024 * KIB)),
        ),
        (
            "baggage 1 MiB, one huge value",
            headers("baggage", &format!("k={}", "x".repeat(1024 * KIB))),
        ),
        // Duplicates merge, so the whole header is examined: linear in its size.
        (
            "baggage 256 KiB of one key repeated",
            headers("baggage", &"k=v,".repeat(64 * KIB)),
        ),
        (
            "baggage 1 MiB of one key repeated",
            headers("baggage", &"k=v,".repeat(256 * KIB)),
        ),
        (
            "baggage 1 MiB of invalid members",
            headers("baggage", &"bad key=v,".repeat(100 * KIB)),
        ),
        // Tracestate: the byte limit is checked before any member is parsed.
        (
            "tracestate 32 members (at the limit)",
            headers(
                "tracestate",
                &(0..32)
                    .map(|i| format!("k{i}=v{i}"))
                    .collect::<Vec<_>>()
                    .join(","),
            ),
        ),
        (
            "tracestate 100,000 members",
            headers(
                "tracestate",
                &(0..100_000)
                    .map(|i| format!("k{i}=v{i}"))
                    .collect::<Vec<_>>()
                    .join(","),
            ),
        ),
    ];
    for (name, h) in &cases {
        g.bench_function(*name, |b| {
            b.iter(|| extract_context(&HeaderCarrier(black_box(h))))
        });
    }

    // The JSON carrier: over 64 KiB it is rejected on its length alone.
    let near_limit = {
        let pad = "x".repeat(64 * KIB - 120);
        format!("{{\"traceparent\": \"{TRACEPARENT}\", \"pad\": \"{pad}\"}}").into_bytes()
    };
    let ten_mib = {
        let pad = "x".repeat(10 * 1024 * KIB);
        format!("{{\"traceparent\": \"{TRACEPARENT}\", \"pad\": \"{pad}\"}}").into_bytes()
    };
    g.bench_function("JSON carrier 64 KiB (at the limit)", |b| {
        b.iter(|| Carrier::from_json_bytes(black_box(&near_limit)))
    });
    g.bench_function("JSON carrier 10 MiB", |b| {
        b.iter(|| Carrier::from_json_bytes(black_box(&ten_mib)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
