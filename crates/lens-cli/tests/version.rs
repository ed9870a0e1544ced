//! `lens --version`: the package version, the commit it was built from, and the optional parts
//! compiled in; `lens -V`: the version and the commit's first 12 digits.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cli_support;

use std::process::Command;

use cli_support::lens;

/// The commit of the checkout this test runs in, when it is one and git is installed.
fn checkout_commit() -> Option<String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(env!("CARGO_MANIFEST_DIR"))
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8(output.stdout).unwrap().trim().to_owned())
}

#[test]
fn long_version_says_the_version_the_commit_and_the_optional_parts() {
    let run = lens(&["--version"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    let [version, commit, nccl, mpi] = lines[..] else {
        panic!("four lines: {}", run.stdout);
    };
    assert_eq!(version, format!("lens {}", env!("CARGO_PKG_VERSION")));
    match checkout_commit() {
        Some(sha) => assert_eq!(commit, format!("commit {sha}")),
        None => assert!(commit.starts_with("commit "), "{commit}"),
    }
    let state = |on: bool| if on { "compiled in" } else { "not compiled in" };
    assert_eq!(
        nccl,
        format!(
            "NCCL: {} (cargo feature `nccl`)",
            state(cfg!(feature = "nccl"))
        )
    );
    assert_eq!(
        mpi,
        format!(
            "MPI: {} (cargo feature `mpi`)",
            state(cfg!(feature = "mpi"))
        )
    );
}

#[test]
fn short_version_says_the_version_and_the_commit() {
    let run = lens(&["-V"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let version = format!("lens {}", env!("CARGO_PKG_VERSION"));
    match checkout_commit() {
        Some(sha) => assert_eq!(run.stdout.trim_end(), format!("{version} ({})", &sha[..12])),
        None => assert!(run.stdout.starts_with(&version), "{}", run.stdout),
    }
}
