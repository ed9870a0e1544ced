//! [`run_otlp_faults`]: the chain's request latency when the OTLP collector is down or
//! black-holing, against a baseline without exporter, measured in the same run, the three
//! alternated in short rounds.

use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, SpanData, SpanExporter,
};
use tokio::task::JoinHandle;

use crate::chain::{Chain, Outcome, RequestId, send};
use crate::{SoakError, nonce};

/// Where the spans go in one arm of the comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Mode {
    /// No exporter (a tracer provider without span processor): the baseline.
    Baseline,
    /// OTLP/HTTP to a port nothing listens on (connection refused).
    CollectorDown,
    /// OTLP/HTTP to a listener that accepts connections and never answers.
    BlackHole,
}

impl Mode {
    /// The three arms, in the order of the first round.
    pub const ALL: [Mode; 3] = [Mode::Baseline, Mode::CollectorDown, Mode::BlackHole];
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Baseline => "no exporter (baseline)",
            Mode::CollectorDown => "collector down",
            Mode::BlackHole => "collector black-holing",
        })
    }
}

/// Options of [`run_otlp_faults`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct OtlpOptions {
    /// Total measuring time, shared by the three arms (warm-up rounds not included).
    pub duration: Duration,
    /// Concurrent clients.
    pub concurrency: usize,
    /// Length of one round (one arm at a time).
    pub round: Duration,
    /// Largest allowed slow-down of an arm against the baseline, in percent.
    pub max_slowdown_percent: u64,
    /// Timeout of each OTLP export.
    pub export_timeout: Duration,
}

impl OtlpOptions {
    /// `duration` with `concurrency` clients, 250 ms rounds, 5% allowed, 2 s export timeout.
    pub fn new(duration: Duration, concurrency: usize) -> Self {
        OtlpOptions {
            duration,
            concurrency,
            round: Duration::from_millis(250),
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
    /// Mean latency, microseconds.
    pub mean_us: f64,
    /// Median latency, microseconds.
    pub p50_us: f64,
    /// 99th percentile latency, microseconds.
    pub p99_us: f64,
    /// Exports the batch processor attempted that failed (or timed out).
    pub exports_failed: u64,
    /// Exports that succeeded (none expected with a dead collector).
    pub exports_ok: u64,
}

/// What [`run_otlp_faults`] measured.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct OtlpReport {
    /// Per arm, in [`Mode::ALL`] order.
    pub arms: Vec<(Mode, ArmStats)>,
    /// Connections the black-hole listener accepted (the exporter did try it).
    pub black_hole_connections: u64,
    /// The allowed slow-down, in percent.
    pub max_slowdown_percent: u64,
}

impl OtlpReport {
    /// The stats of one arm.
    pub fn arm(&self, mode: Mode) -> Option<&ArmStats> {
        self.arms.iter().find(|(m, _)| *m == mode).map(|(_, s)| s)
    }

    /// Mean latency of `mode` over the baseline's (1.0: the same).
    pub fn mean_ratio(&self, mode: Mode) -> Option<f64> {
        let base = self.arm(Mode::Baseline)?.mean_us;
        Some(self.arm(mode)?.mean_us / base.max(f64::EPSILON))
    }

    /// Median latency of `mode` over the baseline's.
    pub fn p50_ratio(&self, mode: Mode) -> Option<f64> {
        let base = self.arm(Mode::Baseline)?.p50_us;
        Some(self.arm(mode)?.p50_us / base.max(f64::EPSILON))
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
            if *mode == Mode::Baseline {
                continue;
            }
            if stats.exports_ok > 0 {
                out.push(format!(
                    "{mode}: {} exports succeeded against a dead collector",
                    stats.exports_ok
                ));
            }
            for (what, ratio) in [
                ("mean", self.mean_ratio(*mode)),
                ("median", self.p50_ratio(*mode)),
            ] {
                if let Some(r) = ratio
                    && r > limit
                {
                    out.push(format!(
                        "{mode}: {what} latency {:.1}% above the baseline (limit {}%)",
                        (r - 1.0) * 100.0,
                        self.max_slowdown_percent
                    ));
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
    failed: u64,
    mixups: u64,
}

/// A listener on 127.0.0.1 that accepts connections, keeps them open and never answers.
struct BlackHole {
    addr: SocketAddr,
    accepted: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl BlackHole {
    async fn start() -> Result<BlackHole, SoakError> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let accepted = Arc::new(AtomicU64::new(0));
        let count = Arc::clone(&accepted);
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::Relaxed);
                held.push(stream);
            }
        });
        Ok(BlackHole {
            addr,
            accepted,
            task,
        })
    }
}

impl Drop for BlackHole {
    fn drop(&mut self) {
        self.task.abort();
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

async fn arm(mode: Mode, target: Option<SocketAddr>, timeout: Duration) -> Result<Arm, SoakError> {
    let exports_ok = Arc::new(AtomicU64::new(0));
    let exports_failed = Arc::new(AtomicU64::new(0));
    let provider = match target {
        None => SdkTracerProvider::builder().build(),
        Some(addr) => {
            let exporter = Counted {
                inner: otlp_exporter(addr, timeout)?,
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

/// Runs the comparison. Call from within a multi-threaded Tokio runtime.
pub async fn run_otlp_faults(options: &OtlpOptions) -> Result<OtlpReport, SoakError> {
    if options.concurrency == 0 || options.round.is_zero() || options.duration < options.round * 3 {
        return Err(SoakError::Options(
            "concurrency above zero, and a duration of at least three rounds".into(),
        ));
    }
    let black_hole = BlackHole::start().await?;
    let mut arms = vec![
        arm(Mode::Baseline, None, options.export_timeout).await?,
        arm(
            Mode::CollectorDown,
            Some(closed_port()?),
            options.export_timeout,
        )
        .await?,
        arm(
            Mode::BlackHole,
            Some(black_hole.addr),
            options.export_timeout,
        )
        .await?,
    ];
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
    // Rounds rotate through the arms, starting one later each cycle, so that no arm always
    // follows the same one.
    let rounds = (options.duration.as_nanos() / options.round.as_nanos().max(1)) as usize;
    for r in 0..rounds {
        let cycle = r / arms.len();
        let i = (r + cycle) % arms.len();
        let a = &mut arms[i];
        let (latencies, failed, mixups) = round(
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
    }

    let mut report = OtlpReport {
        arms: Vec::new(),
        black_hole_connections: black_hole.accepted.load(Ordering::Relaxed),
        max_slowdown_percent: options.max_slowdown_percent,
    };
    for mut a in arms {
        a.latencies_us.sort_unstable();
        let n = a.latencies_us.len();
        let mean = if n == 0 {
            0.0
        } else {
            a.latencies_us.iter().map(|&v| f64::from(v)).sum::<f64>() / n as f64
        };
        report.arms.push((
            a.mode,
            ArmStats {
                requests: n as u64,
                failed: a.failed,
                mixups: a.mixups,
                mean_us: mean,
                p50_us: percentile(&a.latencies_us, 0.5),
                p99_us: percentile(&a.latencies_us, 0.99),
                exports_failed: a.exports_failed.load(Ordering::Relaxed),
                exports_ok: a.exports_ok.load(Ordering::Relaxed),
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
    Ok(report)
}
