//! `cargo xtask`: the lens project's build tasks.
//!
//! * `cargo xtask test`: formatting, clippy, the workspace tests, then every optional
//!   (feature-gated) suite whose requirements are present on this machine.
//! * `cargo xtask bench [GROUP]`: the criterion benchmark suites.
//! * `cargo xtask public-api [--bless]`: the public API listings (see `public_api.rs`); also a
//!   step of `cargo xtask test`.
//! * `cargo xtask interop`: lens against the real Python NeMo Lens, live (see `interop.rs`).
//! * `cargo xtask w3c --harness DIR`: the official W3C Trace Context test harness against
//!   `lens w3c-service` (see `w3c.rs`); not part of `cargo xtask test`.
//!
//! Only std: every task shells out to `cargo`.
#![forbid(unsafe_code)]

mod fuzz;
mod gpu;
mod interop;
#[cfg(test)]
mod layout;
mod mutants;
mod public_api;
#[cfg(test)]
mod rules;
mod soak;
mod w3c;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

const USAGE: &str = "\
usage: cargo xtask <COMMAND> [OPTIONS]

commands:
  test     run the project's checks: fmt, clippy, workspace tests, optional suites
  bench    run criterion benchmark suites
  interop  run the live interop scenarios against the Python NeMo Lens
  mpi-test run lens-dist's multi-process MPI suite (4 ranks under mpirun)
  gpu-test  build and run the NCCL GPU tests (exits 0 having run nothing without a GPU)
  gpu-bench measure the added latency of a context frame on a 1 MiB NCCL self send/recv
  fuzz     run every cargo-fuzz target for a while (cargo xtask fuzz --seconds N)
  mutants  cargo-mutants over lens-core's codec modules (slow; not part of `test`)
  soak     load and fault checks of the HTTP chain (cargo xtask soak --seconds N --concurrency C)
  public-api  the public API of every published library crate against tests/public-api/listings
  w3c      the W3C Trace Context test harness against lens w3c-service (cargo xtask w3c --harness DIR)
  help     print this text

`cargo xtask <COMMAND> --help` describes a command.";

const TEST_HELP: &str = "\
usage: cargo xtask test

Runs, in order, stopping at the first failure (non-zero exit):
  1. cargo fmt --all -- --check
  2. cargo clippy --workspace --all-targets -- -D warnings
  3. cargo test --workspace, then the public API listings (cargo xtask public-api)
  4. the optional suites (feature-gated crates, interop tests). A suite whose requirement is
     missing on this machine is skipped with a note naming what to install; skips do not
     change the exit status.";

const BENCH_HELP: &str = "\
usage: cargo xtask bench [GROUP] [-- BENCH-ARGS...]

GROUP is one of core, http, grpc, nccl, dist, nats, zmq, watch, all (default: all).
Runs `cargo bench -p <crate> --bench <name>` for each suite of the group; arguments after `--`
go to the benchmark binaries (e.g. `cargo xtask bench core -- --quick`).
Criterion writes its results under <target-dir>/criterion/.";

/// Exit status for usage errors.
const USAGE_ERROR: u8 = 2;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((command, rest)) = args.split_first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(USAGE_ERROR);
    };
    let result = match command.as_str() {
        "test" => test(rest),
        "bench" => bench(rest),
        "interop" => interop::interop(rest),
        "mpi-test" => mpi_test(rest),
        "gpu-test" => gpu::gpu_test(rest),
        "gpu-bench" => gpu::gpu_bench(rest),
        "fuzz" => fuzz::fuzz(rest),
        "mutants" => mutants::mutants(rest),
        "soak" => soak::soak(rest),
        "public-api" => public_api::public_api(rest),
        "w3c" => w3c::w3c(rest),
        "help" | "-h" | "--help" => {
            println!("{USAGE}");
            Ok(())
        }
        other => Err(Failure::Usage(format!("unknown command `{other}`"), USAGE)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(message, usage)) => {
            eprintln!("error: {message}\n\n{usage}");
            ExitCode::from(USAGE_ERROR)
        }
        Err(Failure::Step(message)) => {
            eprintln!("\nerror: {message}");
            ExitCode::FAILURE
        }
        Err(Failure::Status(code, message)) => {
            eprintln!("\nerror: {message}");
            ExitCode::from(code)
        }
    }
}

