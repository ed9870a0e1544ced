//! `cargo xtask test`: formatting, clippy, the workspace tests, the public API listings, then
//! every optional suite whose requirements are present.

use crate::failure::{Failure, Result};
use crate::optional::OPTIONAL_STEPS;
use crate::public_api;
use crate::run::run;
use crate::usage::is_help;
use crate::workspace::cargo;

const TEST_HELP: &str = "\
usage: cargo xtask test

Runs, in order, stopping at the first failure (non-zero exit):
  1. cargo fmt --all -- --check
  2. cargo clippy --workspace --all-targets -- -D warnings
  3. cargo test --workspace, then the public API listings (cargo xtask public-api)
  4. the optional suites (feature-gated crates, interop tests). A suite whose requirement is
     missing on this machine is skipped with a note naming what to install; skips do not
     change the exit status.";

pub(crate) fn test(args: &[String]) -> Result {
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
