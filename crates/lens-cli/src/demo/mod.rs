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

use collect::{CollectedSpan, Collector};
use lens_watch::assemble::Config;
use lens_watch::decode::Batch;
use lens_watch::diagnose::{Finding, Severity};
use lens_watch::render::{self, Output, TraceView};
use lens_watch::session::{Completed, Session, SessionConfig};

use crate::flags::{Colour, ColourFlag, JsonFlag};
use crate::hops::HOP_NAMES;
use crate::runtime::runtime;
use crate::usage::usage_error;
use sdk::FromSdk;

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
use error::DemoError;
use hop::Hop;
use topology::Demo;

/// `lens demo`: one traced request through a small AI system, all in this process.
#[derive(Debug, clap::Args)]
#[command(
    long_about = "Starts, on 127.0.0.1 in this process, an axum gateway, an axum planner (called \
through reqwest), a tonic trainer (called over gRPC) that dispatches a Ray-style remote call and \
runs a training step over 4 pipeline ranks (threads: the step's context broadcast to every rank, \
activations handed stage to stage with NCCL context frames, each stage's span linked to the \
previous one). With --nats, the trainer also publishes a rollout job per step to a nats-server \
that the rollout worker consumes (lens-nats on both sides). Sends a request through them and prints \
every span of its trace as a waterfall, then what the propagation doctor finds in it (nothing, \
unless --break sends a hop without context).",
    mut_arg("json", |a| a.help("Print the spans as JSON (an array) instead of the waterfall")),
    after_help = "Environment: OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT \
names a collector when --otlp is not given; OTEL_EXPORTER_OTLP_PROTOCOL (grpc or http/protobuf, \
the default), OTEL_EXPORTER_OTLP_HEADERS and OTEL_EXPORTER_OTLP_TIMEOUT (milliseconds) work as \
in any OpenTelemetry SDK (and their OTEL_EXPORTER_OTLP_TRACES_* forms).

Example: lens demo --break 'gateway->planner' (quoted: `>` is a redirection in a shell) shows the \
lost-context finding of docs/doctor.md.

Exit status: 0 every trace complete, 1 a request failed, a trace is incomplete or the doctor \
found an error without --break, 2 usage error."
)]
pub(crate) struct Args {
    #[command(flatten)]
    json: JsonFlag,

    /// Also write the waterfall as a self-contained HTML page to FILE
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,

    /// Send N requests; with N > 1, print one summary line per trace (and show progress on a
    /// terminal)
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        allow_negative_numbers = true,
        value_parser = clap::value_parser!(u32).range(1..=MAX_COUNT),
    )]
    requests: u32,

    /// At most C requests in flight
    #[arg(
        long,
        value_name = "C",
        default_value_t = 1,
        allow_negative_numbers = true,
        value_parser = clap::value_parser!(u32).range(1..=MAX_COUNT),
    )]
    concurrency: u32,

    /// Also send the spans to the OTLP collector at URL (`http://host:4318`, or the full
    /// `.../v1/traces` URL; `http://host:4317` with OTEL_EXPORTER_OTLP_PROTOCOL=grpc). An
    /// unreachable collector gives a warning, not an error
    #[arg(long, value_name = "URL", value_parser = collector_url)]
    otlp: Option<String>,

    /// Seconds to wait for the collector (default: OTEL_EXPORTER_OTLP_TIMEOUT, else 10)
    #[arg(long, value_name = "S", value_parser = crate::flags::seconds_up_to_ten_minutes)]
    otlp_timeout: Option<Duration>,

    /// Send HOP without trace context (its client records its span but injects nothing) and
    /// print the doctor's finding: lens-demo->gateway, gateway->planner, planner->trainer, or
    /// with --nats the queue hop trainer->rollout.jobs
    #[arg(long = "break", value_name = "HOP", value_parser = hop)]
    break_hop: Option<Hop>,

    /// Add a queue hop through the nats-server at URL (`nats://host:4222`, which you run, e.g.
    /// `nats-server`): the trainer publishes a rollout job per step (subject
    /// `rollout.jobs.<run>`) that the rollout worker consumes, both through lens-nats
    #[arg(long, value_name = "URL", value_parser = nats_url)]
    nats: Option<String>,

    /// Add a streaming hop: the trainer asks the rollout worker to generate and reads the tokens
    /// as server-sent events, the worker streaming them from an inference engine; the waterfall
    /// marks each span's first chunk and adds the "time to first chunk by hop" table
    #[arg(long)]
    stream: bool,

    #[command(flatten)]
    color: ColourFlag,
}

