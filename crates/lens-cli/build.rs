//! What `lens --version` says beyond the package version: the commit the binary was built from
//! and the optional parts compiled in.
//!
//! The commit comes from `.cargo_vcs_info.json` in a packaged crate (what `cargo install lens-cli`
//! builds: `cargo package` records the commit there), else from git when this crate is tracked in
//! a git checkout, else it is unknown. Neither git nor a `.git` folder is required.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let commit = packaged_commit(&dir).or_else(|| git_commit(&dir));
    let (long, short) = match &commit {
        Some((sha, dirty)) => {
            let note = if *dirty {
                " (with uncommitted changes)"
            } else {
                ""
            };
            let short = sha.get(..12).unwrap_or(sha);
            (format!("commit {sha}{note}"), format!(" ({short})"))
        }
        None => (
            "commit unknown (built from neither a git checkout nor a packaged crate)".to_owned(),
            String::new(),
        ),
    };
    println!("cargo::rustc-env=LENS_BUILD_COMMIT={long}");
    println!("cargo::rustc-env=LENS_BUILD_COMMIT_SHORT={short}");
    for (name, feature) in [("NCCL", "nccl"), ("MPI", "mpi")] {
        // Cargo sets CARGO_FEATURE_<NAME> for each feature of this package that is on.
        let on = std::env::var_os(format!("CARGO_FEATURE_{name}")).is_some();
        let state = if on { "compiled in" } else { "not compiled in" };
        println!("cargo::rustc-env=LENS_BUILD_{name}={state} (cargo feature `{feature}`)");
    }
}

/// The commit `cargo package` recorded in `.cargo_vcs_info.json`, and whether the checkout it
/// packaged had uncommitted changes.
fn packaged_commit(dir: &Path) -> Option<(String, bool)> {
    let path = dir.join(".cargo_vcs_info.json");
    let info = std::fs::read_to_string(&path).ok()?;
    println!("cargo::rerun-if-changed={}", path.display());
    // {"git": {"sha1": "<40 hex>", "dirty": true}, "path_in_vcs": "crates/lens-cli"}
    let (_, after) = info.split_once("\"sha1\"")?;
    let sha: String = after
        .trim_start_matches([' ', ':', '"'])
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    let dirty = info.replace(' ', "").contains("\"dirty\":true");
    is_sha(&sha).then_some((sha, dirty))
}

/// `git rev-parse HEAD` when this crate's manifest is tracked by the checkout that holds it
/// (not, say, a home folder kept in git around a registry copy); never dirty-checked, so that an
/// edit does not rerun this script.
fn git_commit(dir: &Path) -> Option<(String, bool)> {
    let git = |args: &[&str]| -> Option<String> {
        let output = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .ok()?;
        let text = String::from_utf8(output.stdout).ok()?;
        output.status.success().then(|| text.trim().to_owned())
    };
    git(&["ls-files", "--error-unmatch", "Cargo.toml"])?;
    let sha = git(&["rev-parse", "HEAD"])?;
    // Rerun when HEAD moves: HEAD itself, the branch it names, and packed refs.
    let mut watched = vec![git(&["rev-parse", "--git-path", "HEAD"])?];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(git(&["rev-parse", "--git-path", &branch])?);
    }
    watched.extend(git(&["rev-parse", "--git-path", "packed-refs"]));
    for path in watched {
        let path = dir.join(path);
        if path.exists() {
            println!("cargo::rerun-if-changed={}", path.display());
        }
    }
    is_sha(&sha).then_some((sha, false))
}

fn is_sha(text: &str) -> bool {
    text.len() == 40 && text.chars().all(|c| c.is_ascii_hexdigit())
}
