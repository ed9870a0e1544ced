//! `lens demo`: one request through HTTP, gRPC, a Ray-style remote call and four pipeline
//! ranks, all in this process, printed as one trace.
//!
//! * [`topology`]: the services (axum gateway and planner, tonic trainer, rollout worker,
//!   pipeline ranks as threads), each with its own tracer provider and `service.name`.
//! * [`collect`]: the embedded span store every provider exports into.
//! * The waterfall (text, colour only on a terminal; JSON; a self-contained HTML page) is
//!   lens-watch's, the one `lens watch` draws: the collector is one more source of spans
//!   ([`sdk::FromSdk`]) for a lens-watch session, as `lens watch` and `lens check` fill
//!   theirs, and the traces are printed from it as they print theirs.
//! * [`durations`]: the request durations per hop, read from the histograms the adapters
//!   recorded (each service has a meter provider beside its tracer provider).
//! * [`otlp`]: `--otlp URL`, the spans and metrics sent to a collector with opentelemetry-otlp.
//! * [`queue`]: `--nats URL`, the trainer's rollout jobs to the rollout worker over NATS.
#![forbid(unsafe_code)]

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use opentelemetry::trace::TraceId;

mod args;
pub(crate) mod collect;
mod durations;
mod error;
mod hop;
mod otlp;
mod queue;
mod sdk;
mod step;
mod stream;
mod topology;
mod trainer;
mod training;
mod web;

pub(crate) use args::Args;
use collect::{CollectedSpan, Collector};
use error::DemoError;
use hop::Hop;
use lens_watch::assemble::Config;
use lens_watch::decode::Batch;
use lens_watch::diagnose::{Finding, Severity};
use lens_watch::render::{self, Output, TraceView};
use lens_watch::session::{Completed, Session, SessionConfig};

use crate::flags::Colour;
use crate::hops::HOP_NAMES;
use crate::runtime::runtime;
use crate::usage::usage_error;
use sdk::FromSdk;
use topology::Demo;

/// The foot of the `--html` page.
const HTML_FOOTER: &str = "Written by <code>lens demo --html</code>. Bars: start and duration of each span within its trace; hover a bar for its attributes.";

/// The collected spans in a lens-watch session, as `lens watch` takes the spans it receives
/// (the collector is one more source of spans): every trace completed now (the demo has all
/// its spans) and diagnosed in order of its earliest start, nothing evicted (the collector
/// already holds them all).
fn session(spans: &[CollectedSpan]) -> (Session, Vec<Completed>) {
    let mut config = SessionConfig::default();
    config.assemble = Config {
        max_traces: usize::MAX,
        max_spans_per_trace: usize::MAX,
        max_spans: usize::MAX,
        ..Config::default()
    };
    config.hop_names = HOP_NAMES;
    let mut session = Session::new(config);
    let mut from = FromSdk::default();
    let spans = spans
        .iter()
        .filter_map(|s| from.span(&s.service, &s.data))
        .collect();
    session.ingest(Batch::new(spans), Instant::now());
    let done = session.flush_by_start();
    (session, done)
}

/// The traces `done`, ready to draw.
fn views<'a>(session: &'a Session, done: &[Completed]) -> Vec<TraceView<'a>> {
    done.iter().filter_map(|c| session.view_of(c)).collect()
}

/// How long to wait for the last spans of the requests to end after the last reply.
const SPAN_WAIT: Duration = Duration::from_secs(10);

