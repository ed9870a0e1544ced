//! `cargo xtask bench [GROUP]`: the criterion benchmark suites.

use std::path::PathBuf;

use crate::failure::{Failure, Result};
use crate::run::run;
use crate::usage::is_help;
use crate::workspace::{cargo, metadata_target_dir, workspace_root};

const BENCH_HELP: &str = "\
usage: cargo xtask bench [GROUP] [-- BENCH-ARGS...]

GROUP is one of core, http, grpc, nccl, dist, nats, zmq, watch, all (default: all).
Runs `cargo bench -p <crate> --bench <name>` for each suite of the group; arguments after `--`
go to the benchmark binaries (e.g. `cargo xtask bench core -- --quick`).
Criterion writes its results under <target-dir>/criterion/.";

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

pub(crate) fn bench(args: &[String]) -> Result {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bench_group_name_is_unique_and_not_all() {
        let names: Vec<&str> = BENCH_GROUPS.iter().map(|(n, _)| *n).collect();
        for (i, name) in names.iter().enumerate() {
            assert_ne!(*name, "all");
            assert!(!names[i + 1..].contains(name), "{name} twice");
        }
    }
}
