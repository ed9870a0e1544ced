//! `cargo xtask mutants`: cargo-mutants over lens-core's codec modules (traceparent, tracestate,
//! baggage, the shared lexical rules, the JSON carrier, the propagator's inject and extract paths
//! and the header carrier they write and read). Not part of `cargo xtask test`: on two cores it
//! takes hours, so it is run in pieces (`-- --re <file>`). Surviving mutants are listed, with the
//! reason each is equivalent, in docs/mutants.md.

use crate::failure::{Failure, Result};
use crate::run::run;
use crate::usage::{USAGE, is_help};
use crate::workspace::cargo;

const MUTANTS_HELP: &str = "\
usage: cargo xtask mutants [-- CARGO-MUTANTS-ARGS...]

Runs `cargo mutants -p lens-core` restricted to the codec modules:
  crates/lens-core/src/traceparent.rs, tracestate/*.rs, lexical.rs, baggage/*.rs,
  carrier/json/*.rs, propagator/*.rs, carrier/header.rs
Builds at opt-level 1 (the property tests then take about a second, so a mutant costs
5-10 s) and, unless the arguments name tests after their own `--`, runs lens-core's unit and
integration tests (`--lib --tests`; doctests would be compiled again for every mutant).
Arguments after `--` go to cargo-mutants (e.g. `-- --jobs 2` or `-- --list`); one module at a
time: `-- --re 'src/tracestate/'`.
Needs cargo-mutants: `cargo install cargo-mutants`. Results land in mutants.out/.";

/// The files whose mutants are tried.
const CODEC_FILES: &[&str] = &[
    "crates/lens-core/src/traceparent.rs",
    "crates/lens-core/src/tracestate/*.rs",
    "crates/lens-core/src/lexical.rs",
    "crates/lens-core/src/baggage/*.rs",
    "crates/lens-core/src/carrier/json/*.rs",
    "crates/lens-core/src/propagator/*.rs",
    "crates/lens-core/src/carrier/header.rs",
];

pub(crate) fn mutants(args: &[String]) -> Result {
    let forwarded = match args.split_first() {
        None => &[][..],
        Some((first, _)) if is_help(first) => {
            println!("{MUTANTS_HELP}");
            return Ok(());
        }
        Some((first, rest)) if first == "--" => rest,
        Some((first, _)) => {
            return Err(Failure::Usage(
                format!("`mutants` takes only arguments after `--` (got `{first}`)"),
                USAGE,
            ));
        }
    };
    let installed = cargo(&["mutants", "--version"])
        .output()
        .is_ok_and(|out| out.status.success());
    if !installed {
        return Err(Failure::Step(
            "cargo-mutants is not installed: run `cargo install cargo-mutants`".into(),
        ));
    }
    let mut command = cargo(&["mutants", "-p", "lens-core", "--test-package", "lens-core"]);
    for file in CODEC_FILES {
        command.args(["--file", file]);
    }
    command.args([
        "--cargo-arg=--config=profile.dev.opt-level=1",
        "--cargo-arg=--config=profile.dev.debug=0",
    ]);
    command.args(forwarded);
    if !forwarded.iter().any(|a| a == "--") {
        command.args(["--", "--lib", "--tests"]);
    }
    run("mutants", command)
}
