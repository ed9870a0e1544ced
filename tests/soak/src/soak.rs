//! [`run_soak`]: the chain under `concurrency` concurrent clients for a while, then the checks:
//! no context mix-up, no lost span, flat memory.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};

use crate::chain::{Chain, Outcome, RequestId, send};
use crate::error::SoakError;
use crate::nonce::nonce;
use crate::rss::resident_bytes;
use crate::tally::{SPANS_PER_REQUEST, SpanTally, TallyCounts};

/// Options of [`run_soak`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SoakOptions {
    /// How long the clients send requests, warm-up included.
    pub duration: Duration,
    /// Concurrent clients, each sending its next request when the last one is answered.
    pub concurrency: usize,
    /// Time after which the "after warm-up" memory is measured.
    pub warmup: Duration,
    /// Largest allowed growth of the resident set from after warm-up to the end, in percent.
    pub max_rss_growth_percent: u64,
}

impl SoakOptions {
    /// `duration` with `concurrency` clients; warm-up a quarter of the duration (at most 5 s);
    /// memory may grow at most 10%.
    pub fn new(duration: Duration, concurrency: usize) -> Self {
        SoakOptions {
            duration,
            concurrency,
            warmup: (duration / 4).min(Duration::from_secs(5)),
            max_rss_growth_percent: 10,
        }
    }
}

/// What [`run_soak`] measured.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SoakReport {
    /// Requests sent (each answered or failed).
    pub requests: u64,
    /// Requests that failed.
    pub failed: u64,
    /// Requests where a hop saw another request's ids (or none).
    pub mixups: u64,
    /// The first few mix-ups and failures, for the log.
    pub examples: Vec<String>,
    /// What the exporter counted.
    pub spans: TallyCounts,
    /// Spans expected: requests × [`SPANS_PER_REQUEST`].
    pub spans_expected: u64,
    /// Resident set after the warm-up, in bytes.
    pub rss_after_warmup: Option<u64>,
    /// Resident set at the end (clients done, spans flushed), in bytes.
    pub rss_end: Option<u64>,
    /// The highest resident set sampled (once a second) after the warm-up.
    pub rss_max: Option<u64>,
    /// Time the clients ran.
    pub elapsed: Duration,
    /// The allowed memory growth, in percent.
    pub max_rss_growth_percent: u64,
}

impl SoakReport {
    /// Requests per second over the whole run.
    pub fn requests_per_second(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64().max(f64::EPSILON)
    }

    /// Memory growth from after warm-up to the end, in percent (negative: it shrank).
    pub fn rss_growth_percent(&self) -> Option<f64> {
        let (Some(warm), Some(end)) = (self.rss_after_warmup, self.rss_end) else {
            return None;
        };
        Some((end as f64 - warm as f64) * 100.0 / (warm as f64).max(1.0))
    }

    /// Every check that failed, as a sentence; empty when the soak passed.
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.requests == 0 {
            out.push("no request completed".to_owned());
        }
        if self.failed > 0 {
            out.push(format!("{} requests failed", self.failed));
        }
        if self.mixups > 0 {
            out.push(format!("{} context mix-ups", self.mixups));
        }
        let s = &self.spans;
        if s.exported != self.spans_expected {
            out.push(format!(
                "{} spans exported, {} expected ({} requests × {SPANS_PER_REQUEST})",
                s.exported, self.spans_expected, self.requests
            ));
        }
        for (count, what) in [
            (s.incomplete_requests, "requests lack a span"),
            (s.foreign, "spans belong to no request of the run"),
            (s.misparented, "front SERVER spans have the wrong parent"),
            (s.duplicate, "spans were exported twice"),
            (s.unexpected, "spans have an unexpected name or kind"),
        ] {
            if count > 0 {
                out.push(format!("{count} {what}"));
            }
        }
        match self.rss_growth_percent() {
            Some(growth) if growth > self.max_rss_growth_percent as f64 => out.push(format!(
                "resident memory grew {growth:.1}% after warm-up (limit {}%)",
                self.max_rss_growth_percent
            )),
            Some(_) => {}
            None => out.push("resident memory could not be read (/proc/self/status)".to_owned()),
        }
        out
    }
}

