//! `lens watch` under load: N OpenTelemetry SDK exporters (real `opentelemetry-otlp` OTLP/HTTP
//! exporters, one tracer provider, logger provider and service each, in this process) send
//! traces, and a log record in each, at a fixed rate into one `lens watch --max-traces M
//! --max-logs L` for a fixed time, while its page is polled.
//!
//! The checks: every span sent is received, and accounted for (received = shown + held open +
//! dropped, from `GET /api/status`, with traces evicted); every log record sent is received
//! and accounted for (received = held + dropped, with records dropped); the resident memory
//! of the `lens watch` process (`VmRSS` of `/proc/<pid>/status`) stays under
//! [`WatchLoadReport::rss_bound`]; `GET /api/traces` answers within 100 ms at the 95th
//! percentile while loaded.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use opentelemetry::logs::{LogRecord as _, Logger as _, LoggerProvider as _, Severity};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry::trace::{Span as _, SpanKind, TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::{BatchLogProcessor, SdkLoggerProvider};
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};

use crate::error::SoakError;

/// Spans in each trace sent: a SERVER root, an INTERNAL child, a CLIENT grandchild.
pub const SPANS_PER_TRACE: u64 = 3;

/// The slowest `GET /api/traces` allowed at the 95th percentile while loaded.
pub const POLL_P95_LIMIT: Duration = Duration::from_millis(100);

/// What a held span may cost in resident memory, for the bound: docs/watch.md measures about
/// 1 KB a span held; four times that leaves room for the allocator.
pub const BYTES_PER_HELD_SPAN: u64 = 4 * 1024;

/// What a held log record may cost in resident memory, for the bound (a record is about the
/// size of a span: ids, a body, a few attributes).
pub const BYTES_PER_HELD_LOG: u64 = 4 * 1024;

/// Room above the idle process and the spans held: the receivers' bounded queue of decoded
/// batches, request buffers, the remembered ids of evicted traces (up to 100,000, about 5 MB).
pub const RSS_SLACK: u64 = 32 << 20;

/// How a load run is made.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct WatchLoadOptions {
    /// The `lens` binary.
    pub lens: PathBuf,
    /// How long the exporters send.
    pub duration: Duration,
    /// How many exporters (services) send at once.
    pub exporters: usize,
    /// Traces each exporter starts per second.
    pub traces_per_second: u64,
    /// `lens watch --max-traces`.
    pub max_traces: u64,
    /// `lens watch --max-logs`.
    pub max_logs: u64,
}

impl WatchLoadOptions {
    /// `exporters` exporters sending 25 traces/s each for `duration` into `lens watch
    /// --max-traces 200` (`lens`: the binary).
    pub fn new(lens: PathBuf, duration: Duration, exporters: usize) -> Self {
        WatchLoadOptions {
            lens,
            duration,
            exporters,
            traces_per_second: 25,
            max_traces: 200,
            max_logs: 1_000,
        }
    }
}

/// What a load run measured.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct WatchLoadReport {
    /// Spans the exporters ended (and so sent).
    pub spans_sent: u64,
    /// `/api/status` at the end: received, shown, held open, dropped (all reasons), traces
    /// evicted (of them while open).
    pub spans_received: u64,
    /// See [`WatchLoadReport::spans_received`].
    pub spans_shown: u64,
    /// See [`WatchLoadReport::spans_received`].
    pub spans_open: u64,
    /// See [`WatchLoadReport::spans_received`].
    pub spans_dropped: u64,
    /// See [`WatchLoadReport::spans_received`].
    pub evicted_traces: u64,
    /// See [`WatchLoadReport::spans_received`].
    pub evicted_open_traces: u64,
    /// Log records the exporters emitted (one a trace, inside it).
    pub logs_sent: u64,
    /// `/api/status` at the end: log records received, held and dropped (oldest first, over
    /// `--max-logs`).
    pub logs_received: u64,
    /// See [`WatchLoadReport::logs_received`].
    pub logs_held: u64,
    /// See [`WatchLoadReport::logs_received`].
    pub logs_dropped: u64,
    /// Resident memory of `lens watch` before the load and at most during it, in bytes.
    pub rss_idle: u64,
    /// See [`WatchLoadReport::rss_idle`].
    pub rss_max: u64,
    /// The bound on `rss_max`: idle + [`BYTES_PER_HELD_SPAN`] × the most spans held (max
    /// traces × spans per trace) + [`BYTES_PER_HELD_LOG`] × max logs + [`RSS_SLACK`].
    pub rss_bound: u64,
    /// `GET /api/traces` while loaded: how many, the median, the 95th percentile, the slowest.
    pub polls: usize,
    /// See [`WatchLoadReport::polls`].
    pub poll_p50: Duration,
    /// See [`WatchLoadReport::polls`].
    pub poll_p95: Duration,
    /// See [`WatchLoadReport::polls`].
    pub poll_max: Duration,
    /// How long the load ran.
    pub elapsed: Duration,
}

