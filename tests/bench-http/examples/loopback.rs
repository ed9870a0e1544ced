//! One loopback variant of `benches/support/loopback.rs` on its own, for `perf stat` /
//! `perf record` (whole-process cycles per request, every thread included):
//!
//! ```text
//! cargo build --release -p lens-bench-http --example loopback
//! perf stat -e task-clock,cycles,instructions target/release/examples/loopback lens_layer 50000
//! ```
//!
//! Variants: `loopback::SERVER_VARIANTS` and `loopback::CLIENT_VARIANTS` (e.g. `lens_layer`,
//! `lens_layer_metrics`, `lens_middleware`; client variants run against a bare server). The process warms the variant up (2000 requests), then sends the given number of
//! requests and prints the wall time and the process CPU time per request.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    dead_code
)]

#[path = "../benches/support/loopback.rs"]
mod loopback;

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "lens_layer".to_owned());
    let n: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(50_000);
    lens_core::install().unwrap();
    let rt = loopback::runtime();
    let mut variants = loopback::server_variants(rt, &[name.as_str()]);
    if variants.is_empty() {
        variants = loopback::client_variants(rt, &[name.as_str()]);
    }
    let Some(v) = variants.first() else {
        panic!(
            "unknown variant {name}; one of {}, {}",
            loopback::SERVER_VARIANTS.join(", "),
            loopback::CLIENT_VARIANTS.join(", ")
        );
    };
    (v.run)(2000);
    let cpu0 = cpu_time();
    let wall = (v.run)(n);
    let cpu = cpu_time() - cpu0;
    println!(
        "{name}: {n} requests, {:.2} µs wall, {:.2} µs CPU (all threads) per request",
        wall.as_secs_f64() * 1e6 / n as f64,
        cpu * 1e6 / n as f64,
    );
}

/// User + system CPU seconds of the whole process so far (from /proc/self/stat; 0 elsewhere).
fn cpu_time() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the command: state is field 0, utime field 11, stime field 12 (in clock ticks).
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}
