//! [`run_otlp_faults`]: the chain's request latency when the OTLP collector is down or
//! black-holing, against the same exporter with a healthy collector, measured in the same run,
//! the arms alternated in short rounds.
//!
//! The reference is the healthy collector, not a provider without exporter: a fault must not
//! slow requests, and what exporting costs at all (building every span's data, the processor's
//! thread, encoding) is paid with a healthy collector too. A provider without exporter is still
//! run, and the slow-down against it reported, as that cost.

use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use axum::routing::post;
use lens_testkit::order::balanced_order;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, SpanData, SpanExporter,
};

use crate::chain::{Chain, Outcome, RequestId, send};
use crate::{SoakError, nonce};

/// Where the spans go in one arm of the comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Mode {
    /// No exporter (a tracer provider without span processor): what exporting costs at all.
    NoExporter,
    /// OTLP/HTTP to a collector that answers every export `200 OK`: the reference.
    Healthy,
    /// OTLP/HTTP to a port nothing listens on (connection refused).
    CollectorDown,
    /// OTLP/HTTP to a listener that accepts connections and never answers.
    BlackHole,
}

impl Mode {
    /// The arms, in the order of the first round.
    pub const ALL: [Mode; 4] = [
        Mode::NoExporter,
        Mode::Healthy,
        Mode::CollectorDown,
        Mode::BlackHole,
    ];

    /// The arms a fault is measured in.
    pub const FAULTS: [Mode; 2] = [Mode::CollectorDown, Mode::BlackHole];

    /// The arm the faults are compared with.
    pub const REFERENCE: Mode = Mode::Healthy;
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::NoExporter => "no exporter",
            Mode::Healthy => "collector healthy (reference)",
            Mode::CollectorDown => "collector down",
            Mode::BlackHole => "collector black-holing",
        })
    }
}

/// Options of [`run_otlp_faults`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct OtlpOptions {
    /// Total measuring time, shared by the arms (warm-up rounds not included).
    pub duration: Duration,
    /// Concurrent clients.
    pub concurrency: usize,
    /// Length of one round (one arm at a time).
    pub round: Duration,
    /// Largest allowed slow-down of a fault arm against the reference, in percent.
    pub max_slowdown_percent: u64,
    /// Timeout of each OTLP export.
    pub export_timeout: Duration,
}

impl OtlpOptions {
    /// `duration` with `concurrency` clients, 50 ms rounds, 5% allowed, 2 s export timeout.
    pub fn new(duration: Duration, concurrency: usize) -> Self {
        OtlpOptions {
            duration,
            concurrency,
            round: Duration::from_millis(50),
            max_slowdown_percent: 5,
            export_timeout: Duration::from_secs(2),
        }
    }
}

/// Latencies of one arm.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ArmStats {
    /// Requests answered.
    pub requests: u64,
    /// Requests failed.
    pub failed: u64,
    /// Requests whose hops saw other ids.
    pub mixups: u64,
    /// Mean latency over all its rounds, microseconds.
    pub mean_us: f64,
    /// Median latency over all its rounds, microseconds.
    pub p50_us: f64,
    /// 99th percentile latency over all its rounds, microseconds.
    pub p99_us: f64,
    /// Exports the processor attempted that failed (or timed out).
    pub exports_failed: u64,
    /// Exports that succeeded (only the healthy collector answers).
    pub exports_ok: u64,
    /// Mean and median latency of each of its rounds, indexed by cycle (`None`: no round in that
    /// cycle, or none of its requests answered).
    pub rounds: Vec<Option<RoundStats>>,
}

/// Latency of one round of one arm.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct RoundStats {
    /// Mean latency, microseconds.
    pub mean_us: f64,
    /// Median latency, microseconds.
    pub p50_us: f64,
}

/// Which latency of a round a ratio compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Statistic {
    /// The round's mean latency.
    Mean,
    /// The round's median latency.
    Median,
}

/// What [`run_otlp_faults`] measured.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct OtlpReport {
    /// Per arm, in [`Mode::ALL`] order.
    pub arms: Vec<(Mode, ArmStats)>,
    /// Connections the black-hole listener accepted (the exporter did try it).
    pub black_hole_connections: u64,
    /// Exports the healthy collector answered.
    pub healthy_exports_received: u64,
    /// The allowed slow-down, in percent.
    pub max_slowdown_percent: u64,
}

impl OtlpReport {
    /// The stats of one arm.
    pub fn arm(&self, mode: Mode) -> Option<&ArmStats> {
        self.arms.iter().find(|(m, _)| *m == mode).map(|(_, s)| s)
    }

