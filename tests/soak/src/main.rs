//! `lens-soak`: the load and fault checks (`cargo xtask soak` runs them in release mode).
//!
//! ```text
//! lens-soak soak --seconds N --concurrency C
//! lens-soak otlp-faults --seconds N --concurrency C
//! lens-soak watch-load --seconds N --concurrency C --lens PATH
//! ```
//! Prints the figures; exits 1 when a check fails, 2 on a usage error.
#![forbid(unsafe_code)]

use std::process::ExitCode;
use std::time::Duration;

use std::path::PathBuf;

use lens_soak::{
    Mode, OtlpOptions, SoakOptions, Statistic, WatchLoadOptions, run_otlp_faults, run_soak,
    run_watch_load,
};

const USAGE: &str = "\
usage: lens-soak soak --seconds N --concurrency C
       lens-soak otlp-faults --seconds N --concurrency C
       lens-soak watch-load --seconds N --concurrency C --lens PATH

soak         the axum -> reqwest -> axum chain on loopback under C concurrent clients for N
             seconds; checks 0 context mix-ups, 0 lost spans, flat memory; prints requests/s
otlp-faults  the same chain with the OTLP collector down and black-holing, against a healthy
             collector (and, for the record, no exporter), alternated for N seconds; checks 0
             failed requests and at most 5% slower than with the healthy collector