enum Failure {
    /// Bad command line: the message, then the usage text to show; exit 2.
    Usage(String, &'static str),
    /// A task failed: exit 1.
    Step(String),
    /// A task failed with an exit status of its own (e.g. the W3C harness's): exit with it.
    Status(u8, String),
}

type Result<T = (), E = Failure> = std::result::Result<T, E>;

// ---------------------------------------------------------------------------------------------
// cargo xtask test

/// A suite that needs something beyond the Rust toolchain (a Python interpreter, MPI, a GPU).
///
/// To add one, append an entry to [`OPTIONAL_STEPS`]; [`requirements`] has the usual checks.
struct OptionalStep {
    /// Short name, shown in progress and skip messages.
    name: &'static str,
    /// `Ok(())` when the suite can run here; otherwise why not (e.g. "`mpirun` is not on PATH").
    requires: fn() -> Result<(), String>,
    /// What to install to run it, e.g. "libopenmpi-dev openmpi-bin".
    install: &'static str,
    /// The command that runs the suite.
    command: fn() -> Command,
}

/// Optional suites, run after the workspace tests in this order. Examples of others:
///
/// ```text
/// OptionalStep {
///     name: "python interop",
///     requires: || requirements::python_at_least(3, 12).map(|_| ()),
///     install: "python3 (>= 3.12) python3-venv",
///     command: || cargo(&["test", "-p", "lens-core", "--features", "interop", "--test", "python"]),
/// },
/// OptionalStep {
///     name: "lens-dist (MPI)",
///     requires: || requirements::on_path("mpirun"),
///     install: "libopenmpi-dev openmpi-bin",
///     command: || cargo(&["test", "-p", "lens-dist", "--features", "mpi"]),
/// },
/// ```
const OPTIONAL_STEPS: &[OptionalStep] = &[
    OptionalStep {
        name: "lens-nccl and lens-dist clippy (feature nccl)",
        // cudarc loads CUDA and NCCL at run time, so the feature builds on any machine.
        requires: || Ok(()),
        install: "",
        command: || {
            cargo(&[
                "clippy",
                "-p",
                "lens-nccl",
                "-p",
                "lens-dist",
                "--features",
                "lens-nccl/nccl",
                "--features",
                "lens-dist/nccl",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ])
        },
    },
    OptionalStep {
        name: "lens-nccl and lens-dist NCCL tests (GPU suites skip without a GPU)",
        requires: || Ok(()),
        install: "",
        command: || {
            cargo(&[
                "test",
                "-p",
                "lens-nccl",
                "-p",
                "lens-dist",
                "--features",
                "lens-nccl/nccl",
                "--features",
                "lens-dist/nccl",
            ])
        },
    },
    OptionalStep {
        name: "interop (Python NeMo Lens)",
        requires: interop::requirement,
        install: "Python >= 3.13 with venv (e.g. `pyenv install 3.13`)",
        command: interop::command,
    },
    OptionalStep {
        name: "lens-dist clippy (feature mpi)",
        requires: || requirements::on_path("mpirun"),
        install: MPI_PACKAGES,
        command: || {
            cargo(&[
                "clippy",
                "-p",
                "lens-dist",
                "--features",
                "mpi",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ])
        },
    },
    MPI_TEST,
    // lens-zmq, feature zmq: zmq-sys builds libzmq 4.3 from source (a C++ compiler).
    OptionalStep {
        name: "lens-zmq clippy (feature zmq)",
        requires: || requirements::on_path("c++"),
        install: "g++",
        command: || {
            cargo(&[
                "clippy",
                "-p",
                "lens-zmq",
                "--features",
                "zmq",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ])
        },
    },
    OptionalStep {
        name: "lens-zmq tests (feature zmq: PUSH/PULL, PUB/SUB, DEALER/ROUTER over inproc, ipc, tcp)",
        requires: || requirements::on_path("c++"),
        install: "g++",
        command: || cargo(&["test", "-p", "lens-zmq", "--features", "zmq"]),
    },
];

/// Debian packages lens-dist's MPI feature needs (bindgen needs libclang).
const MPI_PACKAGES: &str = "openmpi-bin libopenmpi-dev libclang-dev clang pkg-config";

/// lens-dist's multi-process suite: 4 ranks under mpirun (crates/lens-dist/tests/mpi.rs).
const MPI_TEST: OptionalStep = OptionalStep {
    name: "lens-dist mpi-test",
    requires: || requirements::on_path("mpirun"),
    install: MPI_PACKAGES,
    command: || {
        cargo(&[
            "test",
            "-p",
            "lens-dist",
            "--features",
            "mpi",
            "--test",
            "mpi",
        ])
    },
};

/// `cargo xtask mpi-test`: [`MPI_TEST`] alone; fails when MPI is missing.
fn mpi_test(args: &[String]) -> Result {
    if let Some(arg) = args.first() {
        return Err(Failure::Usage(
            format!("`mpi-test` takes no arguments (got `{arg}`)"),
            USAGE,
        ));
    }
    (MPI_TEST.requires)().map_err(|why| {
        Failure::Step(format!(
            "cannot run mpi-test: {why}; install {MPI_PACKAGES}"
        ))
    })?;
    run(MPI_TEST.name, (MPI_TEST.command)())
}

fn test(args: &[String]) -> Result {
    if let Some(arg) = args.first() {
        if is_help(arg) {
            println!("{TEST_HELP}");
            return Ok(());
        }
        return Err(Failure::Usage(
            format!("`test` takes no arguments (got `{arg}`)"),
            TEST_HELP,
        ));
    }
    run("fmt", cargo(&["fmt", "--all", "--", "--check"]))?;
    run(
        "clippy",
        cargo(&[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ]),
    )?;
    run("test", cargo(&["test", "--workspace"]))?;
    public_api::public_api(&[])?;

    let mut skipped = 0;
    for step in OPTIONAL_STEPS {
        match (step.requires)() {
            Ok(()) => run(step.name, (step.command)())?,
            Err(why) => {
                println!(
                    "skipped {}: {why}; install {} to run it",
                    step.name, step.install
                );
                skipped += 1;
            }
        }
    }
    let ran = OPTIONAL_STEPS.len() - skipped;
    println!("\nxtask test: all checks passed ({ran} optional suites run, {skipped} skipped)");
    Ok(())
}

/// Checks for [`OptionalStep::requires`].
#[allow(dead_code)] // used by the optional suites of later crates; see OPTIONAL_STEPS
mod requirements {
    use std::path::PathBuf;
    use std::process::Command;

