//! Usage errors: one message and a hint (not the whole help text), exit 2, before any work
//! starts. (Reported: every usage error printed the whole help text; `--otlp notaurl` warned and
//! exited 0; a bad `--html` path failed only after the whole run.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cli_support;

use cli_support::{assert_usage_error, lens};

#[test]
fn every_usage_error_is_one_message_with_exit_2() {
    for args in [
        &["frobnicate"][..],
        &["demo", "--frobnicate"],
        &["demo", "--requests", "0"],
        &["demo", "--requests", "-3"],
        &["demo", "--requests", "many"],
        &["demo", "--requests", "100001"],
        &["demo", "--concurrency", "0"],
        &["demo", "--concurrency", "-1"],
        &["demo", "--otlp-timeout", "-1"],
        &["demo", "--color", "pink"],
        &["demo", "--json=maybe"],
        &["inspect"],
        &["inspect", "--as", "cookie", "a=1"],
        &["inspect", "--bogus", "a=1"],
        &["inspect", "content-type: text/plain"],
        &["inspect", "--as", "baggage", "tracestate: a=1"],
        &["inspect", "-", "a=1"],
        &["w3c-service", "--listen", "nowhere"],
        &["w3c-service", "--listen"],
        &["completions", "tcsh"],
        &["completions"],
    ] {
        assert_usage_error(&lens(args), args);
    }
}

#[test]
fn lens_alone_prints_the_help_on_stderr_with_exit_2() {
    let run = lens(&[]);
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(run.stderr.contains("Usage: lens"), "{}", run.stderr);
}

#[test]
fn otlp_notaurl_exits_2_without_running_the_demo() {
    let run = lens(&["demo", "--otlp", "notaurl"]);
    assert_usage_error(&run, &["demo", "--otlp", "notaurl"]);
    assert!(run.stderr.contains("notaurl"), "{}", run.stderr);
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
}

#[test]
fn an_unwritable_html_path_fails_before_the_run() {
    let dir = std::env::temp_dir().join(format!("lens-no-such-dir-{}", std::process::id()));
    let path = dir.join("trace.html");
    let path = path.to_str().unwrap();
    let run = lens(&["demo", "--html", path]);
    assert_usage_error(&run, &["demo", "--html", path]);
    assert!(run.stderr.contains(path), "{}", run.stderr);
    // No trace was printed: the demo never ran.
    assert!(!run.stderr.contains("trace "), "{}", run.stderr);
    assert!(!dir.exists());
}
