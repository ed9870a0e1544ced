//! `lens check --trace ID`, `--service NAME`, `--errors`: only the traces that match (each
//! condition given), with their findings (the exit status follows them: tests/doctor.rs).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cli_support;

use cli_support::{assert_usage_error, lens_with_stdin};
use serde_json::Value;

/// A request of one span.
fn span(trace: &str, span: &str, parent: Option<&str>, service: &str, status: u8) -> String {
    let parent = parent.map_or(String::new(), |p| format!(r#""parentSpanId":"{p}","#));
    format!(
        r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"{service}"}}}}]}},"scopeSpans":[{{"spans":[{{"traceId":"{trace}","spanId":"{span}",{parent}"name":"GET /","kind":2,"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000001000000","status":{{"code":{status}}}}}]}}]}}]}}"#
    )
}

const A: &str = "aaf92f3577b34da6a3ce929d0e0e4736";
const B: &str = "bbf92f3577b34da6a3ce929d0e0e4736";
const C: &str = "ccf92f3577b34da6a3ce929d0e0e4736";

/// A: gateway → api (the api span an error); B: gateway alone, healthy; C: a worker span
/// whose parent is missing (a finding), an error.
fn input() -> String {
    [
        span(A, "00000000000000a1", None, "gateway", 0),
        span(A, "00000000000000a2", Some("00000000000000a1"), "api", 2),
        span(B, "00000000000000b1", None, "gateway", 1),
        span(C, "00000000000000c2", Some("00000000000000c1"), "worker", 2),
    ]
    .join("\n")
}

/// The trace ids `lens check --json ARGS -` prints, and its stderr.
fn traces(args: &[&str]) -> (Vec<String>, String, Option<i32>) {
    let mut all = vec!["check", "--json"];
    all.extend_from_slice(args);
    all.push("-");
    let run = lens_with_stdin(&all, &input());
    let ids = run
        .stdout
        .lines()
        .filter_map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["trace_id"].as_str().map(str::to_owned)
        })
        .collect();
    (ids, run.stderr, run.code)
}

#[test]
fn each_filter_prints_only_the_traces_it_matches() {
    assert_eq!(traces(&[]).0, [A, B, C]);
    assert_eq!(traces(&["--trace", B]).0, [B]);
    // Either case.
    assert_eq!(traces(&["--trace", &B.to_uppercase()]).0, [B]);
    // Any span of the service, not only the root's.
    assert_eq!(traces(&["--service", "api"]).0, [A]);
    assert_eq!(traces(&["--service", "gateway"]).0, [A, B]);
    assert_eq!(traces(&["--errors"]).0, [A, C]);
    let (none, stderr, code) = traces(&["--service", "nobody"]);
    assert!(none.is_empty());
    assert_eq!(code, Some(0));
    // Every trace is still read and counted.
    assert!(stderr.contains("4 spans received, 3 traces"), "{stderr}");
    assert!(stderr.contains("0 of 3 traces match --service"), "{stderr}");
}

#[test]
fn filters_combine_with_and() {
    assert_eq!(traces(&["--service", "gateway", "--errors"]).0, [A]);
    assert_eq!(traces(&["--trace", B, "--errors"]).0, Vec::<String>::new());
    assert_eq!(
        traces(&["--trace", A, "--service", "api", "--errors"]).0,
        [A]
    );
    let (_, stderr, _) = traces(&["--trace", A, "--errors"]);
    assert!(
        stderr.contains("1 of 3 traces match --trace and --errors"),
        "{stderr}"
    );
}

#[test]
fn only_the_findings_of_the_traces_printed_are_printed() {
    // C's missing parent is a finding on C only.
    let run = lens_with_stdin(&["check", "--json", "-"], &input());
    let findings = |stdout: &str| -> Vec<Value> {
        stdout
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|v| v.get("finding").is_some())
            .collect()
    };
    let all = findings(&run.stdout);
    assert!(
        all.iter()
            .any(|f| f["trace_ids"].as_array().unwrap().contains(&C.into())),
        "{}",
        run.stdout
    );
    let run = lens_with_stdin(&["check", "--json", "--trace", B, "-"], &input());
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(findings(&run.stdout).is_empty(), "{}", run.stdout);
    let run = lens_with_stdin(&["check", "--json", "--service", "worker", "-"], &input());
    let on_c = findings(&run.stdout);
    assert_eq!(
        on_c.len(),
        all.iter()
            .filter(|f| f["trace_ids"].as_array().unwrap().contains(&C.into()))
            .count()
    );
}

#[test]
fn an_invalid_trace_id_is_a_usage_error() {
    for bad in [
        "4bf92f",
        "zz",
        &"0".repeat(32),
        "4bf92f3577b34da6a3ce929d0e0e473g",
    ] {
        let args = ["check", "--trace", bad, "-"];
        let run = lens_with_stdin(&args, &input());
        assert_usage_error(&run, &args);
        assert!(
            run.stderr.contains("is not a trace id: 32 hex digits"),
            "{}",
            run.stderr
        );
    }
}