    /// `Ok(path)` when `program` is an executable file in a `PATH` directory.
    pub(crate) fn find_on_path(program: &str) -> Result<PathBuf, String> {
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .map(|dir| dir.join(program))
            .find(|candidate| is_executable(candidate))
            .ok_or_else(|| format!("`{program}` is not on PATH"))
    }

    /// `Ok(())` when `program` is on `PATH`.
    pub(crate) fn on_path(program: &str) -> Result<(), String> {
        find_on_path(program).map(|_| ())
    }

    /// The first of `python3.N` (N from 14 down), `python3`, `python` on `PATH` that reports a
    /// version of at least `major.minor`.
    pub(crate) fn python_at_least(major: u32, minor: u32) -> Result<PathBuf, String> {
        let mut names: Vec<String> = (minor..=14).rev().map(|m| format!("python3.{m}")).collect();
        names.push("python3".into());
        names.push("python".into());
        for name in &names {
            let Ok(path) = find_on_path(name) else {
                continue;
            };
            let Ok(out) = Command::new(&path)
                .args(["-c", "import sys; print(*sys.version_info[:2])"])
                .output()
            else {
                continue;
            };
            let text = String::from_utf8_lossy(&out.stdout);
            let mut parts = text.split_whitespace().map(str::parse::<u32>);
            if let (Some(Ok(found_major)), Some(Ok(found_minor))) = (parts.next(), parts.next())
                && out.status.success()
                && (found_major, found_minor) >= (major, minor)
            {
                return Ok(path);
            }
        }
        Err(format!("no Python >= {major}.{minor} on PATH"))
    }

    #[cfg(unix)]
    fn is_executable(path: &std::path::Path) -> bool {
        use std::os::unix::fs::PermissionsExt;
        path.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }

