//! `lens demo`: one request through HTTP, gRPC, a Ray-style remote call and four pipeline
//! ranks, all in this process, printed as one trace.
//!
//! * [`topology`]: the services (axum gateway and planner, tonic trainer, rollout worker,
//!   pipeline ranks as threads), each with its own tracer provider and `service.name`.
//! * [`collect`]: the embedded span store every provider exports into.
//! * [`waterfall`]: the trace as a tree with links, services, kinds, durations and time bars
//!   (text, colour only on a terminal; JSON), and the summary line; [`html`]: the same as a
//!   self-contained HTML page.
//! * [`otlp`]: `--otlp URL`, the spans sent to a collector with opentelemetry-otlp.
#![forbid(unsafe_code)]

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use opentelemetry::trace::TraceId;

use crate::USAGE_ERROR;

mod collect;
mod html;
mod otlp;
mod topology;
mod waterfall;

use collect::{CollectedSpan, Collector};
use topology::{Demo, DemoError};

const HELP: &str = "\
usage: lens demo [--json] [--html FILE] [--requests N] [--concurrency C] [--otlp URL]

Starts, on 127.0.0.1 in this process, an axum gateway, an axum planner (called through reqwest),
a tonic trainer (called over gRPC) that dispatches a Ray-style remote call and runs a training
step over 4 pipeline ranks (threads: the step's context broadcast to every rank, activations
handed stage to stage with NCCL context frames, each stage's span linked to the previous one).
Sends a request through them and prints every span of its trace as a waterfall.

options:
  --json              print the spans as JSON (an array) instead of the waterfall
  --html FILE         also write the waterfall as a self-contained HTML page to FILE
  --requests N        send N requests (default 1); with N > 1, print one summary line per trace
  --concurrency C     at most C requests in flight (default 1)
  --otlp URL          also send the spans to an OTLP/HTTP collector (`http://host:4318`, or
                      the full `.../v1/traces` URL); default: OTEL_EXPORTER_OTLP_ENDPOINT or
                      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT when set. An unreachable collector
                      gives a warning, not an error.
  --otlp-timeout S    seconds to wait for the collector (default 3)
  --color WHEN        auto (default: colour when stdout is a terminal and NO_COLOR is unset),
                      always or never
  -h, --help          print this text

exit status: 0 every trace complete, 1 a request failed or a trace is incomplete, 2 usage error";

/// How long to wait for the last spans of the requests to end after the last reply.
const SPAN_WAIT: Duration = Duration::from_secs(10);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Colour {
    Auto,
    Always,
    Never,
}

#[derive(Debug)]
struct Options {
    json: bool,
    html: Option<PathBuf>,
    requests: usize,
    concurrency: usize,
    otlp: Option<String>,
    otlp_timeout: Duration,
    colour: Colour,
}

/// Runs `lens demo` with `args` (everything after `demo`).
pub(crate) fn main(args: &[String]) -> ExitCode {
    let options = match parse_args(args) {
        Ok(Some(options)) => options,
        Ok(None) => {
            println!("{HELP}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("error: {message}\n\n{HELP}");
            return ExitCode::from(USAGE_ERROR);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
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

fn parse_args(args: &[String]) -> Result<Option<Options>, String> {
    let mut options = Options {
        json: false,
        html: None,
        requests: 1,
        concurrency: 1,
        otlp: None,
        otlp_timeout: Duration::from_secs(3),
        colour: Colour::Auto,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) if name.starts_with("--") => (name, Some(value.to_owned())),
            _ => (arg.as_str(), None),
        };
        let mut value = |what: &str| -> Result<String, String> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => args
                    .next()
                    .cloned()
                    .ok_or_else(|| format!("`{name}` needs {what}")),
            }
        };
        match name {
            "-h" | "--help" => return Ok(None),
            "--json" => options.json = true,
            "--html" => options.html = Some(PathBuf::from(value("a FILE")?)),
            "--requests" => options.requests = positive(name, &value("a number")?)?,
            "--concurrency" => options.concurrency = positive(name, &value("a number")?)?,
            "--otlp" => options.otlp = Some(value("a URL")?),
            "--otlp-timeout" => {
                let v = value("a number of seconds")?;
                let secs: f64 = v
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0 && *s <= 600.0)
                    .ok_or_else(|| {
                        format!("`--otlp-timeout` needs seconds in (0, 600], not `{v}`")
                    })?;
                options.otlp_timeout = Duration::from_secs_f64(secs);
            }
            "--color" | "--colour" => {
                options.colour = match value("auto, always or never")?.as_str() {
                    "auto" => Colour::Auto,
                    "always" => Colour::Always,
                    "never" => Colour::Never,
                    other => {
                        return Err(format!("`--color` is auto, always or never, not `{other}`"));
                    }
                }
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(Some(options))
}

fn positive(name: &str, value: &str) -> Result<usize, String> {
    value
        .parse::<usize>()
        .ok()
        .filter(|n| (1..=100_000).contains(n))
        .ok_or_else(|| format!("`{name}` needs a number from 1 to 100000, not `{value}`"))
}

/// Runs the demo and prints its output; `true` when every request succeeded and every trace is
/// complete.
async fn run(options: &Options) -> bool {
    let collector = Collector::default();
    let demo = match Demo::start(&collector).await {
        Ok(demo) => Arc::new(demo),
        Err(e) => {
            eprintln!("error: {e}");
            return false;
        }
    };
    let (trace_ids, failures) = send_all(&demo, options.requests, options.concurrency).await;
    for (n, e) in &failures {
        eprintln!("error: request {n}: {e}");
    }

    // Servers end their spans once the response has gone out: wait for the last ones.
    let (spans, all_complete) =
        collector.wait_until(SPAN_WAIT, |spans| complete(spans, &trace_ids));
    demo.flush();
    let mut ok = failures.is_empty() && all_complete;

    let traces = waterfall::traces(&spans);
    let index = waterfall::index(&spans);
    let mut out = String::new();
    if options.json {
        match serde_json::to_string_pretty(&waterfall::render_json(&traces)) {
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
        let colour = match options.colour {
            Colour::Always => true,
            Colour::Never => false,
            Colour::Auto => {
                std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
            }
        };
        for (i, trace) in traces.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            waterfall::render_text(trace, &index, colour, &mut out);
        }
    } else {
        let mut complete_count = 0;
        for trace in &traces {
            let summary = trace.summary();
            complete_count += usize::from(summary.is_complete());
            out.push_str(&waterfall::summary_line(&summary));
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
    {
        let mut stdout = std::io::stdout().lock();
        if stdout
            .write_all(out.as_bytes())
            .and_then(|()| stdout.flush())
            .is_err()
        {
            ok = false;
        }
    }

    if let Some(path) = &options.html {
        match std::fs::write(path, html::render_html(&traces, &index)) {
            Ok(()) => eprintln!("wrote {}", path.display()),
            Err(e) => {
                eprintln!("error: cannot write {}: {e}", path.display());
                ok = false;
            }
        }
    }

    if let Some(target) = otlp::Target::resolve(options.otlp.as_deref()) {
        match otlp::export(&target, &spans, options.otlp_timeout).await {
            Ok(n) => eprintln!("exported {n} spans to {}", target.describe()),
            Err(e) => eprintln!(
                "warning: could not export spans to the OTLP collector at {}: {e}",
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
) -> (Vec<TraceId>, Vec<(usize, DemoError)>) {
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::with_capacity(concurrency.min(requests));
    for _ in 0..concurrency.min(requests) {
        let demo = Arc::clone(demo);
        let next = Arc::clone(&next);
        workers.push(tokio::spawn(async move {
            let mut done = Vec::new();
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= requests {
                    return done;
                }
                done.push((n, demo.request(n).await));
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

/// Every trace in `ids` is present and complete (one root, every parent present).
fn complete(spans: &[CollectedSpan], ids: &[TraceId]) -> bool {
    let traces = waterfall::traces(spans);
    ids.iter().all(|id| {
        traces
            .iter()
            .find(|t| t.trace_id == *id)
            .is_some_and(|t| t.summary().is_complete())
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn options_parse() {
        let o = parse_args(&args(&[
            "--json",
            "--html",
            "out.html",
            "--requests=20",
            "--concurrency",
            "4",
            "--otlp",
            "http://c:4318",
            "--color",
            "never",
        ]))
        .unwrap()
        .unwrap();
        assert!(o.json);
        assert_eq!(o.html, Some(PathBuf::from("out.html")));
        assert_eq!((o.requests, o.concurrency), (20, 4));
        assert_eq!(o.otlp.as_deref(), Some("http://c:4318"));
        assert_eq!(o.colour, Colour::Never);
        assert!(parse_args(&args(&["--help"])).unwrap().is_none());
    }

    #[test]
    fn bad_options_are_usage_errors() {
        for bad in [
            &["--requests", "0"][..],
            &["--requests"],
            &["--concurrency", "x"],
            &["--otlp-timeout", "-1"],
            &["--color", "pink"],
            &["--frobnicate"],
        ] {
            assert!(parse_args(&args(bad)).is_err(), "{bad:?}");
        }
    }
}
