//! `lens demo --requests N`: a progress bar on standard error, drawn only on a terminal.
//! (Reported: `--requests 100000` ran for minutes without a sign of life.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod demo_support;

use std::path::Path;
use std::process::Command;

use demo_support::{run, stderr};

#[test]
fn piped_stderr_stays_clean() {
    let output = run(&["--requests", "20", "--concurrency", "4"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(!err.contains("requests,"), "{err:?}");
    assert!(!err.contains('\x1b') && !err.contains('\r'), "{err:?}");
}

#[test]
fn a_terminal_shows_the_progress_bar() {
    // util-linux `script` runs the command on a pseudo-terminal and copies what it draws.
    let script = Path::new("/usr/bin/script");
    if !script.exists() {
        eprintln!("note: skipped: /usr/bin/script (util-linux) is not installed");
        return;
    }
    let command = format!(
        "'{}' demo --requests 20 --concurrency 4 > /dev/null",
        env!("CARGO_BIN_EXE_lens")
    );
    let output = Command::new(script)
        .args(["-qec", &command, "/dev/null"])
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let drawn = String::from_utf8_lossy(&output.stdout);
    assert!(drawn.contains("/20 requests"), "{drawn:?}");
    // The bar is cleared at the end: the last thing drawn erases the line.
    assert!(drawn.trim_end().ends_with("\x1b[2K"), "{drawn:?}");
}
