//! `cargo xtask fuzz`: every cargo-fuzz (libFuzzer) target of `tests/fuzz/`, each for a fixed time.
//!
//! The targets (`tests/fuzz/fuzz_targets/*.rs`) check properties beyond "no panic": an extracted
//! Context injected and extracted again is the same Context, and what lens sends stays within
//! the limits (docs/propagation-rules.md#limits). Each run starts from the committed seed corpus (`tests/fuzz/seeds/<target>/`) and the
//! working corpus (`tests/fuzz/corpus/<target>/`, ignored by git, grown by earlier runs).

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::{Failure, Result, cargo, run, show, workspace_root};

pub(crate) const HELP: &str = "\
usage: cargo xtask fuzz [--seconds N] [TARGET...]

Builds the cargo-fuzz targets of tests/fuzz/ and runs each for N seconds (default 30), one after the
other, from the seed corpus tests/fuzz/seeds/<target>/ and the working corpus tests/fuzz/corpus/<target>/.
Prints the executions per target; fails on the first crash or failed property (the input is
saved under tests/fuzz/artifacts/<target>/; reproduce with `cargo fuzz run <target> <file>`).

TARGET: any of traceparent, tracestate, baggage, extract_headers, carrier_json, nccl_frame,
grpc_metadata, otlp (default: all).

Needs cargo-fuzz (`cargo install --locked cargo-fuzz`) and a C++ compiler for libFuzzer. On a
stable toolchain the nightly flags cargo-fuzz passes are allowed with RUSTC_BOOTSTRAP=1, which
this command sets.";

/// The fuzz targets, in the order they run (the `[[bin]]` names of `tests/fuzz/Cargo.toml`).
pub(crate) const TARGETS: &[&str] = &[
    "traceparent",
    "tracestate",
    "baggage",
    "extract_headers",
    "carrier_json",
    "nccl_frame",
    "grpc_metadata",
    "otlp",
];

/// Default seconds per target.
const DEFAULT_SECONDS: u64 = 30;

/// One target's result.
struct Outcome {
    target: &'static str,
    executions: Option<u64>,
    seconds: f64,
    corpus: usize,
}

/// The parsed command line.
#[derive(Debug, PartialEq, Eq)]
struct Options {
    seconds: u64,
    targets: Vec<&'static str>,
}

fn parse_args(args: &[String]) -> Result<Option<Options>> {
    let mut seconds = DEFAULT_SECONDS;
    let mut targets = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "-h" | "--help" | "help" => return Ok(None),
            "--seconds" => {
                let value = iter
                    .next()
                    .ok_or_else(|| Failure::Usage("`--seconds` needs a value".into(), HELP))?;
                seconds = parse_seconds(value)?;
            }
            other => {
                if let Some(value) = other.strip_prefix("--seconds=") {
                    seconds = parse_seconds(value)?;
                } else if let Some(target) = TARGETS.iter().find(|t| **t == other) {
                    if !targets.contains(target) {
                        targets.push(*target);
                    }
                } else {
                    return Err(Failure::Usage(
                        format!("unknown fuzz target or option `{other}`"),
                        HELP,
                    ));
                }
            }
        }
    }
    if targets.is_empty() {
        targets = TARGETS.to_vec();
    }
    Ok(Some(Options { seconds, targets }))
}

fn parse_seconds(value: &str) -> Result<u64> {
    match value.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(Failure::Usage(
            format!("`--seconds` takes a positive whole number (got `{value}`)"),
            HELP,
        )),
    }
}

/// `cargo xtask fuzz`.
pub(crate) fn fuzz(args: &[String]) -> Result {
    let Some(options) = parse_args(args)? else {
        println!("{HELP}");
        return Ok(());
    };
    let root = workspace_root();
    let probe = fuzz_command(&["fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        return Err(Failure::Step(
            "cargo-fuzz is not installed: run `cargo install --locked cargo-fuzz`".into(),
        ));
    }
    run("fuzz build", fuzz_command(&["fuzz", "build"]))?;

    let logs = root.join(FUZZ_DIR).join("target").join("xtask-logs");
    fs::create_dir_all(&logs)
        .map_err(|e| Failure::Step(format!("cannot create {}: {e}", logs.display())))?;
    let mut outcomes = Vec::new();
    for &target in &options.targets {
        outcomes.push(run_target(&root, &logs, target, options.seconds)?);
    }

    println!(
        "\nfuzz: every target ran {} s without a failure",
        options.seconds
    );
    println!(
        "{:<16} {:>12} {:>10} {:>8}",
        "target", "executions", "exec/s", "corpus"
    );
    for o in &outcomes {
        let execs = o.executions.map_or_else(|| "?".into(), |n| n.to_string());
        let rate = o
            .executions
            .map_or_else(|| "?".into(), |n| format!("{:.0}", n as f64 / o.seconds));
        println!(
            "{:<16} {:>12} {:>10} {:>8}",
            o.target, execs, rate, o.corpus
        );
    }
    Ok(())
}

