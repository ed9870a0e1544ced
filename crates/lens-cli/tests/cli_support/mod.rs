//! Shared by the `cli_*` and `inspect_*` tests: run the built `lens` binary.
#![allow(dead_code, unreachable_pub)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write as _;
use std::process::{Command, Stdio};

/// What one run of `lens` gave.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// `lens ARGS`, no `OTEL_*` variable set, standard input empty.
pub fn lens(args: &[&str]) -> Run {
    lens_with_stdin(args, "")
}

/// `lens ARGS` with `stdin` as standard input.
pub fn lens_with_stdin(args: &[&str], stdin: &str) -> Run {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lens"));
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("OTEL_") {
            command.env_remove(name);
        }
    }
    let mut child = command.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    // A command that exits before it reads its input (a usage error) closes the pipe first.
    if let Err(e) = input.write_all(stdin.as_bytes()) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    drop(input);
    let output = child.wait_with_output().unwrap();
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// A usage error as clap reports one: exit 2, nothing on stdout, one `error:` message on
/// stderr followed by a hint, and not the whole help text.
#[track_caller]
pub fn assert_usage_error(run: &Run, args: &[&str]) {
    assert_eq!(run.code, Some(2), "{args:?}: {run:?}");
    assert!(run.stdout.is_empty(), "{args:?}: stdout {:?}", run.stdout);
    let errors = run.stderr.matches("error:").count();
    assert_eq!(errors, 1, "{args:?}: one message: {}", run.stderr);
    assert!(
        run.stderr.starts_with("error: "),
        "{args:?}: {}",
        run.stderr
    );
    assert!(
        run.stderr.contains("--help"),
        "{args:?}: a hint: {}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("Options:"),
        "{args:?}: not the whole help: {}",
        run.stderr
    );
}