    #[cfg(not(unix))]
    fn is_executable(path: &std::path::Path) -> bool {
        path.is_file() || path.with_extension("exe").is_file()
    }
}

// ---------------------------------------------------------------------------------------------
// cargo xtask bench

/// One criterion benchmark target: `cargo bench -p <package> --bench <bench>`.
struct BenchSuite {
    package: &'static str,
    bench: &'static str,
    /// `--features` for the package, when the bench needs some ("" for none).
    features: &'static str,
}

/// Benchmark groups, in the order `all` runs them. A group with no suites yet is still listed
/// so that `cargo xtask bench http` says so plainly.
const BENCH_GROUPS: &[(&str, &[BenchSuite])] = &[
    (
        "core",
        &[
            BenchSuite {
                package: "lens-core",
                bench: "propagation",
                features: "",
            },
            BenchSuite {
                package: "lens-core",
                bench: "ab_ratios",
                features: "",
            },
            // Fixture P's NCCL rows (serialize_context_from, extract_nccl_context).
            BenchSuite {
                package: "lens-nccl",
                bench: "ab_ratios",
                features: "",
            },
        ],
    ),
    (
        "http",
        // lens-bench-http, not lens-axum: the comparison with axum-tracing-opentelemetry needs
        // Rust 1.91 (workspace MSRV 1.88), so it lives in that bench-only crate.
        &[
            BenchSuite {
                package: "lens-bench-http",
                bench: "http",
                features: "",
            },
            BenchSuite {
                package: "lens-bench-http",
                bench: "per_request",
                features: "",
            },
            BenchSuite {
                package: "lens-bench-http",
                bench: "allocations",
                features: "",
            },
        ],
    ),
    (
        "grpc",
        &[BenchSuite {
            package: "lens-tonic",
            bench: "grpc",
            features: "",
        }],
    ),
    (
        "nccl",
        &[BenchSuite {
            package: "lens-nccl",
            bench: "bytes",
            features: "",
        }],
    ),
    (
        "dist",
        &[BenchSuite {
            package: "lens-dist",
            bench: "dist",
            features: "mpi",
        }],
    ),
    (
        "nats",
        // Against a local nats-server the bench starts (prints, no criterion): publish
        // throughput and consume cost against async-nats alone and by hand, allocations.
        &[BenchSuite {
            package: "lens-nats",
            bench: "nats",
            features: "",
        }],
    ),
    (
        "zmq",
        // lens-zmq per message, frame and field, send and process, against the same by hand
        // and lens-span's lifecycle alone (prints: thread CPU time, allocations; no socket).
        &[BenchSuite {
            package: "lens-zmq",
            bench: "zmq_carriers",
            features: "",
        }],
    ),
    (
        "watch",
        &[
            BenchSuite {
                package: "lens-watch",
                bench: "ingest",
                features: "",
            },
            // The doctor's lost-hop index with 1,000 and 10,000 open traces (criterion).
            BenchSuite {
                package: "lens-watch",
                bench: "diagnose",
                features: "",
            },
            // Ingest with the doctor beside the receiver alone, alternated rounds (prints).
            BenchSuite {
                package: "lens-watch",
                bench: "doctor_overhead",
                features: "",
            },
            // Memory per stored span and what an exporter waits for (prints, no criterion).
            BenchSuite {
                package: "lens-watch",
                bench: "footprint",
                features: "",
            },
        ],
    ),
];

fn bench(args: &[String]) -> Result {
    let (ours, forwarded) = match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (args, &[][..]),
    };
    if ours.iter().any(|a| is_help(a)) {
        println!("{BENCH_HELP}");
        return Ok(());
    }
    let group = match ours {
        [] => "all",
        [one] => one.as_str(),
        [_, extra, ..] => {
            return Err(Failure::Usage(
                format!("`bench` takes one group (unexpected `{extra}`)"),
                BENCH_HELP,
            ));
        }
    };
    let suites: Vec<&BenchSuite> = if group == "all" {
        BENCH_GROUPS.iter().flat_map(|(_, s)| s.iter()).collect()
    } else {
        match BENCH_GROUPS.iter().find(|(name, _)| *name == group) {
            Some((_, suites)) => suites.iter().collect(),
            None => {
                let names: Vec<&str> = BENCH_GROUPS.iter().map(|(n, _)| *n).collect();
                return Err(Failure::Usage(
                    format!(
                        "unknown bench group `{group}` (expected one of {}, all)",
                        names.join(", ")
                    ),
                    BENCH_HELP,
                ));
            }
        }
    };
    if suites.is_empty() {
        return Err(Failure::Step(format!(
            "no benchmark suites exist yet for group `{group}`"
        )));
    }
    for suite in suites {
        let mut command = cargo(&["bench", "-p", suite.package, "--bench", suite.bench]);
        if !suite.features.is_empty() {
            command.args(["--features", suite.features]);
        }
        if !forwarded.is_empty() {
            command.arg("--").args(forwarded);
        }
        run(&format!("bench {}/{}", suite.package, suite.bench), command)?;
    }
    let criterion = criterion_dir();
    let report = criterion.join("report").join("index.html");
    if report.is_file() {
        println!("\ncriterion report: {}", report.display());
    } else {
        println!(
            "\ncriterion results: {} (one folder per benchmark; new/estimates.json holds the numbers)",
            criterion.display()
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// helpers

fn is_help(arg: &str) -> bool {
    matches!(arg, "-h" | "--help" | "help")
}

/// The workspace root (the folder above `xtask/`).
fn workspace_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf()
}

/// Where criterion writes its results: `$CRITERION_HOME`, else `<target-dir>/criterion`, with the
/// target dir found as criterion finds it (`$CARGO_TARGET_DIR`, else `cargo metadata`).
fn criterion_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("CRITERION_HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(home);
    }
    let target = match std::env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => workspace_root().join(dir),
        None => metadata_target_dir().unwrap_or_else(|| workspace_root().join("target")),
    };
    target.join("criterion")
}