    /// The slow-down of `mode` against `against` (1.0: the same): within each cycle, the ratio
    /// of the two arms' rounds; then the median over the cycles. Pairing rounds of the same
    /// cycle cancels drift of the machine's speed, and the median a burst of other load in one
    /// round. `None` when no cycle has a round of both.
    pub fn ratio(&self, mode: Mode, against: Mode, statistic: Statistic) -> Option<f64> {
        let (a, b) = (self.arm(mode)?, self.arm(against)?);
        let pick = |r: &RoundStats| match statistic {
            Statistic::Mean => r.mean_us,
            Statistic::Median => r.p50_us,
        };
        let mut ratios: Vec<f64> = a
            .rounds
            .iter()
            .zip(&b.rounds)
            .filter_map(|(x, y)| Some(pick(x.as_ref()?) / pick(y.as_ref()?).max(f64::EPSILON)))
            .collect();
        if ratios.is_empty() {
            return None;
        }
        ratios.sort_unstable_by(f64::total_cmp);
        let n = ratios.len();
        Some(if n % 2 == 1 {
            ratios[n / 2]
        } else {
            (ratios[n / 2 - 1] + ratios[n / 2]) / 2.0
        })
    }

    /// Every check that failed; empty when the run passed.
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        let limit = 1.0 + self.max_slowdown_percent as f64 / 100.0;
        for (mode, stats) in &self.arms {
            if stats.requests == 0 {
                out.push(format!("{mode}: no request completed"));
            }
            if stats.failed > 0 {
                out.push(format!("{mode}: {} requests failed", stats.failed));
            }
            if stats.mixups > 0 {
                out.push(format!("{mode}: {} context mix-ups", stats.mixups));
            }
            if !Mode::FAULTS.contains(mode) {
                continue;
            }
            if stats.exports_ok > 0 {
                out.push(format!(
                    "{mode}: {} exports succeeded against a dead collector",
                    stats.exports_ok
                ));
            }
            for (what, statistic) in [("mean", Statistic::Mean), ("median", Statistic::Median)] {
                match self.ratio(*mode, Mode::REFERENCE, statistic) {
                    Some(r) if r > limit => out.push(format!(
                        "{mode}: {what} latency {:.1}% above the healthy collector's (limit {}%)",
                        (r - 1.0) * 100.0,
                        self.max_slowdown_percent
                    )),
                    Some(_) => {}
                    None => out.push(format!(
                        "{mode}: no cycle with a round of it and of the healthy collector"
                    )),
                }
            }
        }
        if self
            .arm(Mode::CollectorDown)
            .is_some_and(|s| s.exports_failed == 0)
        {
            out.push("collector down: the exporter never tried to export".to_owned());
        }
        if self.black_hole_connections == 0 {
            out.push("black hole: the exporter never connected".to_owned());
        }
        if self.arm(Mode::Healthy).is_some_and(|s| s.exports_ok == 0)
            || self.healthy_exports_received == 0
        {
            out.push("healthy collector: no export reached it".to_owned());
        }
        out
    }
}

/// Wraps an exporter and counts its results.
#[derive(Debug)]
struct Counted<E> {
    inner: E,
    ok: Arc<AtomicU64>,
    failed: Arc<AtomicU64>,
}

impl<E: SpanExporter> SpanExporter for Counted<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let result = self.inner.export(batch).await;
        match &result {
            Ok(()) => self.ok.fetch_add(1, Ordering::Relaxed),
            Err(_) => self.failed.fetch_add(1, Ordering::Relaxed),
        };
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }
}

/// One arm: its provider, chain and counters.
struct Arm {
    mode: Mode,
    provider: SdkTracerProvider,
    chain: Chain,
    exports_ok: Arc<AtomicU64>,
    exports_failed: Arc<AtomicU64>,
    latencies_us: Vec<u32>,
    rounds: Vec<Option<RoundStats>>,
    failed: u64,
    mixups: u64,
}