/// `--break`: a hop of the demo, `from->to`.
fn hop(value: &str) -> Result<Hop, String> {
    Hop::parse(value).ok_or_else(|| {
        let valid: Vec<String> = Hop::ALL.iter().map(|h| h.name()).collect();
        let mut message = format!(
            "no hop '{value}' in the demo; the hops that can be broken: {}",
            valid.join(", ")
        );
        if value.ends_with('-') {
            // `--break gateway->planner` unquoted: the shell took `>planner` as a redirection.
            message.push_str(" (quote the hop in a shell: --break 'gateway->planner')");
        }
        message
    })
}

/// `--nats`: `nats://host[:port]`, `host[:port]` (no other scheme: the demo's client has no
/// TLS or websocket server in mind).
fn nats_url(value: &str) -> Result<String, String> {
    let rest = value.strip_prefix("nats://").unwrap_or(value);
    let uri: Option<http::uri::Authority> = rest.parse().ok();
    // `Authority` takes any text after the colon: the port must be a number.
    let port_ok = match rest.rsplit_once(':') {
        Some((_, port)) if !rest.ends_with(']') => port.parse::<u16>().is_ok(),
        _ => true,
    };
    match uri {
        Some(authority) if !authority.host().is_empty() && !rest.contains('/') && port_ok => {
            Ok(value.to_owned())
        }
        _ => Err("expected a nats-server address, e.g. nats://127.0.0.1:4222".to_owned()),
    }
}

/// The largest `--requests` and `--concurrency`.
const MAX_COUNT: i64 = 100_000;

/// How long to wait for the last spans of the requests to end after the last reply.
const SPAN_WAIT: Duration = Duration::from_secs(10);

/// `--otlp`: an `http` or `https` URL with a host.
fn collector_url(value: &str) -> Result<String, String> {
    let uri: http::Uri = value
        .parse()
        .map_err(|e| format!("not a URL ({e}); expected e.g. http://localhost:4318"))?;
    match (uri.scheme_str(), uri.host()) {
        (Some("http" | "https"), Some(host)) if !host.is_empty() => Ok(value.to_owned()),
        _ => Err(
            "expected an http:// or https:// URL with a host, e.g. http://localhost:4318"
                .to_owned(),
        ),
    }
}

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
    fn collector_urls_need_a_scheme_and_a_host() {
        for good in [
            "http://c:4318",
            "https://collector.example/v1/traces",
            "http://[::1]:4317",
        ] {
            assert_eq!(collector_url(good).as_deref(), Ok(good), "{good}");
        }
        for bad in ["notaurl", "c:4318", "ftp://c/", "/v1/traces", "http://", ""] {
            assert!(collector_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn hops_are_named_from_to_and_an_unknown_one_lists_the_valid_ones() {
        for h in Hop::ALL {
            assert_eq!(hop(&h.name()), Ok(h));
        }
        assert_eq!(hop("gateway -> planner"), Ok(Hop::GatewayToPlanner));
        assert_eq!(hop("trainer->rollout.jobs"), Ok(Hop::TrainerToRolloutJobs));
        for bad in ["planner->gateway", "gateway", "", "trainer->rollout-worker"] {
            let e = hop(bad).unwrap_err();
            assert!(
                e.contains(
                    "lens-demo->gateway, gateway->planner, planner->trainer, trainer->rollout.jobs"
                ),
                "{e}"
            );
            assert!(!e.contains("quote"), "{e}");
        }
        assert!(hop("gateway-").unwrap_err().contains("quote"));
    }

    #[test]
    fn nats_urls_are_a_host_and_port_with_or_without_the_scheme() {
        for good in [
            "nats://127.0.0.1:4222",
            "localhost:4222",
            "nats://broker",
            "[::1]:4222",
        ] {
            assert_eq!(nats_url(good).as_deref(), Ok(good), "{good}");
        }
        for bad in [
            "",
            "nats://",
            "tls://h:4222",
            "http://h:4222",
            "nats://h:4222/x",
            "h:x",
        ] {
            assert!(nats_url(bad).is_err(), "{bad}");
        }
    }

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
