//! One driver of `benches/support/drivers.rs` in a loop, for instruction counts:
//!
//! ```text
//! cargo build --release -p lens-bench-http --example per_request
//! valgrind --tool=callgrind target/release/examples/per_request axum_lens_layer 20000
//! callgrind_annotate --inclusive=yes callgrind.out.<pid> | head -60
//! ```
//!
//! Drivers: `axum_bare`, `axum_lens_layer`, `reqwest_middleware_bare`, `reqwest_lens_middleware`,
//! `tonic_bare`, `tonic_interceptor_and_server_layer`, and the span floors (`support/span_floor.rs`)
//! `axum_span_floor`, `reqwest_span_floor`, the least server layer with `ServerLayer`'s behaviour
//! `axum_minimal_conventions`, the plain client reference `reqwest_plain_client`, the peer
//! `axum_otel_instrumentation_tower`, and with metrics on (`support/meters.rs`)
//! `axum_lens_layer_metrics`, `axum_lens_layer_metrics_all`, `reqwest_lens_middleware_metrics`,
//! `axum_otel_instrumentation_tower_metrics`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    dead_code
)]

#[path = "../benches/support/drivers.rs"]
mod drivers;
#[path = "../benches/support/meters.rs"]
mod meters;

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "axum_lens_layer".to_owned());
    let n: u64 = args.next().and_then(|n| n.parse().ok()).unwrap_or(20_000);
    lens_core::install().unwrap();
    let provider = drivers::provider();
    let meters = meters::meter_provider();
    let mut all = drivers::all(&provider, &meters);
    let Some(driver) = all.iter_mut().find(|d| d.name == name) else {
        let names: Vec<_> = all.iter().map(|d| d.name).collect();
        panic!("unknown driver {name}; one of {names:?}");
    };
    // Warm up (first-use allocations, lazy statics) before the counted loop.
    for _ in 0..100 {
        (driver.run)();
    }
    let start = std::time::Instant::now();
    for _ in 0..n {
        (driver.run)();
    }
    let per = start.elapsed() / u32::try_from(n).unwrap_or(u32::MAX);
    println!("{name}: {n} requests, {per:?} per request");
    let _ = provider.shutdown();
    let _ = meters.shutdown();
}
