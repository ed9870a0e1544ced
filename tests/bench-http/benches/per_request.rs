//! `cargo bench -p lens-bench-http --bench per_request`: the per-request work of each lens layer
//! without sockets (tower `Service::call` / the reqwest-middleware chain driven in a loop, a
//! no-op waker, every span sampled into a batch span processor with a discarding exporter),
//! against the same service without lens, and lens with metrics on against lens with metrics off
//! (an SDK meter provider, `support/meters.rs`). Prints the time each pair's second adds per
//! request.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    dead_code
)]

#[path = "support/drivers.rs"]
mod drivers;
#[path = "support/meters.rs"]
mod meters;

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    lens_core::install().unwrap();
    let provider = drivers::provider();
    let meters = meters::meter_provider();
    let mut axum_metrics = drivers::axum_drivers(&provider).split_off(1);
    axum_metrics.extend(
        drivers::axum_metrics_drivers(&provider, &meters)
            .into_iter()
            .take(1),
    );
    let mut reqwest_metrics = drivers::reqwest_drivers(&provider).split_off(1);
    reqwest_metrics.extend(
        drivers::reqwest_metrics_drivers(&provider, &meters)
            .into_iter()
            .take(1),
    );
    let groups = [
        ("axum_per_request", drivers::axum_drivers(&provider)),
        ("reqwest_per_request", drivers::reqwest_drivers(&provider)),
        ("grpc_per_request", drivers::grpc_drivers(&provider)),
        ("axum_metrics_per_request", axum_metrics),
        ("reqwest_metrics_per_request", reqwest_metrics),
    ];
    for (group, mut pair) in groups {
        let mut g = c.benchmark_group(group);
        g.sample_size(30)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(2));
        for d in &mut pair {
            g.bench_function(d.name, |b| b.iter(&mut d.run));
        }
        g.finish();
        // Alternated, for the printed difference: 15 rounds of 2000 requests each.
        let mut diffs = Vec::with_capacity(15);
        for _ in 0..15 {
            let mut t = [0.0f64; 2];
            for (i, d) in pair.iter_mut().enumerate() {
                let start = Instant::now();
                for _ in 0..2000 {
                    (d.run)();
                }
                t[i] = start.elapsed().as_secs_f64() / 2000.0;
            }
            diffs.push((t[0], t[1]));
        }
        diffs.sort_by(|a, b| (a.1 - a.0).total_cmp(&(b.1 - b.0)));
        let (first, second) = diffs[diffs.len() / 2];
        println!(
            "{group}: {} {:.2} µs, {} {:.2} µs per request; the second adds {:.2} µs (median of 15 \
             alternated rounds)",
            pair[0].name,
            first * 1e6,
            pair[1].name,
            second * 1e6,
            (second - first) * 1e6,
        );
    }
    let _ = provider.shutdown();
    let _ = meters.shutdown();
}

criterion_group!(benches, bench);
criterion_main!(benches);