impl WatchLoadReport {
    /// Spans sent per second.
    pub fn spans_per_second(&self) -> f64 {
        self.spans_sent as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// The checks that failed, each as a sentence.
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.spans_received != self.spans_sent {
            out.push(format!(
                "spans received {} != spans sent {}",
                self.spans_received, self.spans_sent
            ));
        }
        let accounted = self.spans_shown + self.spans_open + self.spans_dropped;
        if accounted != self.spans_received {
            out.push(format!(
                "received {} != shown {} + open {} + dropped {}",
                self.spans_received, self.spans_shown, self.spans_open, self.spans_dropped
            ));
        }
        if self.logs_received != self.logs_sent {
            out.push(format!(
                "log records received {} != sent {}",
                self.logs_received, self.logs_sent
            ));
        }
        if self.logs_held + self.logs_dropped != self.logs_received {
            out.push(format!(
                "log records received {} != held {} + dropped {}",
                self.logs_received, self.logs_held, self.logs_dropped
            ));
        }
        if self.logs_dropped == 0 {
            out.push("no log record was dropped: --max-logs was never reached".into());
        }
        if self.evicted_traces == 0 {
            out.push("no trace was evicted: --max-traces was never reached".into());
        }
        if self.rss_max > self.rss_bound {
            out.push(format!(
                "resident memory {} B over the bound {} B",
                self.rss_max, self.rss_bound
            ));
        }
        if self.polls == 0 || self.poll_p95 > POLL_P95_LIMIT {
            out.push(format!(
                "GET /api/traces p95 {:?} over {POLL_P95_LIMIT:?} ({} polls)",
                self.poll_p95, self.polls
            ));
        }
        out
    }
}