watch-load   C OpenTelemetry SDK exporters (one service each) send traces for N seconds into
             `PATH watch --max-traces 200`; checks every span received and accounted for
             (received = shown + open + dropped, with evictions), its resident memory under the
             bound, and GET /api/traces under 100 ms at p95 while loaded";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((command, rest)) = args.split_first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let (seconds, concurrency, lens) = match options(rest) {
        Ok(o) => o,
        Err(message) => {
            eprintln!("error: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the Tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    if command == "watch-load" {
        // Threads and blocking clients: no runtime.
        return finish(watch_load(seconds, concurrency, lens));
    }
    let failures = match command.as_str() {
        "soak" => runtime.block_on(soak(seconds, concurrency)),
        "otlp-faults" => runtime.block_on(otlp_faults(seconds, concurrency)),
        "-h" | "--help" | "help" => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        other => {
            eprintln!("error: unknown command `{other}`\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    // The runtime may hold a connection of the black-hole exporter: do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(200));
    finish(failures)
}

fn finish(failures: Result<Vec<String>, lens_soak::SoakError>) -> ExitCode {
    match failures {
        Ok(failures) if failures.is_empty() => ExitCode::SUCCESS,
        Ok(failures) => {
            for f in failures {
                eprintln!("FAILED: {f}");
            }
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn options(args: &[String]) -> Result<(u64, usize, Option<PathBuf>), String> {
    let (mut seconds, mut concurrency, mut lens) = (20u64, 8usize, None);
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let mut value = |name: &str| {
            iter.next()
                .ok_or_else(|| format!("`{name}` needs a value"))
                .cloned()
        };
        match arg.as_str() {
            "--seconds" => {
                seconds = value("--seconds")?
                    .parse()
                    .ok()
                    .filter(|&s| s > 0)
                    .ok_or("`--seconds` takes a positive whole number")?;
            }
            "--concurrency" => {
                concurrency = value("--concurrency")?
                    .parse()
                    .ok()
                    .filter(|&c| c > 0)
                    .ok_or("`--concurrency` takes a positive whole number")?;
            }
            "--lens" => lens = Some(PathBuf::from(value("--lens")?)),
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    Ok((seconds, concurrency, lens))
}

fn mib(bytes: Option<u64>) -> String {
    bytes.map_or_else(
        || "?".into(),
        |b| format!("{:.1} MiB", b as f64 / (1 << 20) as f64),
    )
}

async fn soak(seconds: u64, concurrency: usize) -> Result<Vec<String>, lens_soak::SoakError> {
    let options = SoakOptions::new(Duration::from_secs(seconds), concurrency);
    println!(
        "soak: {seconds} s, {concurrency} concurrent clients, warm-up {:.1} s",
        options.warmup.as_secs_f64()
    );
    let r = run_soak(&options).await?;
    println!(
        "  requests        {} ({:.0} requests/s)",
        r.requests,
        r.requests_per_second()
    );
    println!("  failed          {}", r.failed);
    println!("  mix-ups         {}", r.mixups);
    println!(
        "  spans           {} exported / {} expected; {} requests incomplete, {} foreign, {} misparented, {} duplicate",
        r.spans.exported,
        r.spans_expected,
        r.spans.incomplete_requests,
        r.spans.foreign,
        r.spans.misparented,
        r.spans.duplicate
    );
    println!(
        "  memory (RSS)    {} after warm-up, {} at the end ({}), max {}",
        mib(r.rss_after_warmup),
        mib(r.rss_end),
        r.rss_growth_percent()
            .map_or_else(|| "?".into(), |g| format!("{g:+.1}%")),
        mib(r.rss_max)
    );
    for e in &r.examples {
        println!("  example: {e}");
    }
    let failures = r.failures();
    if failures.is_empty() {
        println!("soak: passed");
    }
    Ok(failures)
}

fn watch_load(
    seconds: u64,
    exporters: usize,
    lens: Option<PathBuf>,
) -> Result<Vec<String>, lens_soak::SoakError> {
    let lens = lens.ok_or_else(|| {
        lens_soak::SoakError::Options("watch-load needs --lens PATH (the lens binary)".into())
    })?;
    let options = WatchLoadOptions::new(lens, Duration::from_secs(seconds), exporters);
    println!(
        "watch-load: {seconds} s, {exporters} exporters × {} traces/s × ({} spans + 1 log record), \
--max-traces {} --max-logs {}",
        options.traces_per_second,
        lens_soak::SPANS_PER_TRACE,
        options.max_traces,
        options.max_logs
    );
    let r = run_watch_load(&options)?;
    println!(
        "  spans           {} sent ({:.0}/s), {} received: {} shown + {} open + {} dropped",
        r.spans_sent,
        r.spans_per_second(),
        r.spans_received,
        r.spans_shown,
        r.spans_open,
        r.spans_dropped
    );
    println!(
        "  log records     {} sent, {} received: {} held + {} dropped",
        r.logs_sent, r.logs_received, r.logs_held, r.logs_dropped
    );
    println!(
        "  evicted         {} traces ({} of them open)",
        r.evicted_traces, r.evicted_open_traces
    );
    println!(
        "  memory (RSS)    {} idle, max {} under load, bound {}",
        mib(Some(r.rss_idle)),
        mib(Some(r.rss_max)),
        mib(Some(r.rss_bound))
    );
    println!(
        "  GET /api/traces {} polls: p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms",
        r.polls,
        r.poll_p50.as_secs_f64() * 1e3,
        r.poll_p95.as_secs_f64() * 1e3,
        r.poll_max.as_secs_f64() * 1e3
    );
    let failures = r.failures();
    if failures.is_empty() {
        println!("watch-load: passed");
    }
    Ok(failures)
}

async fn otlp_faults(
    seconds: u64,
    concurrency: usize,
) -> Result<Vec<String>, lens_soak::SoakError> {
    let options = OtlpOptions::new(Duration::from_secs(seconds), concurrency);
    println!(
        "otlp-faults: {seconds} s, {concurrency} concurrent clients, rounds of {} ms",
        options.round.as_millis()
    );
    let r = run_otlp_faults(&options).await?;
    // Ratios: rounds paired within each cycle, the median over the cycles (see `OtlpReport::ratio`).
    println!(
        "  {:<30} {:>9} {:>7} {:>9} {:>9} {:>9} {:>10} {:>10} {:>10} {:>8}",
        "arm",
        "requests",
        "failed",
        "mean µs",
        "p50 µs",
        "p99 µs",
        "mean ×ref",
        "p50 ×ref",
        "mean ×none",
        "exports"
    );
    for (mode, s) in &r.arms {
        let exports = match mode {
            Mode::NoExporter => "-".to_owned(),
            _ if s.exports_ok > 0 => format!("{}✓", s.exports_ok),
            _ => format!("{}✗", s.exports_failed),
        };
        let ratio = |against, statistic| {
            r.ratio(*mode, against, statistic)
                .map_or_else(|| "-".to_owned(), |x| format!("{x:.3}"))
        };
        println!(
            "  {:<30} {:>9} {:>7} {:>9.0} {:>9.0} {:>9.0} {:>10} {:>10} {:>10} {:>8}",
            mode.to_string(),
            s.requests,
            s.failed,
            s.mean_us,
            s.p50_us,
            s.p99_us,
            ratio(Mode::REFERENCE, Statistic::Mean),
            ratio(Mode::REFERENCE, Statistic::Median),
            ratio(Mode::NoExporter, Statistic::Mean),
            exports
        );
    }
    // LENS_SOAK_ROUNDS=1: every round's mean and median, by cycle, to see the noise.
    if std::env::var_os("LENS_SOAK_ROUNDS").is_some() {
        println!("  rounds, by cycle (mean/median µs):");
        for (mode, s) in &r.arms {
            let v: Vec<String> = s
                .rounds
                .iter()
                .map(|x| x.map_or("-".into(), |x| format!("{:.0}/{:.0}", x.mean_us, x.p50_us)))
                .collect();
            println!("    {mode}: {}", v.join(" "));
        }
    }
    println!(
        "  black-hole connections accepted: {}",
        r.black_hole_connections
    );
    let failures = r.failures();
    if failures.is_empty() {
        println!("otlp-faults: passed");
    }
    Ok(failures)
}
