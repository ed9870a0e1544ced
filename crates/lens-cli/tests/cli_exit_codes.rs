//! Exit status of every command: 0 success, 1 failure, 2 usage error.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cli_support;

use std::process::{Command, Stdio};

use cli_support::lens;

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// `lens ARGS` with stdout on /dev/full, where every write fails.
fn exit_code_writing_to_a_full_device(args: &[&str]) -> Option<i32> {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    Command::new(env!("CARGO_BIN_EXE_lens"))
        .args(args)
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .stdout(Stdio::from(full))
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .code()
}

#[test]
fn inspect_exits_0_valid_1_invalid_2_usage() {
    assert_eq!(lens(&["inspect", TRACEPARENT]).code, Some(0));
    assert_eq!(lens(&["inspect", "00-abc-01"]).code, Some(1));
    assert_eq!(
        lens(&["inspect", "--as", "worm", TRACEPARENT]).code,
        Some(2)
    );
}

#[test]
fn demo_exits_0_complete_1_failed_2_usage() {
    assert_eq!(lens(&["demo"]).code, Some(0));
    // The trace cannot be printed: a failure, not a usage error.
    assert_eq!(exit_code_writing_to_a_full_device(&["demo"]), Some(1));
    assert_eq!(lens(&["demo", "--requests", "0"]).code, Some(2));
}

#[test]
fn w3c_service_exits_1_when_it_cannot_listen_and_2_on_usage() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let run = lens(&["w3c-service", "--listen", &addr]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
    drop(taken);
    assert_eq!(lens(&["w3c-service", "--listen", "x"]).code, Some(2));
    assert_eq!(lens(&["w3c-service", "--help"]).code, Some(0));
}

#[test]
fn completions_exit_0_written_1_unwritable_2_usage() {
    assert_eq!(lens(&["completions", "bash"]).code, Some(0));
    assert_eq!(
        exit_code_writing_to_a_full_device(&["completions", "bash"]),
        Some(1)
    );
    assert_eq!(lens(&["completions", "csh"]).code, Some(2));
}

#[test]
fn help_and_version_exit_0_unknown_commands_2() {
    assert_eq!(lens(&["help"]).code, Some(0));
    assert_eq!(lens(&["--version"]).code, Some(0));
    assert_eq!(lens(&["help", "frobnicate"]).code, Some(2));
    assert_eq!(lens(&["frobnicate"]).code, Some(2));
}
