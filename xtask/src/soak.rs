//! `cargo xtask soak`: load and fault checks (tests/soak), in release mode.
//!
//! 1. `lens-soak soak`: the axum → reqwest → axum chain on loopback under C concurrent clients,
//!    every request with its own trace id and baggage; fails on a context mix-up, a lost span,
//!    or resident memory growing over 10% after the warm-up. Prints requests/s.
//! 2. `lens-soak otlp-faults`: the same chain with the OTLP collector down (connection refused)
//!    and black-holing (accepts, never answers), against a healthy collector, alternated in
//!    short rounds; fails on a failed request or a slow-down over 5%.

use crate::{Failure, Result, cargo, run};

pub(crate) const HELP: &str = "\
usage: cargo xtask soak [--seconds N] [--concurrency C] [--fault-seconds M]

Builds tests/soak in release mode, then runs:
  1. the soak: the axum -> reqwest -> axum chain on loopback under C concurrent clients for N
     seconds (default 20, C default 8); fails on a context mix-up (a hop that saw another
     request's ids), a lost or duplicated span (exported != requests x 3), or resident memory
     at the end over 10% above the memory after warm-up. Prints requests/s.
  2. the OTLP faults: the same chain with the collector down and black-holing, against a
     healthy collector (and no exporter, reported), alternated in 50 ms rounds for M seconds
     (default: N); fails on a failed request or a mean or median latency over 5% above the
     healthy collector's.";

#[derive(Debug, PartialEq, Eq)]
struct Options {
    seconds: u64,
    concurrency: u64,
    fault_seconds: Option<u64>,
}

fn parse_args(args: &[String]) -> Result<Option<Options>> {
    let mut options = Options {
        seconds: 20,
        concurrency: 8,
        fault_seconds: None,
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
    run("otlp faults", lens_soak("otlp-faults", &fault_seconds))
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
                fault_seconds: None
            })
        );
        assert_eq!(
            parsed(&["--seconds", "5", "--concurrency=3", "--fault-seconds", "9"]),
            Some(Options {
                seconds: 5,
                concurrency: 3,
                fault_seconds: Some(9)
            })
        );
        assert!(parse_args(&args(&["--seconds", "0"])).is_err());
        assert!(parse_args(&args(&["--concurrency"])).is_err());
        assert!(parse_args(&args(&["--nope", "1"])).is_err());
        assert!(matches!(parse_args(&args(&["--help"])), Ok(None)));
    }
}