/// `lens watch`, killed when dropped.
struct Watch {
    child: Child,
    http: String,
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Watch {
    fn start(options: &WatchLoadOptions) -> Result<Watch, SoakError> {
        let mut child = Command::new(&options.lens)
            .args(["watch", "--grpc", "127.0.0.1:0", "--http", "127.0.0.1:0"])
            .args(["--quiet-for", "0.3", "--json"])
            .args(["--max-traces", &options.max_traces.to_string()])
            .args(["--max-logs", &options.max_logs.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| SoakError::Options("no stderr".into()))?;
        let mut lines = BufReader::new(stderr).lines();
        let mut watch = Watch {
            child,
            http: String::new(),
        };
        for line in lines.by_ref() {
            let line = line?;
            if let Some(rest) = line.split("OTLP/HTTP on http://").nth(1) {
                watch.http = rest.split('/').next().unwrap_or_default().to_owned();
                break;
            }
        }
        if watch.http.is_empty() {
            return Err(SoakError::Options(
                "lens watch did not say where it listens".into(),
            ));
        }
        // Keep reading, so that a full pipe never stalls it.
        std::thread::spawn(move || lines.for_each(drop));
        Ok(watch)
    }

    fn rss(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .ok()
            .and_then(|s| crate::rss::parse_vm_rss(&s))
            .unwrap_or(0)
    }

    /// `GET path`: the body, and how long the answer took.
    fn get(&self, path: &str) -> Result<(String, Duration), SoakError> {
        let started = Instant::now();
        let mut stream = TcpStream::connect(&self.http)?;
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.http
        )?;
        let mut response = String::new();
        stream.read_to_string(&mut response)?;
        let took = started.elapsed();
        let body = response
            .split_once("\r\n\r\n")
            .map_or(String::new(), |(_, b)| b.to_owned());
        Ok((body, took))
    }

    fn status(&self) -> Result<serde_json::Value, SoakError> {
        let (body, _) = self.get("/api/status")?;
        serde_json::from_str(&body).map_err(|e| SoakError::Options(format!("/api/status: {e}")))
    }
}

/// One service's tracer and logger providers, each exporting over OTLP/HTTP to `http`.
fn provider(
    http: &str,
    service: String,
) -> Result<(SdkTracerProvider, SdkLoggerProvider), SoakError> {
    // The blocking client starts its own runtime: build it off any runtime thread.
    let client = || {
        std::thread::spawn(|| {
            reqwest::blocking::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
        })
        .join()
        .map_err(|_| SoakError::Client("building the HTTP client panicked".into()))?
        .map_err(|e| SoakError::Client(e.to_string()))
    };
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(client()?)
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(format!("http://{http}/v1/traces"))
        .build()
        .map_err(|e| SoakError::Exporter(e.to_string()))?;
    // A short delay (traces reach lens watch soon after they end) and a queue that holds a
    // second of this exporter's spans many times over: the SDK drops nothing.
    let config = BatchConfigBuilder::default()
        .with_scheduled_delay(Duration::from_millis(200))
        .with_max_queue_size(16_384)
        .build();
    let resource = Resource::builder().with_service_name(service).build();
    let tracer_provider = SdkTracerProvider::builder()
        .with_resource(resource.clone())
        .with_span_processor(
            BatchSpanProcessor::builder(exporter)
                .with_batch_config(config)
                .build(),
        )
        .build();
    let log_exporter = opentelemetry_otlp::LogExporter::builder()
        .with_http()
        .with_http_client(client()?)
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(format!("http://{http}/v1/logs"))
        .build()
        .map_err(|e| SoakError::Exporter(e.to_string()))?;
    let log_config = opentelemetry_sdk::logs::BatchConfigBuilder::default()
        .with_scheduled_delay(Duration::from_millis(200))
        .with_max_queue_size(16_384)
        .build();
    let logger_provider = SdkLoggerProvider::builder()
        .with_resource(resource)
        .with_log_processor(
            BatchLogProcessor::builder(log_exporter)
                .with_batch_config(log_config)
                .build(),
        )
        .build();
    Ok((tracer_provider, logger_provider))
}

/// What the exporters sent: spans ended and log records emitted.
#[derive(Debug, Default)]
struct Sent {
    spans: AtomicU64,
    logs: AtomicU64,
}

/// One exporter's traces (and a log record in each), paced at `per_second` until `until`.
fn send(
    (tracer_provider, logger_provider): &(SdkTracerProvider, SdkLoggerProvider),
    per_second: u64,
    until: Instant,
    sent: &Sent,
) {
    let tracer = tracer_provider.tracer("lens-soak");
    let logger = logger_provider.logger("lens-soak");
    let period = Duration::from_secs(1) / u32::try_from(per_second.max(1)).unwrap_or(u32::MAX);
    let start = Instant::now();
    let mut n: u32 = 0;
    loop {
        let next = start + period * n;
        let now = Instant::now();
        if next >= until || now >= until {
            return;
        }
        // Pacing the sender (not timing a check).
        std::thread::sleep(next.saturating_duration_since(now));
        n += 1;
        let root = tracer
            .span_builder("GET /work")
            .with_kind(SpanKind::Server)
            .with_attributes([KeyValue::new("http.request.method", "GET")])
            .start(&tracer);
        let cx = Context::current_with_span(root);
        let work = tracer.start_with_context("work", &cx);
        let cx_work = cx.with_span(work);
        {
            // The SDK's logger gives the record the ids of the span current in the Context.
            let _work = cx_work.clone().attach();
            let mut record = logger.create_log_record();
            record.set_severity_number(Severity::Info);
            record.set_severity_text("INFO");
            record.set_body(format!("work {n}").into());
            logger.emit(record);
        }
        sent.logs.fetch_add(1, Ordering::Relaxed);
        let mut call = tracer
            .span_builder("SELECT")
            .with_kind(SpanKind::Client)
            .start_with_context(&tracer, &cx_work);
        call.end();
        cx_work.span().end();
        cx.span().end();
        sent.spans.fetch_add(SPANS_PER_TRACE, Ordering::Relaxed);
    }
}

/// The 0-to-1 quantile `q` of sorted `values`.
fn quantile(values: &[Duration], q: f64) -> Duration {
    if values.is_empty() {
        return Duration::ZERO;
    }
    let at = ((values.len() - 1) as f64 * q).round() as usize;
    values[at.min(values.len() - 1)]
}

/// Runs the load: see the module docs. Blocking (threads); not on an async runtime.
pub fn run_watch_load(options: &WatchLoadOptions) -> Result<WatchLoadReport, SoakError> {
    if options.exporters == 0 || options.traces_per_second == 0 || options.max_traces == 0 {
        return Err(SoakError::Options(
            "exporters, rate and max traces must be positive".into(),
        ));
    }
    let watch = Watch::start(options)?;
    let mut report = WatchLoadReport {
        rss_idle: watch.rss(),
        ..WatchLoadReport::default()
    };
    report.rss_bound = report.rss_idle
        + BYTES_PER_HELD_SPAN * options.max_traces * SPANS_PER_TRACE
        + BYTES_PER_HELD_LOG * options.max_logs
        + RSS_SLACK;
    let providers = (0..options.exporters)
        .map(|i| provider(&watch.http, format!("svc-{i:02}")))
        .collect::<Result<Vec<_>, _>>()?;
    let sent = Arc::new(Sent::default());
    let started = Instant::now();
    let until = started + options.duration;
    let mut latencies = Vec::new();
    std::thread::scope(|scope| -> Result<(), SoakError> {
        let senders: Vec<_> = providers
            .iter()
            .map(|p| {
                let sent = Arc::clone(&sent);
                scope.spawn(move || send(p, options.traces_per_second, until, &sent))
            })
            .collect();
        // The page's poll and the memory, while the load runs.
        while Instant::now() < until {
            report.rss_max = report.rss_max.max(watch.rss());
            let (_, took) = watch.get("/api/traces")?;
            latencies.push(took);
            // The page polls once a second; ten times that here.
            std::thread::sleep(Duration::from_millis(100));
        }
        for s in senders {
            let _ = s.join();
        }
        Ok(())
    })?;
    report.elapsed = started.elapsed();
    for (tracer_provider, logger_provider) in &providers {
        let _ = tracer_provider.shutdown();
        let _ = logger_provider.shutdown();
    }
    report.spans_sent = sent.spans.load(Ordering::Relaxed);
    report.logs_sent = sent.logs.load(Ordering::Relaxed);
    // Every span in, and every trace complete (or evicted), or a deadline.
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        report.rss_max = report.rss_max.max(watch.rss());
        let status = watch.status()?;
        let n = |key: &str| status[key].as_u64().unwrap_or(0);
        if (n("spans_received") >= report.spans_sent
            && n("spans_open") == 0
            && n("logs_received") >= report.logs_sent)
            || Instant::now() > deadline
        {
            break status;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let n = |key: &str| status[key].as_u64().unwrap_or(0);
    report.spans_received = n("spans_received");
    report.spans_shown = n("spans_shown");
    report.spans_open = n("spans_open");
    report.spans_dropped = n("dropped_evicted") + n("dropped_late") + n("dropped_spans");
    report.evicted_traces = n("evicted_traces");
    report.evicted_open_traces = n("evicted_open_traces");
    report.logs_received = n("logs_received");
    report.logs_held = n("logs_held");
    report.logs_dropped = n("logs_dropped");
    latencies.sort();
    report.polls = latencies.len();
    report.poll_p50 = quantile(&latencies, 0.5);
    report.poll_p95 = quantile(&latencies, 0.95);
    report.poll_max = latencies.last().copied().unwrap_or_default();
    Ok(report)
}
