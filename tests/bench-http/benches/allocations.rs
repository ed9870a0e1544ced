//! `cargo bench -p lens-bench-http --bench allocations`: heap allocations per request (count and
//! bytes, every thread included: the batch span processor's exports are part of the cost) of
//! lens's axum layer and reqwest middleware beside the span floor and the peers
//! (opentelemetry-instrumentation-tower, axum-tracing-opentelemetry; lens and
//! opentelemetry-instrumentation-tower also with metrics on), measured by a counting
//! global allocator over the socket-free drivers of `support/drivers.rs` (every span sampled,
//! batch span processor into a discarding exporter; metrics into the provider of
//! `support/meters.rs`). Prints one line per driver, and what each adds to the bare service.
//!
//! Then the per-frame figures of a streamed response (`support/frames.rs`: a body of small
//! data frames read with `Response::chunk()`), for the body unwrapped, the span ended at the
//! head and `ClientMiddleware` (the body in `TracedBody`): allocations per request of one frame
//! (not streamed) and per frame (the difference between responses of `FEW` and `MANY` frames),
//! and the time per frame (the same difference, in alternated rounds; median with quartiles of
//! the per-round ratio against the unwrapped body). The counting allocator only counts
//! allocations: with none per frame, it costs nothing per frame.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    missing_docs,
    dead_code
)]

#[path = "support/drivers.rs"]
mod drivers;
#[path = "support/frames.rs"]
mod frames;
#[path = "support/meters.rs"]
mod meters;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

/// The system allocator, counting every allocation and its size.
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call goes to `System` unchanged; the counters are atomics, which neither
// allocate nor unwind.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc`, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc`, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // A reallocation counts as one allocation of the bytes added.
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(
            new_size.saturating_sub(layout.size()) as u64,
            Ordering::Relaxed,
        );
        // SAFETY: the caller's contract for `realloc`, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Requests measured per driver (after as many unmeasured ones).
const REQUESTS: u64 = 20_000;

/// Allocations and bytes per request of `driver`.
fn measure(driver: &mut drivers::Driver) -> (f64, f64) {
    for _ in 0..REQUESTS {
        (driver.run)();
    }
    let (a0, b0) = (
        ALLOCATIONS.load(Ordering::Relaxed),
        BYTES.load(Ordering::Relaxed),
    );
    for _ in 0..REQUESTS {
        (driver.run)();
    }
    let (a1, b1) = (
        ALLOCATIONS.load(Ordering::Relaxed),
        BYTES.load(Ordering::Relaxed),
    );
    (
        (a1 - a0) as f64 / REQUESTS as f64,
        (b1 - b0) as f64 / REQUESTS as f64,
    )
}

fn install_tracing_subscriber(provider: &opentelemetry_sdk::trace::SdkTracerProvider) {
    use opentelemetry::trace::TracerProvider as _;
    use tracing_subscriber::layer::SubscriberExt;
    let filter = tracing_subscriber::filter::Targets::new()
        .with_default(tracing::Level::INFO)
        .with_target("otel::tracing", tracing::Level::TRACE);
    let subscriber = tracing_subscriber::registry()
        .with(
            tracing_opentelemetry::layer()
                .with_tracer(provider.tracer("axum-tracing-opentelemetry")),
        )
        .with(filter);
    tracing::subscriber::set_global_default(subscriber).unwrap();
}

fn main() {
    // `cargo bench` passes `--bench`; nothing to parse.
    lens_core::install().unwrap();
    let provider = drivers::provider();
    install_tracing_subscriber(&provider);
    let mut axum = drivers::axum_drivers(&provider);
    let mut reqwest = drivers::reqwest_drivers(&provider);
    let mut floors = drivers::span_floor_drivers(&provider);
    let meters = meters::meter_provider();
    axum.extend(drivers::axum_metrics_drivers(&provider, &meters));
    reqwest.extend(drivers::reqwest_metrics_drivers(&provider, &meters));
    let mut peers = [
        drivers::instrumentation_tower_driver(&provider),
        drivers::axum_tracing_opentelemetry_driver(),
        drivers::instrumentation_tower_metrics_driver(&provider, &meters),
    ];
    // (group, bare driver, traced drivers)
    let (axum_bare, axum_lens) = axum.split_at_mut(1);
    let (reqwest_bare, reqwest_lens) = reqwest.split_at_mut(1);
    // The server floor and the least conventions layer first, then the client floor and the plain
    // client (`drivers::span_floor_drivers`).
    let (axum_floor, reqwest_floor) = floors.split_at_mut(2);
    let groups: [(&str, &mut drivers::Driver, Vec<&mut drivers::Driver>); 2] = [
        (
            "server",
            &mut axum_bare[0],
            axum_floor
                .iter_mut()
                .chain(axum_lens.iter_mut())
                .chain(peers.iter_mut())
                .collect(),
        ),
        (
            "client",
            &mut reqwest_bare[0],
            reqwest_floor
                .iter_mut()
                .chain(reqwest_lens.iter_mut())
                .collect(),
        ),
    ];
    for (group, bare, traced) in groups {
        let (bare_allocations, bare_bytes) = measure(bare);
        println!(
            "allocations/{group}/{}: {bare_allocations:.1} allocations, {bare_bytes:.0} bytes per request",
            bare.name
        );
        for driver in traced {
            let (allocations, bytes) = measure(driver);
            println!(
                "allocations/{group}/{}: {allocations:.1} allocations, {bytes:.0} bytes per request \
                 (+{:.1} allocations, +{:.0} bytes over {})",
                driver.name,
                allocations - bare_allocations,
                bytes - bare_bytes,
                bare.name,
            );
        }
    }
    per_frame(&provider);
    let _ = provider.shutdown();
    let _ = meters.shutdown();
}

