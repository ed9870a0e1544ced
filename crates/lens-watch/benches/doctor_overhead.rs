//! `cargo xtask bench watch`: what the propagation doctor adds to ingest. Two arms on the same
//! OTLP/protobuf bytes, each with its own store: the receiver alone (decode, assemble, complete
//! the traces) and the receiver with the doctor diagnosing every trace as it completes, as
//! `lens watch` does. The arms alternate batch by batch (which goes first alternating too) and
//! the ratio of their times is taken per round of 8 batches: the median and quartiles of those ratios are
//! printed, and compare across loaded machines where separate measurements would not. Each arm
//! is timed by the thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`; the wall clock off Linux), so
//! that another process taking the CPU in the middle of an arm does not count against it.
//!
//! Fixture: the ingest bench's batches of 512 realistic spans (8 traces of 64 a batch, one
//! service a batch), batch `n` shifted `n` × 100 ms in span time, so that the doctor's index
//! reaches its steady state: every trace's root SERVER span and its last CLIENT span (a call
//! with no child) wait in it, about 10,000 candidates within its 60 s horizon. No finding: the
//! traces are healthy (checked before the timed rounds).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use lens_watch::assemble::{Assembler, Config};
use lens_watch::decode::decode_protobuf;
use lens_watch::diagnose::{Doctor, DoctorConfig};
use lens_watch::encode;
use prost::Message as _;

#[path = "support/fixture.rs"]
mod fixture;

/// Span time between two batches.
const SHIFT_NANOS: u64 = 100_000_000;
/// Batches before the timed rounds (60 s of span time and more: the index is full).
const WARM_UP: u64 = 700;
/// Timed rounds, and batches per arm in each.
const ROUNDS: usize = 101;
const PER_ROUND: u64 = 8;

/// The CPU time of this thread (`CLOCK_THREAD_CPUTIME_ID`), on Linux.
#[cfg(target_os = "linux")]
fn on_cpu() -> Option<Duration> {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Some(Duration::new(
        u64::try_from(t.tv_sec).ok()?,
        u32::try_from(t.tv_nsec).ok()?,
    ))
}

/// Elsewhere: none (the wall clock is used).
#[cfg(not(target_os = "linux"))]
fn on_cpu() -> Option<Duration> {
    None
}

/// A stopwatch of the thread's time on a CPU, else of the wall clock.
struct Stopwatch(Result<Duration, Instant>);

impl Stopwatch {
    fn start() -> Self {
        Stopwatch(on_cpu().ok_or_else(Instant::now))
    }

    fn elapsed(&self) -> Duration {
        match self.0 {
            Ok(cpu) => on_cpu().unwrap_or(cpu).saturating_sub(cpu),
            Err(wall) => wall.elapsed(),
        }
    }
}

/// Batch `n` as the bytes of an OTLP/protobuf request.
fn batch(n: u64) -> Vec<u8> {
    let mut spans = fixture::spans(n);
    for span in &mut spans {
        span.start_unix_nano += n * SHIFT_NANOS;
        span.end_unix_nano += n * SHIFT_NANOS;
        for event in &mut span.events {
            event.time_unix_nano += n * SHIFT_NANOS;
        }
    }
    encode::to_request(&spans).encode_to_vec()
}

/// A receiver's store: traces complete as soon as they are polled (no quiet window), held up to
/// `lens watch`'s default of 10,000 traces.
fn store() -> Assembler {
    Assembler::new(Config {
        quiet_for: Duration::ZERO,
        ..Config::default()
    })
}

/// The receiver's work on one request: decode, assemble, complete; then, with a doctor, the
/// diagnosis of each completed trace. Returns the findings.
fn ingest(bytes: &[u8], assembler: &mut Assembler, doctor: Option<&mut Doctor>) -> usize {
    let batch = decode_protobuf(black_box(bytes)).unwrap();
    let now = Instant::now();
    assembler.insert(batch.spans, now);
    let done = assembler.poll(now);
    match doctor {
        None => {
            black_box(done);
            0
        }
        Some(doctor) => done
            .iter()
            .map(|id| {
                black_box(doctor.diagnose(assembler.trace(id).expect("held"), assembler)).len()
            })
            .sum(),
    }
}

/// Leaves the allocator as the other arm found it: a 64 KiB allocation makes glibc's malloc
/// consolidate the small chunks freed before (by the fixture, or the other arm) now, untimed,
/// rather than in whichever arm allocates a large block next.
fn settle() {
    drop(black_box(Vec::<u8>::with_capacity(64 * 1024)));
}

fn quartiles(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (at(0.25), at(0.5), at(0.75))
}

fn main() {
    // `cargo test --benches` runs bench binaries with `--test`-like arguments: keep it quick.
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return;
    }
    let (mut alone, mut with) = (store(), store());
    let mut doctor = Doctor::new(DoctorConfig::default());
    let mut findings = 0;
    for n in 0..WARM_UP {
        let bytes = batch(n);
        ingest(&bytes, &mut alone, None);
        findings += ingest(&bytes, &mut with, Some(&mut doctor));
    }
    // Checked before it is timed: every trace completed and diagnosed, none with a finding,
    // and the index at its steady state.
    assert_eq!(findings, 0);
    assert_eq!(
        alone.stats().traces_completed,
        WARM_UP * (fixture::BATCH / fixture::PER_TRACE) as u64
    );
    assert_eq!(with.stats(), alone.stats());
    let held = doctor.candidates();
    assert!(held > 5_000, "{held} candidates");

    let mut ratios = Vec::with_capacity(ROUNDS);
    let (mut time_alone, mut time_with) = (Duration::ZERO, Duration::ZERO);
    let mut next = WARM_UP;
    for round in 0..ROUNDS {
        let bytes: Vec<Vec<u8>> = (next..next + PER_ROUND).map(batch).collect();
        next += PER_ROUND;
        // Batch by batch, each arm in turn (the first arm alternating), so that both arms of a
        // round meet the same conditions; the round's ratio compares their sums.
        let (mut a, mut w) = (Duration::ZERO, Duration::ZERO);
        for (i, b) in bytes.iter().enumerate() {
            for arm in [(round + i) % 2, (round + i + 1) % 2] {
                settle();
                let start = Stopwatch::start();
                if arm == 0 {
                    ingest(b, &mut alone, None);
                    a += start.elapsed();
                } else {
                    let found = ingest(b, &mut with, Some(&mut doctor));
                    w += start.elapsed();
                    assert_eq!(found, 0);
                }
            }
        }
        time_alone += a;
        time_with += w;
        ratios.push(w.as_secs_f64() / a.as_secs_f64());
    }
    let batches = (ROUNDS as u64 * PER_ROUND) as u32;
    let (q1, median, q3) = quartiles(ratios);
    println!(
        "watch ingest with the doctor, {ROUNDS} alternated rounds of {PER_ROUND} batches of {} \
spans (OTLP/protobuf; {} candidates in the doctor's index), {} time:",
        fixture::BATCH,
        doctor.candidates(),
        if on_cpu().is_some() {
            "on-CPU"
        } else {
            "wall-clock"
        }
    );
    println!(
        "  receiver alone (decode + assemble + complete): {:.0} µs per batch",
        (time_alone / batches).as_secs_f64() * 1e6
    );
    println!(
        "  with the doctor on every completed trace:      {:.0} µs per batch",
        (time_with / batches).as_secs_f64() * 1e6
    );
    println!("  with / alone: {median:.3} (quartiles {q1:.3}-{q3:.3}); the target is at most 1.10");
}