/// `target_directory` from `cargo metadata` (read without a JSON parser: it is a plain path).
fn metadata_target_dir() -> Option<PathBuf> {
    let output = cargo(&["metadata", "--format-version", "1", "--no-deps"])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let text = String::from_utf8(output.stdout).ok()?;
    let key = "\"target_directory\":\"";
    let start = text.find(key)? + key.len();
    let end = start + text[start..].find('"')?;
    Some(PathBuf::from(text[start..end].replace("\\\\", "\\")))
}

/// A `cargo` command with `args`, run from the workspace root. Uses the cargo that started
/// xtask (`$CARGO`) when there is one.
fn cargo(args: &[&str]) -> Command {
    let program = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let mut command = Command::new(program);
    command.args(args).current_dir(workspace_root());
    command
}

/// Runs `command`, echoing it first; a spawn failure or non-zero exit fails step `name`.
fn run(name: &str, mut command: Command) -> Result {
    let shown = show(&command);
    println!("\n==> [{name}] {shown}");
    let status = command
        .status()
        .map_err(|e| Failure::Step(format!("step `{name}` could not start `{shown}`: {e}")))?;
    if status.success() {
        Ok(())
    } else {
        let code = status.code().map_or_else(
            || "killed by a signal".to_string(),
            |c| format!("exit status {c}"),
        );
        Err(Failure::Step(format!(
            "step `{name}` failed ({code}): {shown}"
        )))
    }
}

/// `command` as a shell-like line, with the program shown by its file name.
fn show(command: &Command) -> String {
    let program = Path::new(command.get_program())
        .file_name()
        .map_or_else(
            || command.get_program().to_string_lossy(),
            |n| n.to_string_lossy(),
        )
        .into_owned();
    std::iter::once(program)
        .chain(command.get_args().map(|a| a.to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_metadata_names_an_absolute_target_dir() {
        let dir = metadata_target_dir();
        assert!(dir.as_ref().is_some_and(|d| d.is_absolute()), "{dir:?}");
    }

    #[test]
    fn commands_are_shown_by_program_name() {
        let command = cargo(&["fmt", "--all"]);
        assert!(
            show(&command).ends_with("cargo fmt --all"),
            "{}",
            show(&command)
        );
    }

    #[test]
    fn every_bench_group_name_is_unique_and_not_all() {
        let names: Vec<&str> = BENCH_GROUPS.iter().map(|(n, _)| *n).collect();
        for (i, name) in names.iter().enumerate() {
            assert_ne!(*name, "all");
            assert!(!names[i + 1..].contains(name), "{name} twice");
        }
    }
}
