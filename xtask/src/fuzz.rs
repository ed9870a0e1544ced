//! `cargo xtask fuzz`: every cargo-fuzz (libFuzzer) target of `tests/fuzz/`, each for a fixed time.
//!
//! The targets (`tests/fuzz/fuzz_targets/*.rs`) check properties beyond "no panic": an extracted
//! Context injected and extracted again is the same Context, and what lens sends stays within
//! the limits (docs/propagation-rules.md#limits). Each run starts from the committed seed corpus
//! (`tests/fuzz/seeds/<target>/`), the committed regression corpus (`tests/fuzz/regressions/<target>/`,
//! what long campaigns found beyond the seeds, minimized) and the working corpus
//! (`tests/fuzz/corpus/<target>/`, ignored by git, grown by earlier runs).
//!
//! `--replay` runs every committed input once and fuzzes nothing (CI, every run); `--minimize`
//! rewrites the regression corpus from the working one.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::failure::{Failure, Result};
use crate::run::{run, show};
use crate::workspace::{cargo, workspace_root};

pub(crate) const HELP: &str = "\
usage: cargo xtask fuzz [--seconds N | --replay | --minimize] [TARGET...]

Builds the cargo-fuzz targets of tests/fuzz/ and runs each for N seconds (default 30), one after the
other, from the seed corpus tests/fuzz/seeds/<target>/, the regression corpus
tests/fuzz/regressions/<target>/ and the working corpus tests/fuzz/corpus/<target>/.
Prints per target the executions, libFuzzer's coverage (`cov`: code edges, `ft`: features) after
the committed inputs and at the end, and when the last input adding coverage was found; fails on
the first crash or failed property (the input is saved under tests/fuzz/artifacts/<target>/;
reproduce with `cargo fuzz run --fuzz-dir tests/fuzz <target> <file>`).

--replay    run every committed input (seeds and regressions) once, fuzz nothing (seconds)
--minimize  rewrite tests/fuzz/regressions/<target>/ as a small set of inputs of the working
            and regression corpora that reaches the code edges the seeds do not (libFuzzer's
            -set_cover_merge=1, without hit counts); run it after a long campaign, then commit
            the folder

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
    growth: Growth,
}

/// What the command does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Fuzz each target for this many seconds.
    Fuzz(u64),
    /// Run the committed inputs once.
    Replay,
    /// Rewrite the regression corpus.
    Minimize,
}

/// The parsed command line.
#[derive(Debug, PartialEq, Eq)]
struct Options {
    mode: Mode,
    targets: Vec<&'static str>,
}

