//! The comparison: the arms alternated in short rounds, in a balanced order.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lens_testkit::order::balanced_order;

use super::arm::arm;
use super::collectors::{Collectors, closed_port};
use super::latency::{mean, percentile};
use super::mode::Mode;
use super::options::OtlpOptions;
use super::report::{ArmStats, OtlpReport, RoundStats};
use super::round::round;
use crate::error::SoakError;
use crate::nonce::nonce;

/// Runs the comparison. Call from within a multi-threaded Tokio runtime.
pub async fn run_otlp_faults(options: &OtlpOptions) -> Result<OtlpReport, SoakError> {
    let arm_count = Mode::ALL.len() as u32;
    if options.concurrency == 0
        || options.round.is_zero()
        || options.duration < options.round * arm_count
    {
        return Err(SoakError::Options(format!(
            "concurrency above zero, and a duration of at least {arm_count} rounds"
        )));
    }
    let collectors = Collectors::start()?;
    let mut arms = Vec::with_capacity(Mode::ALL.len());
    for mode in Mode::ALL {
        let target = match mode {
            Mode::NoExporter => None,
            Mode::Healthy => Some(collectors.healthy),
            Mode::CollectorDown => Some(closed_port()?),
            Mode::BlackHole => Some(collectors.black_hole),
        };
        arms.push(arm(mode, target, options).await?);
    }
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| SoakError::Client(e.to_string()))?;
    let nonce = nonce();
    let next = Arc::new(AtomicU64::new(0));

    // Warm-up: one round per arm, not counted.
    for a in &arms {
        let _ = round(
            &client,
            &a.chain.url(),
            nonce,
            &next,
            options.concurrency,
            options.round,
        )
        .await;
    }
    // Each cycle runs every arm once, in the order of a balanced Latin square: over every
    // `arms.len()` cycles each arm follows every other arm once, so what an arm leaves behind
    // (exports still queued, a collector's work) falls on each of the others alike.
    let rounds = (options.duration.as_nanos() / options.round.as_nanos().max(1)) as usize;
    for r in 0..rounds {
        let cycle = r / arms.len();
        let i = balanced_order(arms.len(), cycle, r % arms.len());
        let a = &mut arms[i];
        let (mut latencies, failed, mixups) = round(
            &client,
            &a.chain.url(),
            nonce,
            &next,
            options.concurrency,
            options.round,
        )
        .await;
        a.latencies_us.extend_from_slice(&latencies);
        a.failed += failed;
        a.mixups += mixups;
        latencies.sort_unstable();
        a.rounds.resize(cycle + 1, None);
        a.rounds[cycle] = (!latencies.is_empty()).then(|| RoundStats {
            mean_us: mean(&latencies),
            p50_us: percentile(&latencies, 0.5),
        });
    }

    let mut report = OtlpReport {
        arms: Vec::new(),
        black_hole_connections: collectors.accepted.load(Ordering::Relaxed),
        healthy_exports_received: collectors.received.load(Ordering::Relaxed),
        max_slowdown_percent: options.max_slowdown_percent,
    };
    for mut a in arms {
        a.latencies_us.sort_unstable();
        report.arms.push((
            a.mode,
            ArmStats {
                requests: a.latencies_us.len() as u64,
                failed: a.failed,
                mixups: a.mixups,
                mean_us: mean(&a.latencies_us),
                p50_us: percentile(&a.latencies_us, 0.5),
                p99_us: percentile(&a.latencies_us, 0.99),
                exports_failed: a.exports_failed.load(Ordering::Relaxed),
                exports_ok: a.exports_ok.load(Ordering::Relaxed),
                rounds: a.rounds,
            },
        ));
        drop(a.chain);
        // A black-holed export may hold the processor's thread until its timeout: shut down in
        // the background rather than wait for it.
        let provider = a.provider;
        std::thread::spawn(move || {
            let _ = provider.shutdown_with_timeout(Duration::from_millis(100));
        });
    }
    // The collectors stop here; a black-holed export still waiting sees its connection close.
    drop(collectors);
    Ok(report)
}
