//! `cargo xtask soak`: load and fault checks (tests/soak), in release mode.
//!
//! 1. `lens-soak soak`: the axum → reqwest → axum chain on loopback under C concurrent clients,
//!    every request with its own trace id and baggage; fails on a context mix-up, a lost span,
//!    or resident memory growing over 10% after the warm-up. Prints requests/s.
//! 2. `lens-soak otlp-faults`: the same chain with the OTLP collector down (connection refused)
//!    and black-holing (accepts, never answers), against a healthy collector, alternated in
//!    short rounds; fails on a failed request or a slow-down over 5%.
//! 3. `lens-soak watch-load`: 20 OpenTelemetry SDK exporters into one release `lens watch
//!    --max-traces 200`; fails on a span not received or not accounted for, resident memory
//!    over its bound, or `GET /api/traces` over 100 ms at p95 while loaded.

use crate::failure::{Failure, Result};
use crate::run::run;
use crate::workspace::{cargo, metadata_target_dir};

pub(crate) const HELP: &str = "\
usage: cargo xtask soak [--seconds N] [--concurrency C] [--fault-seconds M] [--load-seconds L]

Builds tests/soak in release mode, then runs:
  1. the soak: the axum -> reqwest -> axum chain on loopback under C concurrent clients for N
     seconds (default 20, C default 8); fails on a context mix-up (a hop that saw another
     request's ids), a lost or duplicated span (exported != requests x 3), or resident memory
     at the end over 10% above the memory after warm-up. Prints requests/s.
  2. the OTLP faults: the same chain with the collector down and black-holing, against a
     healthy collector (and no exporter, reported), alternated in 50 ms rounds for M seconds
     (default: N); fails on a failed request or a mean or median latency over 5% above the
     healthy collector's.
  3. the watch load: 20 OpenTelemetry SDK exporters (one service each, 25 traces/s of 3 spans)
     send for L seconds (default: N) into a release `lens watch --max-traces 200`; fails on a
     span not received, a span not accounted for (received = shown + open + dropped, with
     evictions), its resident memory over idle + 4 KiB x the spans it may hold + 32 MiB, or
     GET /api/traces over 100 ms at p95 while loaded.";

#[derive(Debug, PartialEq, Eq)]
struct Options {
    seconds: u64,
    concurrency: u64,
    fault_seconds: Option<u64>,
    load_seconds: Option<u64>,
}

fn parse_args(args: &[String]) -> Result<Option<Options>> {
    let mut options = Options {
        seconds: 20,
        concurrency: 8,
        fault_seconds: None,
        load_seconds: None,
    };
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n, Some(v.to_owned())),
            None => (arg.as_str(), None),
        };
        let slot = match name {
            "-h" | "--help" | "help" => return Ok(None),
            "--seconds" => &mut options.seconds,
            "--concurrency" => &mut options.concurrency,
            "--fault-seconds" => options.fault_seconds.get_or_insert(0),
            "--load-seconds" => options.load_seconds.get_or_insert(0),
            other => {
                return Err(Failure::Usage(format!("unknown option `{other}`"), HELP));
            }
        };
        let value = match inline {
            Some(v) => v,
            None => iter
                .next()
                .cloned()
                .ok_or_else(|| Failure::Usage(format!("`{name}` needs a value"), HELP))?,
        };
        *slot = value.parse().ok().filter(|&n: &u64| n > 0).ok_or_else(|| {
            Failure::Usage(
                format!("`{name}` takes a positive whole number (got `{value}`)"),
                HELP,
            )
        })?;
    }
    Ok(Some(options))
}

/// `cargo xtask soak`.
pub(crate) fn soak(args: &[String]) -> Result {
    let Some(options) = parse_args(args)? else {
        println!("{HELP}");
        return Ok(());
    };
    run(
        "soak build",
        cargo(&[
            "build",
            "--release",
            "-p",
            "lens-soak",
            "--bin",
            "lens-soak",
        ]),
    )?;
    let seconds = options.seconds.to_string();
    let fault_seconds = options.fault_seconds.unwrap_or(options.seconds).to_string();
    let concurrency = options.concurrency.to_string();
    run(
        "lens build",
        cargo(&["build", "--release", "-p", "lens-cli", "--bin", "lens"]),
    )?;
    let lens = metadata_target_dir()
        .ok_or_else(|| Failure::Step("cargo metadata names no target directory".into()))?
        .join("release/lens");
    let load_seconds = options.load_seconds.unwrap_or(options.seconds).to_string();
    let lens_soak = |command: &str, seconds: &str| {
        cargo(&[
            "run",
            "--quiet",
            "--release",
            "-p",
            "lens-soak",
            "--bin",
            "lens-soak",
            "--",
            command,
            "--seconds",
            seconds,
            "--concurrency",
            &concurrency,
        ])
    };
    run("soak", lens_soak("soak", &seconds))?;
    run("otlp faults", lens_soak("otlp-faults", &fault_seconds))?;
    let mut load = lens_soak("watch-load", &load_seconds);
    // Twenty exporters, whatever --concurrency says (the last value of a repeated option wins).
    load.args(["--concurrency", "20", "--lens"]).arg(&lens);
    run("watch load", load)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn arguments() {
        let parsed = |list: &[&str]| parse_args(&args(list)).ok().flatten();
        assert_eq!(
            parsed(&[]),
            Some(Options {
                seconds: 20,
                concurrency: 8,
                fault_seconds: None,
                load_seconds: None
            })
        );
        assert_eq!(
            parsed(&[
                "--seconds",
                "5",
                "--concurrency=3",
                "--fault-seconds",
                "9",
                "--load-seconds=4"
            ]),
            Some(Options {
                seconds: 5,
                concurrency: 3,
                fault_seconds: Some(9),
                load_seconds: Some(4)
            })
        );
        assert!(parse_args(&args(&["--seconds", "0"])).is_err());
        assert!(parse_args(&args(&["--concurrency"])).is_err());
        assert!(parse_args(&args(&["--nope", "1"])).is_err());
        assert!(matches!(parse_args(&args(&["--help"])), Ok(None)));
    }
}