fn parse_args(args: &[String]) -> Result<Option<Options>> {
    let mut mode = None;
    let mut targets = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.as_str() {
            "-h" | "--help" | "help" => return Ok(None),
            "--seconds" => {
                let value = iter
                    .next()
                    .ok_or_else(|| Failure::Usage("`--seconds` needs a value".into(), HELP))?;
                set_mode(Mode::Fuzz(parse_seconds(value)?), &mut mode)?;
            }
            "--replay" => set_mode(Mode::Replay, &mut mode)?,
            "--minimize" => set_mode(Mode::Minimize, &mut mode)?,
            other => {
                if let Some(value) = other.strip_prefix("--seconds=") {
                    set_mode(Mode::Fuzz(parse_seconds(value)?), &mut mode)?;
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
    Ok(Some(Options {
        mode: mode.unwrap_or(Mode::Fuzz(DEFAULT_SECONDS)),
        targets,
    }))
}

/// Sets the mode once: a second mode option is a usage error.
fn set_mode(new: Mode, mode: &mut Option<Mode>) -> Result {
    if mode.replace(new).is_some() {
        return Err(Failure::Usage(
            "give only one of `--seconds`, `--replay` and `--minimize`".into(),
            HELP,
        ));
    }
    Ok(())
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
    create_dir(&logs)?;
    match options.mode {
        Mode::Fuzz(seconds) => {
            let mut outcomes = Vec::new();
            for &target in &options.targets {
                outcomes.push(run_target(&root, &logs, target, seconds)?);
            }
            println!("\nfuzz: every target ran {seconds} s without a failure");
            print_outcomes(&outcomes);
        }
        Mode::Replay => {
            println!("\nfuzz: replaying the committed inputs (seeds and regressions)");
            for &target in &options.targets {
                replay_target(&root, &logs, target)?;
            }
            println!("fuzz: every committed input of every target passed");
        }
        Mode::Minimize => {
            for &target in &options.targets {
                minimize_target(&root, &logs, target)?;
            }
        }
    }
    Ok(())
}

fn print_outcomes(outcomes: &[Outcome]) {
    println!(
        "{:<16} {:>12} {:>8} {:>15} {:>15} {:>16} {:>7}",
        "target",
        "executions",
        "exec/s",
        "cov (start>end)",
        "ft (start>end)",
        "last new (s)",
        "corpus"
    );
    let unknown = || "?".to_string();
    for o in outcomes {
        let execs = o.executions.map_or_else(unknown, |n| n.to_string());
        let rate = o
            .executions
            .map_or_else(unknown, |n| format!("{:.0}", n as f64 / o.seconds));
        let g = &o.growth;
        let pair = |a: Option<u64>, b: Option<u64>| {
            format!(
                "{}>{}",
                a.map_or_else(unknown, |v| v.to_string()),
                b.map_or_else(unknown, |v| v.to_string())
            )
        };
        let when = |last: Option<(u64, f64)>| {
            last.map_or_else(|| "-".to_string(), |(_, at)| format!("{at:.0}"))
        };
        let last = format!("{}/{}", when(g.last_cov), when(g.last_new));
        println!(
            "{:<16} {:>12} {:>8} {:>15} {:>15} {:>16} {:>7}",
            o.target,
            execs,
            rate,
            pair(g.start.map(|c| c.cov), g.end.map(|c| c.cov)),
            pair(g.start.map(|c| c.ft), g.end.map(|c| c.ft)),
            last,
            o.corpus
        );
    }
}

fn create_dir(dir: &Path) -> Result {
    fs::create_dir_all(dir)
        .map_err(|e| Failure::Step(format!("cannot create {}: {e}", dir.display())))
}

/// The target's folder under `tests/fuzz/<kind>/`.
fn corpus_dir(root: &Path, kind: &str, target: &str) -> PathBuf {
    root.join(FUZZ_DIR).join(kind).join(target)
}

/// The committed input folders of `target` that exist: seeds, then regressions.
fn committed_dirs(root: &Path, target: &str) -> Vec<PathBuf> {
    ["seeds", "regressions"]
        .iter()
        .map(|kind| corpus_dir(root, kind, target))
        .filter(|dir| dir.is_dir())
        .collect()
}

/// Runs `command` with its output in `logs/<target>-<what>.log`; on failure prints the log's tail
/// and fails. Returns the log's text.
fn run_logged(
    logs: &Path,
    target: &str,
    what: &str,
    mut command: Command,
) -> Result<(String, f64)> {
    let log_path = logs.join(format!("{target}{what}.log"));
    let log = fs::File::create(&log_path)
        .map_err(|e| Failure::Step(format!("cannot create {}: {e}", log_path.display())))?;
    let log_err = log
        .try_clone()
        .map_err(|e| Failure::Step(format!("cannot write {}: {e}", log_path.display())))?;
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
    let seconds = started.elapsed().as_secs_f64();
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
    Ok((text, seconds))
}

/// The libFuzzer options every run gets.
const LIBFUZZER_OPTIONS: &[&str] = &[
    // One input taking over 10 s is a hang, and a failure.
    "-timeout=10",
    "-rss_limit_mb=2048",
];

fn run_target(root: &Path, logs: &Path, target: &'static str, seconds: u64) -> Result<Outcome> {
    let corpus = corpus_dir(root, "corpus", target);
    create_dir(&corpus)?;
    let committed = committed_dirs(root, target);
    let max_time = format!("-max_total_time={seconds}");
    let mut command = fuzz_command(&["fuzz", "run", target]);
    command.arg(&corpus).args(&committed);
    command
        .arg("--")
        .args([max_time.as_str(), "-print_final_stats=1"])
        .args(LIBFUZZER_OPTIONS);
    let (text, seconds_run) = run_logged(logs, target, "", command)?;
    let executions = final_stat(&text, "stat::number_of_executed_units");
    let corpus_len = count_files(&corpus) + committed.iter().map(|d| count_files(d)).sum::<usize>();
    println!(
        "    {target}: {} executions in {seconds_run:.0} s",
        executions.map_or_else(|| "?".into(), |n| n.to_string())
    );
    Ok(Outcome {
        target,
        executions,
        seconds: seconds.max(1) as f64,
        corpus: corpus_len,
        growth: growth(&text),
    })
}

/// Runs every committed input of `target` once (`-runs=0`: the corpus is executed, nothing is
/// mutated, nothing is written).
fn replay_target(root: &Path, logs: &Path, target: &'static str) -> Result {
    let committed = committed_dirs(root, target);
    let inputs: usize = committed.iter().map(|d| count_files(d)).sum();
    let mut command = fuzz_command(&["fuzz", "run", target]);
    command
        .args(&committed)
        .args(["--", "-runs=0"])
        .args(LIBFUZZER_OPTIONS);
    let (text, seconds) = run_logged(logs, target, "-replay", command)?;
    let cov = growth(&text).start;
    println!(
        "    {target}: {inputs} inputs passed in {seconds:.1} s (cov {}, ft {})",
        cov.map_or_else(|| "?".into(), |c| c.cov.to_string()),
        cov.map_or_else(|| "?".into(), |c| c.ft.to_string()),
    );
    Ok(())
}

/// Rewrites `regressions/<target>/`: the inputs of the working and regression corpora that add
/// coverage to the seeds', as few and as small as libFuzzer's merge finds them.
fn minimize_target(root: &Path, logs: &Path, target: &'static str) -> Result {
    let seeds = corpus_dir(root, "seeds", target);
    let regressions = corpus_dir(root, "regressions", target);
    let corpus = corpus_dir(root, "corpus", target);
    // The merge writes into its first folder: a scratch copy of the seeds.
    let scratch = root
        .join(FUZZ_DIR)
        .join("target")
        .join("minimize")
        .join(target);
    if scratch.exists() {
        fs::remove_dir_all(&scratch)
            .map_err(|e| Failure::Step(format!("cannot empty {}: {e}", scratch.display())))?;
    }
    create_dir(&scratch)?;
    let seed_names = file_names(&seeds);
    for name in &seed_names {
        fs::copy(seeds.join(name), scratch.join(name))
            .map_err(|e| Failure::Step(format!("cannot copy seed {name}: {e}")))?;
    }
    let mut command = fuzz_command(&["fuzz", "run", target]);
    command.arg(&scratch);
    for dir in [&regressions, &corpus] {
        if dir.is_dir() {
            command.arg(dir);
        }
    }
    // Set cover over code edges only (no hit counts): few inputs that reach every edge the
    // working corpus reaches beyond the seeds.
    command
        .args(["--", "-set_cover_merge=1", "-use_counters=0"])
        .args(LIBFUZZER_OPTIONS);
    run_logged(logs, target, "-minimize", command)?;
    let found: Vec<String> = file_names(&scratch)
        .into_iter()
        .filter(|name| !seed_names.contains(name))
        .collect();
    if regressions.exists() {
        fs::remove_dir_all(&regressions)
            .map_err(|e| Failure::Step(format!("cannot empty {}: {e}", regressions.display())))?;
    }
    create_dir(&regressions)?;
    let mut bytes = 0;
    for name in &found {
        let to = regressions.join(name);
        bytes += fs::copy(scratch.join(name), &to)
            .map_err(|e| Failure::Step(format!("cannot write {}: {e}", to.display())))?;
    }
    println!(
        "    {target}: {} regression inputs ({bytes} bytes) beyond {} seeds in {}",
        found.len(),
        seed_names.len(),
        regressions.display()
    );
    Ok(())
}

fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.path().is_file())
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// libFuzzer's coverage counters at one point of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Coverage {
    cov: u64,
    ft: u64,
}

/// How a run's coverage grew, read from libFuzzer's status lines (`#N INITED cov: C ft: F ...
/// exec/s: E ...`, one `NEW` line per input that added coverage).
#[derive(Debug, Default, PartialEq)]
struct Growth {
    /// After the starting corpus (`INITED`).
    start: Option<Coverage>,
    /// At the last status line.
    end: Option<Coverage>,
    /// The last input that added coverage (`ft`): its unit number and about when (unit /
    /// exec/s, the run's average rate so far), in seconds.
    last_new: Option<(u64, f64)>,
    /// The last input that added code edges (`cov`), the same way.
    last_cov: Option<(u64, f64)>,
}

fn growth(log: &str) -> Growth {
    let mut growth = Growth::default();
    for line in log.lines() {
        let Some(rest) = line.strip_prefix('#') else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let (Some(unit), Some(kind)) = (words.next(), words.next()) else {
            continue;
        };
        let Ok(unit) = unit.parse::<u64>() else {
            continue;
        };
        let field = |name: &str| -> Option<u64> {
            let mut words = rest.split_whitespace();
            words.find(|w| *w == name)?;
            words.next()?.parse().ok()
        };
        let (Some(cov), Some(ft)) = (field("cov:"), field("ft:")) else {
            continue;
        };
        let now = Coverage { cov, ft };
        match kind {
            "INITED" => growth.start = Some(now),
            "NEW" => {
                let rate = field("exec/s:").unwrap_or(0);
                let at = if rate == 0 {
                    0.0
                } else {
                    unit as f64 / rate as f64
                };
                growth.last_new = Some((unit, at));
                if growth.end.is_some_and(|before| cov > before.cov) {
                    growth.last_cov = Some((unit, at));
                }
            }
            _ => {}
        }
        growth.end = Some(now);
    }
    growth
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
                mode: Mode::Fuzz(DEFAULT_SECONDS),
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
                mode: Mode::Fuzz(5),
                targets: vec!["baggage", "nccl_frame"]
            })
        );
        let eq = parse_args(&args(&["--seconds=7"])).ok().flatten();
        assert_eq!(eq.map(|o| o.mode), Some(Mode::Fuzz(7)));
        let replay = parse_args(&args(&["tracestate", "--replay"]))
            .ok()
            .flatten();
        assert_eq!(
            replay,
            Some(Options {
                mode: Mode::Replay,
                targets: vec!["tracestate"]
            })
        );
        let minimize = parse_args(&args(&["--minimize"])).ok().flatten();
        assert_eq!(minimize.map(|o| o.mode), Some(Mode::Minimize));
        assert!(parse_args(&args(&["--seconds", "0"])).is_err());
        assert!(parse_args(&args(&["--seconds"])).is_err());
        assert!(parse_args(&args(&["--replay", "--seconds", "3"])).is_err());
        assert!(parse_args(&args(&["--replay", "--minimize"])).is_err());
        assert!(parse_args(&args(&["nope"])).is_err());
        assert!(matches!(parse_args(&args(&["--help"])), Ok(None)));
    }

    #[test]
    fn coverage_growth_is_read_from_the_status_lines() {
        let log = "\
INFO: Seed: 1234
#2\tINITED cov: 310 ft: 900 corp: 40/2Kb exec/s: 0 rss: 40Mb
#4000\tNEW    cov: 312 ft: 905 corp: 41/2Kb lim: 40 exec/s: 2000 rss: 41Mb L: 12/40 MS: 1 ChangeBit-
#5000\tNEW    cov: 312 ft: 907 corp: 41/2Kb lim: 40 exec/s: 2000 rss: 41Mb L: 12/40 MS: 1 ChangeBit-
#8192\tpulse  cov: 312 ft: 905 corp: 41/2Kb lim: 60 exec/s: 2048 rss: 41Mb
#9000\tREDUCE cov: 312 ft: 905 corp: 41/2Kb lim: 60 exec/s: 1800 rss: 41Mb L: 9/40 MS: 1 EraseBytes-
#30000\tNEW    cov: 315 ft: 910 corp: 42/2Kb lim: 80 exec/s: 1500 rss: 42Mb L: 20/40 MS: 2 CopyPart-
#45000\tNEW    cov: 315 ft: 911 corp: 43/2Kb lim: 80 exec/s: 1500 rss: 42Mb L: 20/40 MS: 2 CopyPart-
#60000\tDONE   cov: 315 ft: 911 corp: 42/2Kb lim: 80 exec/s: 1000 rss: 42Mb
Done 60000 runs in 60 second(s)
stat::number_of_executed_units: 60000
";
        let g = growth(log);
        assert_eq!(g.start, Some(Coverage { cov: 310, ft: 900 }));
        assert_eq!(g.end, Some(Coverage { cov: 315, ft: 911 }));
        assert_eq!(g.last_new, Some((45_000, 30.0)));
        assert_eq!(g.last_cov, Some((30_000, 20.0)));
        let none = growth("#2\tINITED cov: 5 ft: 6 corp: 1/1b exec/s: 0 rss: 30Mb\n");
        assert_eq!(none.last_new, None);
        assert_eq!(none.last_cov, None);
        assert_eq!(none.end, Some(Coverage { cov: 5, ft: 6 }));
        assert_eq!(growth("no status lines"), Growth::default());
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
