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
//! * `server_metrics`: `ServerLayer` with metrics off (the baseline), with `with_meter`, and with
//!   the opt-in active requests and body sizes too, beside opentelemetry-instrumentation-tower
//!   with traces and metrics; `client_metrics`: `ClientMiddleware` with metrics off and with
//!   `with_meter`; `client_body`: `ClientMiddleware` (its span lasts until the body is read)
//!   against the same middleware with the span ended at the response head and the body
//!   unwrapped (`support/head_end.rs`, the behaviour before), beside reqwest-middleware alone.
//!   Metrics on: each variant its own SDK meter provider with a periodic reader
//!   (`support/meters.rs`), so recording is measured, not exports.
//!
//! Criterion measures each variant in its own block; after each group the bench also runs the
//! variants alternately for `ROUNDS` rounds (`METRICS_ROUNDS` for the metrics groups; each
//! variant once per round, in the balanced order of `lens_testkit::order`, so that each variant follows every other equally often; every
//! traced variant flushes its own span processor at the end of its run, inside its own time) and
//! prints the median of the per-round throughput ratios, with their quartiles, against the
//! group's baseline and against the group's references, so that machine noise hits every side
//! alike. `LENS_HTTP_ONLY=server_metrics,client_metrics` runs the groups named.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

#[path = "support/loopback.rs"]
mod loopback;

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lens_testkit::order::{balanced_order, cycles_to_balance};
use loopback::Variant;
use tokio::runtime::Runtime;

/// Requests per round (and per criterion iteration): about 50-100 ms per variant on 2 cores,
/// long enough that every round includes the batch processor's exports (every 512 spans).
const REQUESTS: usize = 2048;
/// Rounds of the alternated comparison of the server and client groups, rounded up per group to a
/// whole number of balanced blocks (seven server variants balance in 14 rounds, four in 4, two in
/// 2). With 100 rounds the median of the per-round ratios moved by about ±1.5 points from run to
/// run; 196 narrow the sampling part of that (what the machine's speed does between runs remains).
const ROUNDS: usize = 196;
/// Rounds of the metrics groups and of `client_body`: they compare close variants (a target of
/// 97%; the span ended at the head) and have fewer variants per round; four times the rounds
/// halve the sampling error of the median.
const METRICS_ROUNDS: usize = 4 * ROUNDS;
/// Unmeasured requests per variant before anything is measured (connections, caches).
const WARM_UP: usize = 4096;

/// One alternated comparison: variants of `support/loopback.rs` by name, the first the baseline.
struct Group {
    name: &'static str,
    build: fn(&'static Runtime, &[&str]) -> Vec<Variant>,
    variants: &'static [&'static str],
    /// Variants every other one (the baseline aside) is also compared with, per round.
    references: &'static [&'static str],
    /// Alternated rounds (at least: rounded up to balance the variants).
    rounds: usize,
}

const GROUPS: &[Group] = &[
    Group {
        name: "server",
        build: loopback::server_variants,
        variants: &[
            "bare_axum",
            "span_floor",
            "floor_with_attributes",
            "minimal_conventions",
            "lens_layer",
            "otel_instrumentation_tower",
            "axum_tracing_opentelemetry",
        ],
        // The least any OpenTelemetry instrumentation does: the reference of the targets.
        references: &["span_floor"],
        rounds: ROUNDS,
    },
    Group {
        name: "server_metrics",
        build: loopback::server_variants,
        variants: &[
            "lens_layer",
            "lens_layer_metrics",
            "lens_layer_metrics_all",
            "otel_instrumentation_tower_metrics",
        ],
        references: &["otel_instrumentation_tower_metrics"],
        rounds: METRICS_ROUNDS,
    },
    Group {
        name: "client",
        build: loopback::client_variants,
        variants: &[
            "reqwest_middleware",
            "span_floor_middleware",
            "plain_client_middleware",
            "lens_middleware",
        ],
        references: &["span_floor_middleware"],
        rounds: ROUNDS,
    },
    Group {
        name: "client_body",
        build: loopback::client_variants,
        variants: &[
            "reqwest_middleware",
            "lens_middleware_head_end",
            "lens_middleware",
        ],
        // The span ended at the response head (the body unwrapped): what wrapping costs.
        references: &["lens_middleware_head_end"],
        // Close variants, as the metrics groups: four times the rounds.
        rounds: METRICS_ROUNDS,
    },
    Group {
        name: "client_metrics",
        build: loopback::client_variants,
        variants: &["lens_middleware", "lens_middleware_metrics"],
        references: &[],
        rounds: METRICS_ROUNDS,
    },
];

/// Criterion measurement of every variant, then at least `rounds` alternated rounds; prints each
/// variant's median throughput ratio against the baseline (the first) and against each of
/// `references`.
fn alternated(
    c: &mut Criterion,
    group: &str,
    variants: &[Variant],
    references: &[&str],
    rounds: usize,
) {
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
    let rounds = rounds.next_multiple_of(cycles_to_balance(n));
    // times[i][round]: the wall time of variant i's run in that round.
    let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); n];
    for round in 0..rounds {
        for k in 0..n {
            let i = balanced_order(n, round, k);
            times[i].push((variants[i].run)(REQUESTS).as_secs_f64());
        }
    }
    let mut against = vec![0];
    against.extend(
        references
            .iter()
            .filter_map(|r| variants.iter().position(|v| v.name == *r)),
    );
    for &base in &against {
        for i in 1..n {
            if i == base {
                continue;
            }
            // Per round: throughput ratio = the reference's time / the variant's time.
            let mut r: Vec<f64> = times[base]
                .iter()
                .zip(&times[i])
                .map(|(b, t)| b / t)
                .collect();
            r.sort_by(f64::total_cmp);
            println!(
                "{group}/{}: throughput {:.1}% of {} (median of {rounds} alternated rounds, \
                 {REQUESTS} requests each; quartiles {:.1}%..{:.1}%)",
                variants[i].name,
                100.0 * median(&r),
                variants[base].name,
                100.0 * r[rounds / 4],
                100.0 * r[3 * rounds / 4],
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
    // `LENS_HTTP_ONLY=server` or `=client,client_metrics` runs those groups (while working on one
    // side).
    let only = std::env::var("LENS_HTTP_ONLY").ok();
    for group in GROUPS {
        if only
            .as_deref()
            .is_none_or(|o| o.split(',').any(|g| g.trim() == group.name))
        {
            let variants = (group.build)(rt, group.variants);
            alternated(c, group.name, &variants, group.references, group.rounds);
        }
    }
}

criterion_group!(benches, http);
criterion_main!(benches);
