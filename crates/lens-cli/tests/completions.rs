//! `lens completions SHELL`: a completion script naming every command.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cli_support;

use cli_support::lens;

#[test]
fn every_shell_gets_a_script_with_every_command() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell", "BASH"] {
        let run = lens(&["completions", shell]);
        assert_eq!(run.code, Some(0), "{shell}: {run:?}");
        for word in ["inspect", "demo", "w3c-service", "completions"] {
            assert!(run.stdout.contains(word), "{shell} {word}");
        }
    }
}

#[test]
fn the_bash_script_completes_demo_flags_and_inspect_kinds() {
    let run = lens(&["completions", "bash"]);
    assert!(run.stdout.contains("complete -F _lens"), "{}", run.stdout);
    for word in [
        "--requests",
        "--otlp",
        "--html",
        "traceparent tracestate baggage nccl",
    ] {
        assert!(run.stdout.contains(word), "{word}");
    }
}
