//! `lens help <command>`, `lens <command> --help`, `lens --help` and `--version`: help on
//! stdout, exit 0. (Reported: `lens help demo` printed the top-level usage.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cli_support;

use cli_support::lens;

#[test]
fn help_demo_prints_the_demo_help() {
    let run = lens(&["help", "demo"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.contains("Usage: lens demo"), "{}", run.stdout);
    for flag in ["--json", "--html", "--requests", "--concurrency", "--otlp"] {
        assert!(run.stdout.contains(flag), "{flag}: {}", run.stdout);
    }
    // Not the top-level list of commands.
    assert!(!run.stdout.contains("w3c-service"), "{}", run.stdout);
}

#[test]
fn help_of_every_command_names_its_flags() {
    for (command, flags) in [
        ("inspect", &["--as", "--json", "--plus-as-space"][..]),
        ("w3c-service", &["--listen"][..]),
        (
            "watch",
            &[
                "--save",
                "--load",
                "--grpc",
                "--http",
                "--logs",
                "--max-logs <N>",
            ][..],
        ),
        (
            "check",
            &["--trace <ID>", "--service <NAME>", "--errors", "--allow"][..],
        ),
        (
            "probe",
            &[
                "<TARGET>",
                "grpc://HOST:PORT",
                "nats://HOST:PORT/SUBJECT",
                "--request <METHOD>",
                "--header <HEADER>",
                "--data <DATA>",
                "--quiet-for <S>",
                "--wait <S>",
                "--timeout <S>",
                "--allow <RULE>",
                "--grpc <ADDR>",
                "--http <ADDR>",
                "--json",
                "Exit status: 0 the context survived",
            ][..],
        ),
        ("completions", &["<SHELL>"][..]),
    ] {
        for args in [vec!["help", command], vec![command, "--help"]] {
            let run = lens(&args);
            assert_eq!(run.code, Some(0), "{args:?}: {run:?}");
            assert!(
                run.stdout.contains(&format!("Usage: lens {command}")),
                "{args:?}: {}",
                run.stdout
            );
            for flag in flags {
                assert!(run.stdout.contains(flag), "{args:?} {flag}: {}", run.stdout);
            }
        }
    }
}

#[test]
fn help_check_says_what_each_filter_does_and_help_watch_what_load_reads() {
    let run = lens(&["help", "check"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    for said in [
        "Print only trace ID",
        "Print only the traces with a span of service NAME",
        "Print only the traces with a span whose status is an error",
        "given together, a trace must match each",
        "the Collector's file exporter write them, gzip or zstd too",
    ] {
        assert!(run.stdout.contains(said), "{said}: {}", run.stdout);
    }
    let run = lens(&["help", "watch"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    for said in [
        "--save FILE --load FILE keeps a session across restarts",
        "no span is shown or written twice",
        "gzip or zstd",
        "HTTP POST /v1/logs",
    ] {
        assert!(run.stdout.contains(said), "{said}: {}", run.stdout);
    }
}

#[test]
fn top_level_help_lists_every_command() {
    for args in [&["--help"][..], &["help"][..], &["-h"][..]] {
        let run = lens(args);
        assert_eq!(run.code, Some(0), "{args:?}: {run:?}");
        for command in ["inspect", "demo", "w3c-service", "completions", "help"] {
            assert!(run.stdout.contains(command), "{command}: {}", run.stdout);
        }
    }
}

#[test]
fn version_prints_the_package_version() {
    // The commit and the optional parts that follow: tests/version.rs.
    let expected = format!("lens {}", env!("CARGO_PKG_VERSION"));
    for args in [&["--version"][..], &["-V"][..]] {
        let run = lens(args);
        assert_eq!(run.code, Some(0), "{args:?}: {run:?}");
        let first = run.stdout.lines().next().unwrap_or_default();
        assert!(
            first == expected || first.starts_with(&format!("{expected} (")),
            "{args:?}: {}",
            run.stdout
        );
    }
    // Each command knows it too (clap names it `lens-demo`).
    let run = lens(&["demo", "--version"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let first = run.stdout.lines().next().unwrap_or_default();
    assert_eq!(first, format!("lens-demo {}", env!("CARGO_PKG_VERSION")));
}
