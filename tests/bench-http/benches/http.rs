//! `cargo bench -p lens-bench-http --bench http` (in `cargo xtask bench http`): a hello-world
//! axum handler on loopback under a load generator in the same process (fixed request count,
//! several connections). The variants and the fairness rules they follow are in
//! `support/loopback.rs`.
//!
//! * `server/*`: bare axum, the span floor (also with an attribute vector the size of the
//!   HTTP server conventions', a reference for what that vector alone costs, and as the least
//!   layer with the behaviour `ServerLayer` must have, a bound for it), axum +
//!   `ServerLayer`, axum + opentelemetry-instrumentation-tower's layer, axum +
//!   axum-tracing-opentelemetry's layer
//!   (with tracing-opentelemetry); every request sampled, batch span processor into a discarding
//!   exporter.
//! * `client/*`: reqwest through reqwest-middleware alone, with the span floor's middleware, with
//!   a plain conventions-following middleware (a reference: `support/span_floor.rs`), and through
//!   `ClientMiddleware`, against the same bare axum server.
//!
//! Criterion measures each variant in its own block; after each group the bench also runs the
//! variants alternately for `ROUNDS` rounds (each variant once per round, in the balanced order
//! of `lens_testkit::order`, so that each variant follows every other equally often; every
//! traced variant flushes its own span processor at the end of its run, inside its own time) and
//! prints the median of the per-round throughput ratios against the group's baseline, and
//! against the span floor, so that machine noise hits every side alike.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[path = "support/loopback.rs"]
mod loopback;

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lens_testkit::order::balanced_order;
use loopback::Variant;

/// Requests per round (and per criterion iteration): about 50-100 ms per variant on 2 cores,
/// long enough that every round includes the batch processor's exports (every 512 spans).
const REQUESTS: usize = 2048;
/// Rounds of the alternated comparison: a whole number of balanced blocks for both groups (seven
/// server variants balance in 14 rounds, four client variants in 4). With 100 rounds the median
/// of the per-round ratios moved by about ±1.5 points from run to run; 196 narrow the sampling
/// part of that (what the machine's speed does between runs remains).
const ROUNDS: usize = 196;
/// Unmeasured requests per variant before anything is measured (connections, caches).
const WARM_UP: usize = 4096;

/// Criterion measurement of every variant, then `ROUNDS` alternated rounds; prints each
/// variant's median throughput ratio against the first (baseline).
fn alternated(c: &mut Criterion, group: &str, variants: &[Variant]) {
    for v in variants {
        (v.run)(WARM_UP);
    }
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(REQUESTS as u64));
    g.sample_size(10);
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(3));
    for v in variants {
        g.bench_function(v.name, |b| {
            b.iter_custom(|iters| (0..iters).map(|_| (v.run)(REQUESTS)).sum())
        });
    }
    g.finish();

    let n = variants.len();
    let mut ratios: Vec<Vec<f64>> = vec![Vec::with_capacity(ROUNDS); n];
    for round in 0..ROUNDS {
        let mut times = vec![0.0f64; n];
        for k in 0..n {
            let i = balanced_order(n, round, k);
            times[i] = (variants[i].run)(REQUESTS).as_secs_f64();
        }
        for (i, t) in times.iter().enumerate() {
            // throughput ratio = baseline time / variant time
            ratios[i].push(times[0] / t);
        }
    }
    // The span floor, when measured: the least any OpenTelemetry instrumentation does, and the
    // reference the targets name (lens's throughput as a share of it, per round).
    let floor = variants
        .iter()
        .position(|v| v.name.starts_with("span_floor"));
    for (v, mut r) in variants.iter().zip(ratios.iter().cloned()).skip(1) {
        r.sort_by(f64::total_cmp);
        println!(
            "{group}/{}: throughput {:.1}% of {} (median of {ROUNDS} alternated rounds, \
             {REQUESTS} requests each; quartiles {:.1}%..{:.1}%)",
            v.name,
            100.0 * median(&r),
            variants[0].name,
            100.0 * r[ROUNDS / 4],
            100.0 * r[3 * ROUNDS / 4],
        );
    }
    if let Some(f) = floor {
        for (i, v) in variants.iter().enumerate().skip(1) {
            if i == f {
                continue;
            }
            // Per round: floor time / variant time (the same rounds as above).
            let mut r: Vec<f64> = ratios[i]
                .iter()
                .zip(&ratios[f])
                .map(|(variant, floor)| variant / floor)
                .collect();
            r.sort_by(f64::total_cmp);
            println!(
                "{group}/{}: throughput {:.1}% of {} (median of {ROUNDS} alternated rounds; \
                 quartiles {:.1}%..{:.1}%)",
                v.name,
                100.0 * median(&r),
                variants[f].name,
                100.0 * r[ROUNDS / 4],
                100.0 * r[3 * ROUNDS / 4],
            );
        }
    }
}

/// The median of sorted values (the mean of the middle two for an even count).
fn median(sorted: &[f64]) -> f64 {
    let mid = sorted.len() / 2;
    if sorted.len().is_multiple_of(2) {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    } else {
        sorted[mid]
    }
}

fn http(c: &mut Criterion) {
    lens_core::install().unwrap();
    let rt = loopback::runtime();
    // `LENS_HTTP_ONLY=server` or `=client` runs one group (while working on one side).
    let only = std::env::var("LENS_HTTP_ONLY").ok();
    let runs = |group: &str| only.as_deref().is_none_or(|o| o == group);
    if runs("server") {
        alternated(c, "server", &loopback::server_variants(rt, &[]));
    }
    if runs("client") {
        alternated(c, "client", &loopback::client_variants(rt, &[]));
    }
}

criterion_group!(benches, http);
criterion_main!(benches);