/// What `lens demo` runs with, checked before anything starts.
struct Options {
    json: bool,
    /// The `--html` file, created (so writable) before the run.
    html: Option<(PathBuf, std::fs::File)>,
    requests: usize,
    concurrency: usize,
    otlp: Option<otlp::Target>,
    /// Where the metrics go: `--otlp`, else `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` or
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`.
    otlp_metrics: Option<otlp::Target>,
    otlp_timeout: Option<Duration>,
    colour: Colour,
    /// `--break`: the hop sent without context.
    broken: Option<Hop>,
    /// `--nats`: the nats-server of the queue hop.
    nats: Option<String>,
    /// `--stream`: the streaming hop.
    stream: bool,
}

/// Runs `lens demo`.
pub(crate) fn main(args: Args) -> ExitCode {
    let html = match args.html {
        None => None,
        Some(path) => match std::fs::File::create(&path) {
            Ok(file) => Some((path, file)),
            Err(e) => {
                return usage_error(
                    "demo",
                    format!("cannot write the --html file {}: {e}", path.display()),
                );
            }
        },
    };
    if let Some(hop) = args.break_hop
        && hop.needs_nats()
        && args.nats.is_none()
    {
        return usage_error(
            "demo",
            format!(
                "the hop {} is the demo's queue hop: it needs --nats URL (a nats-server you run)",
                hop.name()
            ),
        );
    }
    let options = Options {
        json: args.json.json,
        html,
        requests: args.requests as usize,
        concurrency: args.concurrency as usize,
        otlp: otlp::Target::resolve(args.otlp.as_deref(), otlp::Signal::Traces),
        otlp_metrics: otlp::Target::resolve(args.otlp.as_deref(), otlp::Signal::Metrics),
        otlp_timeout: args.otlp_timeout,
        colour: args.color.color,
        broken: args.break_hop,
        nats: args.nats,
        stream: args.stream,
    };
    let Some(runtime) = runtime() else {
        return ExitCode::FAILURE;
    };
    let ok = runtime.block_on(run(&options));
    // The demo's servers run until the runtime goes.
    runtime.shutdown_timeout(Duration::from_millis(100));
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// A progress bar on standard error for `--requests N` (N > 1), drawn only on a terminal.
fn progress_bar(requests: usize) -> ProgressBar {
    if requests < 2 || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(requests as u64), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{bar:30} {pos}/{len} requests, {elapsed} (eta {eta})")
    {
        bar.set_style(style);
    }
    bar
}

/// Runs the demo and prints its output; `true` when every request succeeded and every trace is
/// complete.
async fn run(options: &Options) -> bool {
    let collector = Collector::default();
    let nats = match &options.nats {
        Some(url) => match queue::connect(url).await {
            Ok(client) => Some(client),
            Err(e) => {
                eprintln!("error: {e}");
                return false;
            }
        },
        None => None,
    };
    let demo = match Demo::start(&collector, options.broken, nats.as_ref(), options.stream).await {
        Ok(demo) => Arc::new(demo),
        Err(e) => {
            eprintln!("error: {e}");
            return false;
        }
    };
    let progress = progress_bar(options.requests);
    let (trace_ids, failures) =
        send_all(&demo, options.requests, options.concurrency, &progress).await;
    progress.finish_and_clear();
    for (n, e) in &failures {
        eprintln!("error: request {n}: {e}");
    }

    // Servers end their spans once the response has gone out, and the rollout worker its
    // `process` span once it has handled the job: wait for the last ones.
    let jobs = if nats.is_some() { trace_ids.len() } else { 0 };
    let (spans, all_complete) =
        collector.wait_until(SPAN_WAIT, |spans| complete(spans, &trace_ids, jobs));
    demo.flush();
    let mut ok = failures.is_empty() && all_complete;

    let (session, done) = session(&spans);
    let traces = views(&session, &done);
    let findings: Vec<Finding> = done.iter().flat_map(|c| c.findings.clone()).collect();
    if options.broken.is_none() && findings.iter().any(|f| f.severity() == Severity::Error) {
        // The healthy demo gives no finding: one is a bug of the demo or of the doctor.
        ok = false;
    }
    let mut out = String::new();
    if options.json {
        match serde_json::to_string_pretty(&render::json::spans(&traces)) {
            Ok(json) => {
                out.push_str(&json);
                out.push('\n');
            }
            Err(e) => {
                eprintln!("error: {e}");
                ok = false;
            }
        }
    } else if options.requests == 1 {
        let output = Output::Text {
            colour: options.colour.enabled(),
        };
        for (i, view) in traces.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            output.trace(view, &mut out);
        }
    } else {
        let mut complete_count = 0;
        for trace in &traces {
            let summary = trace.summary();
            complete_count += usize::from(summary.is_complete());
            out.push_str(&render::summary_line(&summary));
            out.push('\n');
        }
        out.push_str(&format!(
            "{} requests, {} failed; {} distinct trace ids, {} complete\n",
            options.requests,
            failures.len(),
            traces.len(),
            complete_count
        ));
    }
    let metrics = demo.metrics();
    if !options.json {
        match &metrics {
            Ok(metrics) => {
                out.push('\n');
                durations::table(&durations::rows(metrics), &mut out);
            }
            Err(e) => eprintln!("warning: cannot read the demo's metrics: {e}"),
        }
    }
    if !findings.is_empty() {
        if options.json {
            // Standard output holds one JSON array: the findings go to standard error.
            let mut text = String::new();
            Output::Text { colour: false }.findings(&findings, &mut text);
            eprint!("{text}");
        } else {
            out.push('\n');
            let output = Output::Text {
                colour: options.colour.enabled(),
            };
            output.findings(&findings, &mut out);
        }
    }
    // A reader that stopped early is no error; the demo's status stays its own.
    match crate::flags::print(&out) {
        Ok(_) => {}
        Err(_) => ok = false,
    }

    if let Some((path, file)) = &options.html {
        let mut file = file;
        let title = match traces.as_slice() {
            [one] => format!("lens demo: trace {}", one.trace_id()),
            _ => format!("lens demo: {} traces", traces.len()),
        };
        let mut page = String::new();
        render::html::page(&traces, &title, HTML_FOOTER, &mut page);
        match file.write_all(page.as_bytes()) {
            Ok(()) => eprintln!("wrote {}", path.display()),
            Err(e) => {
                eprintln!("error: cannot write {}: {e}", path.display());
                ok = false;
            }
        }
    }

    if let Some(target) = &options.otlp {
        match otlp::export(target, &spans, options.otlp_timeout).await {
            Ok(n) => eprintln!("exported {n} spans to {}", target.describe()),
            Err(e) => eprintln!(
                "warning: could not export spans to the OTLP collector at {}: {e}",
                target.describe()
            ),
        }
    }
    if let (Some(target), Ok(metrics)) = (&options.otlp_metrics, &metrics) {
        match otlp::export_metrics(target, metrics, options.otlp_timeout).await {
            Ok(n) => eprintln!(
                "exported the metrics of {n} services to {}",
                target.describe()
            ),
            Err(e) => eprintln!(
                "warning: could not export metrics to the OTLP collector at {}: {e}",
                target.describe()
            ),
        }
    }
    ok
}

/// Sends `requests` requests, at most `concurrency` at a time; returns the trace ids of those
/// that succeeded, and the failures by request number.
async fn send_all(
    demo: &Arc<Demo>,
    requests: usize,
    concurrency: usize,
    progress: &ProgressBar,
) -> (Vec<TraceId>, Vec<(usize, DemoError)>) {
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::with_capacity(concurrency.min(requests));
    for _ in 0..concurrency.min(requests) {
        let demo = Arc::clone(demo);
        let next = Arc::clone(&next);
        let progress = progress.clone();
        workers.push(tokio::spawn(async move {
            let mut done = Vec::new();
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= requests {
                    return done;
                }
                done.push((n, demo.request(n).await));
                progress.inc(1);
            }
        }));
    }
    let mut trace_ids = Vec::with_capacity(requests);
    let mut failures = Vec::new();
    for worker in workers {
        match worker.await {
            Ok(done) => {
                for (n, result) in done {
                    match result {
                        Ok((trace_id, _reply)) => trace_ids.push(trace_id),
                        Err(e) => failures.push((n, e)),
                    }
                }
            }
            Err(e) => failures.push((
                usize::MAX,
                DemoError::Rank {
                    rank: 0,
                    message: format!("request task failed: {e}"),
                },
            )),
        }
    }
    failures.sort_by_key(|(n, _)| *n);
    (trace_ids, failures)
}

/// Every trace in `ids` is present, every trace held is complete (one root, every parent
/// present: with a broken hop, the trace the called service started is not in `ids`), and
/// `jobs` rollout jobs were processed.
fn complete(spans: &[CollectedSpan], ids: &[TraceId], jobs: usize) -> bool {
    let processed = spans
        .iter()
        .filter(|s| s.data.span_kind == opentelemetry::trace::SpanKind::Consumer)
        .count();
    if processed < jobs {
        return false;
    }
    let (session, done) = session(spans);
    let traces = views(&session, &done);
    traces.iter().all(|t| t.summary().is_complete())
        && ids
            .iter()
            .all(|id| traces.iter().any(|t| t.trace_id().0 == id.to_bytes()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn timeouts_are_positive_seconds_up_to_ten_minutes() {
        assert_eq!(
            crate::flags::seconds_up_to_ten_minutes("1.5"),
            Ok(Duration::from_millis(1500))
        );
        for bad in ["0", "-1", "601", "NaN", "inf", "x"] {
            assert!(
                crate::flags::seconds_up_to_ten_minutes(bad).is_err(),
                "{bad}"
            );
        }
    }
}
