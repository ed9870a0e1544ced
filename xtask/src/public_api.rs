//! `cargo xtask public-api [--bless]`: the public API of every published library crate, as
//! rustdoc JSON renders it (tests/public-api), compared with the listings checked in under
//! tests/public-api/listings/, so that a change to the API shows in review. Runs on the stable
//! toolchain: rustdoc's JSON output is unstable, `RUSTC_BOOTSTRAP=1` lets stable rustdoc write
//! it. Default features only. A listing records the JSON format it was made from; one made from
//! another format is reported, not compared (the same API may render differently).

use std::path::PathBuf;

use crate::failure::{Failure, Result};
use crate::run::run;
use crate::usage::is_help;
use crate::workspace::{cargo, metadata_target_dir, workspace_root};

pub(crate) const HELP: &str = "\
usage: cargo xtask public-api [--bless]

Documents every published library crate as rustdoc JSON (stable rustdoc, RUSTC_BOOTSTRAP=1,
default features), renders its public API one item per line (tests/public-api), and compares it
with tests/public-api/listings/<crate>.txt. A difference fails, with the lines added and
removed; --bless writes the listings instead.";

/// The published library crates (lens-cli is a binary: its interface is its command line).
const CRATES: &[&str] = &[
    "lens-core",
    "lens-span",
    "lens-axum",
    "lens-reqwest",
    "lens-tonic",
    "lens-nats",
    "lens-zmq",
    "lens-nccl",
    "lens-dist",
    "lens-watch",
];

fn listings_dir() -> PathBuf {
    workspace_root().join("tests/public-api/listings")
}

pub(crate) fn public_api(args: &[String]) -> Result {
    let bless = match args {
        [] => false,
        [flag] if flag == "--bless" => true,
        [flag] if is_help(flag) => {
            println!("{HELP}");
            return Ok(());
        }
        _ => {
            return Err(Failure::Usage(
                format!("unexpected arguments {args:?}"),
                HELP,
            ));
        }
    };
    let target = match std::env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => workspace_root().join(dir),
        None => metadata_target_dir().unwrap_or_else(|| workspace_root().join("target")),
    };
    let mut changed = Vec::new();
    for krate in CRATES {
        let mut rustdoc = cargo(&[
            "rustdoc",
            "-q",
            "-p",
            krate,
            "--lib",
            "--",
            "-Z",
            "unstable-options",
            "--output-format",
            "json",
        ]);
        rustdoc.env("RUSTC_BOOTSTRAP", "1");
        run(&format!("rustdoc JSON of {krate}"), rustdoc)?;
        let json = target
            .join("doc")
            .join(format!("{}.json", krate.replace('-', "_")));
        let json = json.to_string_lossy();
        let output = cargo(&["run", "-q", "-p", "lens-public-api", "--", &json])
            .output()
            .map_err(|e| Failure::Step(format!("lens-public-api could not start: {e}")))?;
        if !output.status.success() {
            return Err(Failure::Step(format!(
                "lens-public-api failed on {json}: {}",
                String::from_utf8_lossy(&output.stderr)
            )));
        }
        let listing = String::from_utf8_lossy(&output.stdout).into_owned();
        let path = listings_dir().join(format!("{krate}.txt"));
        if bless {
            std::fs::create_dir_all(listings_dir())
                .and_then(|()| std::fs::write(&path, &listing))
                .map_err(|e| Failure::Step(format!("cannot write {}: {e}", path.display())))?;
            println!("wrote {}", path.display());
            continue;
        }
        let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
        let format = |text: &str| text.lines().next().unwrap_or_default().to_owned();
        if format(&checked_in) != format(&listing) {
            // Another toolchain's rustdoc: the same API may render differently. Not a failure.
            println!(
                "\n{krate}: not compared: {} was made with `{}`, this rustdoc writes `{}` (re-bless with this toolchain to compare)",
                path.display(),
                format(&checked_in),
                format(&listing)
            );
            continue;
        }
        if checked_in != listing {
            let old: std::collections::BTreeSet<&str> = checked_in.lines().collect();
            let new: std::collections::BTreeSet<&str> = listing.lines().collect();
            println!("\n{krate}: the public API differs from {}:", path.display());
            for line in old.difference(&new) {
                println!("- {line}");
            }
            for line in new.difference(&old) {
                println!("+ {line}");
            }
            changed.push(*krate);
        }
    }
    if changed.is_empty() {
        println!("\npublic API: every listing matches");
        Ok(())
    } else {
        Err(Failure::Step(format!(
            "the public API of {} changed: if that is intended, run `cargo xtask public-api --bless` and commit the listings",
            changed.join(", ")
        )))
    }
}