/// Frames of a short and of a long streamed response: per-frame figures are the difference.
const FEW: usize = 2;
const MANY: usize = FEW + 1024;
/// Requests per measurement of the per-frame figures.
const STREAMS: usize = 200;
/// Alternated rounds of the per-frame time (rounded up to balance the drivers).
const FRAME_ROUNDS: usize = 300;
/// Requests per driver and round of the per-frame time.
const ROUND_STREAMS: usize = 8;

/// Allocations per request of `frames` data frames, over [`STREAMS`] requests.
fn allocations_per_stream(driver: &mut frames::StreamDriver, frames: usize) -> f64 {
    let a0 = ALLOCATIONS.load(Ordering::Relaxed);
    for _ in 0..STREAMS {
        (driver.run)(frames);
    }
    (ALLOCATIONS.load(Ordering::Relaxed) - a0) as f64 / STREAMS as f64
}

/// Seconds per frame of `driver`, from [`ROUND_STREAMS`] requests of [`FEW`] and of [`MANY`]
/// frames.
fn seconds_per_frame(driver: &mut frames::StreamDriver) -> f64 {
    let time = |driver: &mut frames::StreamDriver, frames: usize| {
        let start = std::time::Instant::now();
        for _ in 0..ROUND_STREAMS {
            (driver.run)(frames);
        }
        start.elapsed().as_secs_f64()
    };
    let few = time(driver, FEW);
    let many = time(driver, MANY);
    (many - few) / (ROUND_STREAMS * (MANY - FEW)) as f64
}

fn per_frame(provider: &opentelemetry_sdk::trace::SdkTracerProvider) {
    use lens_testkit::order::{balanced_order, cycles_to_balance};
    let mut drivers = frames::stream_drivers(provider);
    for driver in &mut drivers {
        for _ in 0..STREAMS {
            (driver.run)(MANY);
        }
    }
    let one = allocations_per_stream(&mut drivers[0], 1);
    for driver in &mut drivers {
        let single = allocations_per_stream(driver, 1);
        let few = allocations_per_stream(driver, FEW);
        let many = allocations_per_stream(driver, MANY);
        println!(
            "allocations/stream/{}: {single:.2} allocations per request of one frame \
             (+{:.2} over unwrapped), {:.4} per frame (responses of {FEW} and {MANY} frames)",
            driver.name,
            single - one,
            (many - few) / (MANY - FEW) as f64,
        );
    }
    let n = drivers.len();
    let rounds = FRAME_ROUNDS.next_multiple_of(cycles_to_balance(n));
    let mut seconds: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); n];
    for round in 0..rounds {
        for k in 0..n {
            let i = balanced_order(n, round, k);
            seconds[i].push(seconds_per_frame(&mut drivers[i]));
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2], v[v.len() / 4], v[3 * v.len() / 4])
    };
    let (unwrapped_ns, ..) = median(seconds[0].iter().map(|s| s * 1e9).collect());
    println!(
        "time/stream/{}: {unwrapped_ns:.1} ns per frame (median of {rounds} alternated rounds)",
        drivers[0].name
    );
    // Against the unwrapped body, and lens against the round trip alone (lens's own share).
    let round_trip = drivers.iter().position(|d| d.name == "round_trip");
    for i in 1..n {
        let (ns, ..) = median(seconds[i].iter().map(|s| s * 1e9).collect());
        for base in std::iter::once(0).chain(round_trip.filter(|&r| r < i)) {
            let (ratio, q1, q3) = median(
                seconds[i]
                    .iter()
                    .zip(&seconds[base])
                    .map(|(t, u)| t / u)
                    .collect(),
            );
            println!(
                "time/stream/{}: {ns:.1} ns per frame, {:.1}% of {}'s time per frame \
                 (median of {rounds} alternated rounds; quartiles {:.1}%..{:.1}%)",
                drivers[i].name,
                100.0 * ratio,
                drivers[base].name,
                100.0 * q1,
                100.0 * q3,
            );
        }
    }
}