fn run_target(root: &Path, logs: &Path, target: &'static str, seconds: u64) -> Result<Outcome> {
    let corpus = root.join(FUZZ_DIR).join("corpus").join(target);
    let seeds = root.join(FUZZ_DIR).join("seeds").join(target);
    fs::create_dir_all(&corpus)
        .map_err(|e| Failure::Step(format!("cannot create {}: {e}", corpus.display())))?;
    let log_path = logs.join(format!("{target}.log"));
    let log = fs::File::create(&log_path)
        .map_err(|e| Failure::Step(format!("cannot create {}: {e}", log_path.display())))?;
    let log_err = log
        .try_clone()
        .map_err(|e| Failure::Step(format!("cannot write {}: {e}", log_path.display())))?;
    let max_time = format!("-max_total_time={seconds}");
    let mut command = fuzz_command(&["fuzz", "run", target]);
    command.arg(&corpus);
    if seeds.is_dir() {
        command.arg(&seeds);
    }
    command.args([
        "--",
        &max_time,
        "-print_final_stats=1",
        // One input taking over 10 s is a hang, and a failure.
        "-timeout=10",
        "-rss_limit_mb=2048",
    ]);
    let shown = show(&command);
    println!(
        "\n==> [fuzz {target}] {shown}  (log: {})",
        log_path.display()
    );
    let started = Instant::now();
    let status = command
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(log_err))
        .status()
        .map_err(|e| Failure::Step(format!("could not start `{shown}`: {e}")))?;
    let seconds_run = started.elapsed().as_secs_f64();
    let text = fs::read_to_string(&log_path).unwrap_or_default();
    if !status.success() {
        let tail: Vec<&str> = text.lines().rev().take(40).collect();
        for line in tail.iter().rev() {
            eprintln!("{line}");
        }
        return Err(Failure::Step(format!(
            "fuzz target `{target}` failed ({status}); the input is under tests/fuzz/artifacts/{target}/, \
             the whole log in {}",
            log_path.display()
        )));
    }
    let executions = final_stat(&text, "stat::number_of_executed_units");
    let corpus_len = count_files(&corpus)
        + if seeds.is_dir() {
            count_files(&seeds)
        } else {
            0
        };
    println!(
        "    {target}: {} executions in {seconds_run:.0} s",
        executions.map_or_else(|| "?".into(), |n| n.to_string())
    );
    Ok(Outcome {
        target,
        executions,
        seconds: seconds.max(1) as f64,
        corpus: corpus_len,
    })
}

/// A value of libFuzzer's `-print_final_stats=1` output, e.g. `stat::number_of_executed_units: 12`.
fn final_stat(log: &str, name: &str) -> Option<u64> {
    log.lines()
        .rev()
        .find_map(|line| line.trim().strip_prefix(name)?.trim().strip_prefix(':'))
        .and_then(|v| v.trim().parse().ok())
}

fn count_files(dir: &Path) -> usize {
    fs::read_dir(dir).map_or(0, |entries| entries.flatten().count())
}

/// The cargo-fuzz project, relative to the workspace root (its own workspace).
const FUZZ_DIR: &str = "tests/fuzz";

/// `cargo <args>` from the workspace root, with the nightly flags of cargo-fuzz allowed. `build`
/// and `run` are pointed at [`FUZZ_DIR`] (cargo-fuzz looks for `fuzz/` by default).
fn fuzz_command(args: &[&str]) -> Command {
    let mut command = cargo(args);
    if matches!(args, ["fuzz", "build" | "run", ..]) {
        command.args(["--fuzz-dir", FUZZ_DIR]);
    }
    command.env("RUSTC_BOOTSTRAP", "1");
    command
}

/// The `[[bin]]` names declared in `tests/fuzz/Cargo.toml` (read without a TOML parser).
#[cfg(test)]
fn declared_targets(manifest: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut in_bin = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_bin = line == "[[bin]]";
            continue;
        }
        if in_bin
            && let Some(rest) = line.strip_prefix("name")
            && let Some(value) = rest.trim().strip_prefix('=')
        {
            names.push(value.trim().trim_matches('"').to_owned());
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// Where the committed seeds of `target` live.
    fn seeds_dir(target: &str) -> PathBuf {
        workspace_root().join(FUZZ_DIR).join("seeds").join(target)
    }

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn every_declared_target_runs_and_has_seeds() {
        let manifest = fs::read_to_string(workspace_root().join(FUZZ_DIR).join("Cargo.toml"))
            .unwrap_or_default();
        let declared = declared_targets(&manifest);
        assert_eq!(
            declared, TARGETS,
            "tests/fuzz/Cargo.toml [[bin]] vs TARGETS"
        );
        for target in TARGETS {
            assert!(
                count_files(&seeds_dir(target)) > 0,
                "no seeds for {target} in tests/fuzz/seeds/"
            );
            let source = workspace_root()
                .join(FUZZ_DIR)
                .join("fuzz_targets")
                .join(format!("{target}.rs"));
            assert!(source.is_file(), "{}", source.display());
        }
    }

    #[test]
    fn arguments() {
        let all = parse_args(&args(&[])).ok().flatten();
        assert_eq!(
            all,
            Some(Options {
                seconds: DEFAULT_SECONDS,
                targets: TARGETS.to_vec()
            })
        );
        let some = parse_args(&args(&[
            "--seconds",
            "5",
            "baggage",
            "baggage",
            "nccl_frame",
        ]))
        .ok()
        .flatten();
        assert_eq!(
            some,
            Some(Options {
                seconds: 5,
                targets: vec!["baggage", "nccl_frame"]
            })
        );
        let eq = parse_args(&args(&["--seconds=7"])).ok().flatten();
        assert_eq!(eq.map(|o| o.seconds), Some(7));
        assert!(parse_args(&args(&["--seconds", "0"])).is_err());
        assert!(parse_args(&args(&["--seconds"])).is_err());
        assert!(parse_args(&args(&["nope"])).is_err());
        assert!(matches!(parse_args(&args(&["--help"])), Ok(None)));
    }

    #[test]
    fn final_stats_are_read() {
        let log =
            "#1024 DONE cov: 10\nstat::number_of_executed_units: 194127\nstat::peak_rss_mb: 60\n";
        assert_eq!(
            final_stat(log, "stat::number_of_executed_units"),
            Some(194_127)
        );
        assert_eq!(final_stat(log, "stat::peak_rss_mb"), Some(60));
        assert_eq!(
            final_stat("nothing", "stat::number_of_executed_units"),
            None
        );
    }
}
