//! `lens inspect`, run as a built binary: output and exit status for valid and invalid values.

use std::process::{Command, Output};

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn lens(args: &[&str]) -> Run {
    let output: Output = match Command::new(env!("CARGO_BIN_EXE_lens")).args(args).output() {
        Ok(output) => output,
        // Shows up in the failing assertion of the test.
        Err(e) => {
            return Run {
                code: None,
                stdout: String::new(),
                stderr: format!("could not run lens: {e}"),
            };
        }
    };
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn inspect(args: &[&str]) -> Run {
    let mut all = vec!["inspect"];
    all.extend_from_slice(args);
    lens(&all)
}

#[track_caller]
fn assert_has(run: &Run, needle: &str) {
    assert!(
        run.stdout.contains(needle),
        "stdout lacks {needle:?}\n--- stdout\n{}\n--- stderr\n{}",
        run.stdout,
        run.stderr
    );
}

// ---- traceparent

#[test]
fn valid_traceparent_prints_each_field() {
    let run = inspect(&[TRACEPARENT]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_has(&run, "traceparent: ");
    assert_has(&run, "valid");
    assert_has(&run, "version    00");
    assert_has(&run, "trace-id   4bf92f3577b34da6a3ce929d0e0e4736");
    assert_has(&run, "parent-id  00f067aa0ba902b7");
    assert_has(&run, "flags      01: sampled");
    assert_has(&run, &format!("sent as    {TRACEPARENT}"));
}

#[test]
fn traceparent_flags_random_and_unknown_bits() {
    let run = inspect(&["00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-fe"]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_has(&run, "flags      fe: not sampled, random");
    assert_has(&run, "unknown bits fc are sent on as 0");
    assert_has(
        &run,
        "sent as    00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-02",
    );
}

#[test]
fn higher_traceparent_version_is_read_with_the_00_layout() {
    let run = inspect(&["cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what:ever"]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_has(&run, "version    cc");
    assert_has(&run, "sent as    00-");
}

#[test]
fn invalid_traceparents_name_the_rule() {
    let cases = [
        (
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "trace-id is all zeros",
        ),
        (
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "parent-id is all zeros",
        ),
        (
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "trace-id must be 32 lowercase hex digits",
        ),
        (
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "version ff is invalid",
        ),
        (
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            "exactly 55 characters",
        ),
    ];
    for (value, rule) in cases {
        let run = inspect(&[value]);
        assert_eq!(run.code, Some(1), "{value}: {}", run.stdout);
        assert_has(&run, "invalid: ");
        assert_has(&run, rule);
        assert_has(&run, "(docs/propagation-rules.md#traceparent)");
        assert_has(&run, "no remote parent");
    }
}

#[test]
fn differing_traceparent_lines_are_invalid_and_identical_ones_count_once() {
    let other = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
    let run = inspect(&[TRACEPARENT, other]);
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    assert_has(&run, "several traceparent lines with different values");

    let run = inspect(&[TRACEPARENT, &format!("traceparent: {TRACEPARENT}")]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
}

// ---- tracestate

#[test]
fn valid_tracestate_lists_members_in_order() {
    let run = inspect(&["tracestate: rojo=00f067aa0ba902b7 , congo=t61rcWkgMzE,rojo=x"]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_has(&run, "valid: 2 members");
    assert_has(&run, "rojo   \"00f067aa0ba902b7\"");
    assert_has(&run, "congo  \"t61rcWkgMzE\"");
    assert_has(&run, "1 repeated key dropped");
    assert_has(&run, "sent as    rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
}

#[test]
fn current_w3c_tracestate_keys_are_detected_and_kept() {
    let run = inspect(&["foo@@bar=1,t@1v=2"]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_has(&run, "tracestate: ");
    assert_has(&run, "valid: 2 members");
}

#[test]
fn invalid_tracestate_names_the_rule() {
    let run = inspect(&["TraceState: Foo=1"]);
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    assert_has(&run, "invalid: key \"Foo\" is invalid");
    assert_has(&run, "(docs/propagation-rules.md#tracestate)");
    assert_has(&run, "the whole tracestate is dropped");

    let many: Vec<String> = (0..33).map(|i| format!("k{i}=v")).collect();
    let run = inspect(&["--as", "tracestate", &many.join(",")]);
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    assert_has(&run, "more than 32 list members");
}

// ---- baggage

#[test]
fn valid_baggage_lists_entries_with_properties() {
    let run = inspect(&["baggage: userId=alice, job=a%20b;p1 ; p2 = x"]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_has(&run, "valid: 2 members");
    assert_has(&run, "userId  \"alice\"");
    assert_has(&run, "job     \"a b\"  properties: p1;p2=x");
    assert_has(&run, "sent as    userId=alice,job=a%20b;p1;p2=x");
}

#[test]
fn baggage_is_detected_by_content() {
    let run = inspect(&["userId=alice,isProduction=false"]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_has(&run, "baggage: ");
    assert_has(&run, "read as baggage by its content");
}

#[test]
fn baggage_plus_is_a_plus_unless_asked() {
    let run = inspect(&["--as", "baggage", "k=a+b"]);
    assert_has(&run, "k  \"a+b\"");
    let run = inspect(&["--as=baggage", "--plus-as-space", "k=a+b"]);
    assert_has(&run, "k  \"a b\"");
    assert_has(&run, "sent as    k=a%20b");
}

#[test]
fn invalid_baggage_members_are_dropped_with_the_rule() {
    let run = inspect(&["baggage: a b=1, c=2, bad=x\"y, c=3"]);
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    assert_has(&run, "invalid: 2 members dropped; 1 kept");
    assert_has(&run, "dropped `a b=1`: a baggage key must be an HTTP token");
    assert_has(&run, "dropped `bad=x\"y`: ");
    assert_has(&run, "docs/propagation-rules.md#baggage");
    assert_has(&run, "1 repeated key merged");
    assert_has(&run, "sent as    c=3");
}

#[test]
fn baggage_over_the_member_limit_keeps_the_leading_members() {
    let many: Vec<String> = (0..200).map(|i| format!("k{i}=v")).collect();
    let run = inspect(&["--as", "baggage", &many.join(",")]);
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    assert_has(&run, "a limit was reached; 180 of 200 members kept");
    assert_has(&run, "dropped `k180=v`");
}

#[test]
fn several_baggage_lines_are_one_list() {
    let run = inspect(&["baggage: a=1", "Baggage: b=2"]);
    assert_eq!(run.code, Some(0), "{}", run.stdout);
    assert_has(&run, "sent as    a=1,b=2");
}

// ---- usage

#[test]
fn usage_errors_exit_2() {
    for args in [
        &[][..],
        &["--as"][..],
        &["--as", "cookie", "a=1"][..],
        &["--bogus", "a=1"][..],
        &["content-type: text/plain"][..],
        &["--as", "baggage", "tracestate: a=1"][..],
        &[TRACEPARENT, "baggage: a=1"][..],
    ] {
        let run = inspect(args);
        assert_eq!(run.code, Some(2), "{args:?}: {}{}", run.stdout, run.stderr);
        assert!(run.stderr.contains("error: "), "{args:?}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{args:?}: {}", run.stdout);
    }
    let run = lens(&["frobnicate"]);
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr.contains("unrecognized subcommand"),
        "{}",
        run.stderr
    );
    assert_eq!(lens(&[]).code, Some(2));
}

#[test]
fn help_exits_0() {
    let run = inspect(&["--help"]);
    assert_eq!(run.code, Some(0));
    assert_has(&run, "Usage: lens inspect");
    let run = lens(&["--help"]);
    assert_eq!(run.code, Some(0));
    assert_has(&run, "inspect");
}