/// The two collectors on loopback, on a thread and runtime of their own (as another process
/// would be, so that an export waiting on them never waits for the chain's runtime):
/// * healthy: answers every `POST /v1/traces` `200 OK` with an empty body (a valid, empty
///   `ExportTraceServiceResponse`);
/// * black hole: accepts connections, keeps them open and never answers.
struct Collectors {
    healthy: SocketAddr,
    black_hole: SocketAddr,
    received: Arc<AtomicU64>,
    accepted: Arc<AtomicU64>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Collectors {
    fn start() -> Result<Collectors, SoakError> {
        let bind = || -> Result<(std::net::TcpListener, SocketAddr), SoakError> {
            let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
            listener.set_nonblocking(true)?;
            let addr = listener.local_addr()?;
            Ok((listener, addr))
        };
        let (healthy_listener, healthy) = bind()?;
        let (black_hole_listener, black_hole) = bind()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let received = Arc::new(AtomicU64::new(0));
        let accepted = Arc::new(AtomicU64::new(0));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (received2, accepted2) = (Arc::clone(&received), Arc::clone(&accepted));
        let thread = std::thread::Builder::new()
            .name("lens-soak-collectors".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let (Ok(healthy_listener), Ok(black_hole_listener)) = (
                        tokio::net::TcpListener::from_std(healthy_listener),
                        tokio::net::TcpListener::from_std(black_hole_listener),
                    ) else {
                        return;
                    };
                    let router = Router::new().route(
                        "/v1/traces",
                        post(move |_body: Bytes| async move {
                            received2.fetch_add(1, Ordering::Relaxed);
                            ([(CONTENT_TYPE, "application/x-protobuf")], Bytes::new())
                        }),
                    );
                    let healthy = axum::serve(healthy_listener, router);
                    let black_hole = async move {
                        let mut held = Vec::new();
                        while let Ok((stream, _)) = black_hole_listener.accept().await {
                            accepted2.fetch_add(1, Ordering::Relaxed);
                            held.push(stream);
                        }
                    };
                    tokio::select! {
                        _ = healthy => {}
                        () = black_hole => {}
                        _ = stopped => {}
                    }
                });
            })?;
        Ok(Collectors {
            healthy,
            black_hole,
            received,
            accepted,
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Collectors {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A port on 127.0.0.1 that nothing listens on (bound, then released).
fn closed_port() -> Result<SocketAddr, SoakError> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    drop(listener);
    Ok(addr)
}

/// An OTLP/HTTP (protobuf) exporter to `addr`, on reqwest's blocking client (built on a plain
/// thread: it must not be built inside the async runtime).
fn otlp_exporter(
    addr: SocketAddr,
    timeout: Duration,
) -> Result<opentelemetry_otlp::SpanExporter, SoakError> {
    let client = std::thread::spawn(move || {
        reqwest::blocking::Client::builder()
            .timeout(timeout)
            .build()
    })
    .join()
    .map_err(|_| SoakError::Exporter("building the HTTP client panicked".into()))?
    .map_err(|e| SoakError::Exporter(e.to_string()))?;
    opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(client)
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(format!("http://{addr}/v1/traces"))
        .with_timeout(timeout)
        .build()
        .map_err(|e| SoakError::Exporter(e.to_string()))
}

async fn arm(
    mode: Mode,
    target: Option<SocketAddr>,
    options: &OtlpOptions,
) -> Result<Arm, SoakError> {
    let exports_ok = Arc::new(AtomicU64::new(0));
    let exports_failed = Arc::new(AtomicU64::new(0));
    let provider = match target {
        None => SdkTracerProvider::builder().build(),
        Some(addr) => {
            let exporter = Counted {
                inner: otlp_exporter(addr, options.export_timeout)?,
                ok: Arc::clone(&exports_ok),
                failed: Arc::clone(&exports_failed),
            };
            // The SDK's defaults (queue 2048, batches of 512) but a short delay, so that
            // exports are attempted throughout the short rounds.
            let config = BatchConfigBuilder::default()
                .with_scheduled_delay(Duration::from_millis(200))
                .build();
            SdkTracerProvider::builder()
                .with_span_processor(
                    BatchSpanProcessor::builder(exporter)
                        .with_batch_config(config)
                        .build(),
                )
                .build()
        }
    };
    let chain = Chain::start(provider.tracer("lens-soak")).await?;
    Ok(Arm {
        mode,
        provider,
        chain,
        exports_ok,
        exports_failed,
        latencies_us: Vec::new(),
        rounds: Vec::new(),
        failed: 0,
        mixups: 0,
    })
}

/// Runs `concurrency` clients against `url` for `round`; latencies of the answered requests,
/// failures, mix-ups.
async fn round(
    client: &reqwest::Client,
    url: &str,
    nonce: u64,
    next: &Arc<AtomicU64>,
    concurrency: usize,
    round: Duration,
) -> (Vec<u32>, u64, u64) {
    let deadline = Instant::now() + round;
    let results = Arc::new(Mutex::new((Vec::new(), 0u64, 0u64)));
    let mut tasks = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        let (client, url, next, results) = (
            client.clone(),
            url.to_owned(),
            Arc::clone(next),
            Arc::clone(&results),
        );
        tasks.push(tokio::spawn(async move {
            let mut local = (Vec::new(), 0u64, 0u64);
            while Instant::now() < deadline {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let start = Instant::now();
                let outcome = send(&client, &url, RequestId { nonce, index }).await;
                let micros = u32::try_from(start.elapsed().as_micros()).unwrap_or(u32::MAX);
                match outcome {
                    Outcome::Ok => local.0.push(micros),
                    Outcome::Failed(_) => local.1 += 1,
                    Outcome::MixedUp { .. } => local.2 += 1,
                }
            }
            let mut all = results.lock().unwrap_or_else(PoisonError::into_inner);
            all.0.extend_from_slice(&local.0);
            all.1 += local.1;
            all.2 += local.2;
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
    let mut all = results.lock().unwrap_or_else(PoisonError::into_inner);
    (std::mem::take(&mut all.0), all.1, all.2)
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((sorted.len() - 1) as f64 * p).round() as usize;
    f64::from(sorted[rank.min(sorted.len() - 1)])
}

fn mean(values: &[u32]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.iter().map(|&v| f64::from(v)).sum::<f64>() / values.len() as f64
}

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

#[cfg(test)]
mod tests {
    use super::*;

    /// A report whose arms ran `cycles` cycles; `latency(mode, cycle)` is each round's mean and
    /// median. Every other check passes.
    fn report(cycles: usize, latency: impl Fn(Mode, usize) -> f64) -> OtlpReport {
        let arms = Mode::ALL
            .iter()
            .map(|&mode| {
                let stats = ArmStats {
                    requests: 100,
                    exports_failed: u64::from(Mode::FAULTS.contains(&mode)),
                    exports_ok: u64::from(mode == Mode::Healthy),
                    rounds: (0..cycles)
                        .map(|c| {
                            Some(RoundStats {
                                mean_us: latency(mode, c),
                                p50_us: latency(mode, c),
                            })
                        })
                        .collect(),
                    ..ArmStats::default()
                };
                (mode, stats)
            })
            .collect();
        OtlpReport {
            arms,
            black_hole_connections: 1,
            healthy_exports_received: 1,
            max_slowdown_percent: 5,
        }
    }

    #[test]
    fn a_fault_arm_slower_in_every_cycle_fails() {
        let r = report(9, |mode, _| {
            if mode == Mode::CollectorDown {
                1080.0
            } else {
                1000.0
            }
        });
        let failures = r.failures();
        assert_eq!(failures.len(), 2, "{failures:?}");
        assert!(failures[0].starts_with("collector down: mean latency 8.0% above"));
        assert!(failures[1].starts_with("collector down: median latency 8.0% above"));
    }

    #[test]
    fn one_slow_round_is_not_a_slow_down() {
        // Other load on the machine during one round of the black hole: the median over the
        // cycles does not move; a mean pooled over all rounds would (1.22x here).
        let r = report(9, |mode, cycle| {
            if mode == Mode::BlackHole && cycle == 4 {
                3000.0
            } else {
                1000.0
            }
        });
        assert_eq!(r.failures(), Vec::<String>::new());
    }

    #[test]
    fn the_machine_slowing_down_is_cancelled_by_pairing() {
        // Every arm 3% slower each cycle; the black hole 4% slower than the reference in each.
        let r = report(10, |mode, cycle| {
            let machine = 1000.0 * 1.03f64.powi(cycle as i32);
            if mode == Mode::BlackHole {
                machine * 1.04
            } else {
                machine
            }
        });
        let ratio = r.ratio(Mode::BlackHole, Mode::REFERENCE, Statistic::Median);
        assert!(ratio.is_some_and(|x| (x - 1.04).abs() < 1e-9), "{ratio:?}");
        assert_eq!(r.failures(), Vec::<String>::new());
    }

    #[test]
    fn cycles_without_a_round_of_both_are_left_out() {
        let mut r = report(3, |mode, cycle| {
            if mode == Mode::CollectorDown && cycle == 2 {
                5000.0
            } else {
                1000.0
            }
        });
        // The reference's last round answered nothing: cycle 2 cannot be compared.
        r.arms[1].1.rounds[2] = None;
        assert_eq!(
            r.ratio(Mode::CollectorDown, Mode::REFERENCE, Statistic::Mean),
            Some(1.0)
        );
        r.arms[1].1.rounds.clear();
        assert_eq!(
            r.ratio(Mode::CollectorDown, Mode::REFERENCE, Statistic::Mean),
            None
        );
        assert!(
            r.failures()
                .iter()
                .any(|f| f.starts_with("collector down: no cycle with a round"))
        );
    }

    #[test]
    fn a_healthy_collector_that_received_nothing_fails() {
        let mut r = report(3, |_, _| 1000.0);
        r.healthy_exports_received = 0;
        assert_eq!(
            r.failures(),
            vec!["healthy collector: no export reached it".to_owned()]
        );
    }
}