/// Counters shared by the client tasks.
#[derive(Default)]
struct Shared {
    next: AtomicU64,
    failed: AtomicU64,
    mixups: AtomicU64,
    examples: Mutex<Vec<String>>,
}

impl Shared {
    fn example(&self, text: String) {
        let mut examples = self.examples.lock().unwrap_or_else(PoisonError::into_inner);
        if examples.len() < 5 {
            examples.push(text);
        }
    }
}

/// A tracer provider whose batch processor exports into `tally`.
pub(crate) fn tally_provider(tally: SpanTally) -> SdkTracerProvider {
    let config = BatchConfigBuilder::default()
        .with_max_queue_size(1 << 16)
        .with_max_export_batch_size(512)
        .with_scheduled_delay(Duration::from_millis(100))
        .build();
    let processor = BatchSpanProcessor::builder(tally)
        .with_batch_config(config)
        .build();
    SdkTracerProvider::builder()
        .with_span_processor(processor)
        .build()
}

/// Runs the soak: starts the chain, runs the clients for `options.duration`, flushes the spans
/// and measures. Call from within a multi-threaded Tokio runtime.
pub async fn run_soak(options: &SoakOptions) -> Result<SoakReport, SoakError> {
    if options.concurrency == 0 || options.duration.is_zero() {
        return Err(SoakError::Options(
            "concurrency and duration must be above zero".into(),
        ));
    }
    let nonce = nonce();
    let tally = SpanTally::new(nonce);
    let provider = tally_provider(tally.clone());
    let chain = Chain::start(provider.tracer("lens-soak")).await?;
    let url = chain.url();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .pool_max_idle_per_host(options.concurrency)
        .build()
        .map_err(|e| SoakError::Client(e.to_string()))?;
    let shared = Arc::new(Shared::default());

    let started = Instant::now();
    let deadline = started + options.duration;
    let mut clients = Vec::with_capacity(options.concurrency);
    for _ in 0..options.concurrency {
        let (client, url, shared) = (client.clone(), url.clone(), Arc::clone(&shared));
        clients.push(tokio::spawn(async move {
            while Instant::now() < deadline {
                let index = shared.next.fetch_add(1, Ordering::Relaxed);
                match send(&client, &url, RequestId { nonce, index }).await {
                    Outcome::Ok => {}
                    Outcome::Failed(why) => {
                        shared.failed.fetch_add(1, Ordering::Relaxed);
                        shared.example(format!("request {index} failed: {why}"));
                    }
                    Outcome::MixedUp { body, expected } => {
                        shared.mixups.fetch_add(1, Ordering::Relaxed);
                        shared.example(format!(
                            "request {index} mixed up: got {body:?}, expected {expected:?}"
                        ));
                    }
                }
            }
        }));
    }

    tokio::time::sleep_until((started + options.warmup).into()).await;
    let rss_after_warmup = resident_bytes();
    let mut rss_max = rss_after_warmup;
    while Instant::now() < deadline {
        let next = (Instant::now() + Duration::from_secs(1)).min(deadline);
        tokio::time::sleep_until(next.into()).await;
        rss_max = rss_max.max(resident_bytes());
    }
    for client in clients {
        let _ = client.await;
    }
    let elapsed = started.elapsed();
    let flush = provider.clone();
    let _ = tokio::task::spawn_blocking(move || flush.force_flush()).await;
    let rss_end = resident_bytes();

    let requests = shared.next.load(Ordering::Relaxed);
    let report = SoakReport {
        requests,
        failed: shared.failed.load(Ordering::Relaxed),
        mixups: shared.mixups.load(Ordering::Relaxed),
        examples: shared
            .examples
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone(),
        spans: tally.counts(requests),
        spans_expected: requests * SPANS_PER_REQUEST,
        rss_after_warmup,
        rss_end,
        rss_max,
        elapsed,
        max_rss_growth_percent: options.max_rss_growth_percent,
    };
    drop(chain);
    let _ = tokio::task::spawn_blocking(move || provider.shutdown()).await;
    Ok(report)
}
