//! `lens watch` and `lens check` as a user runs them: `lens demo --otlp` (opentelemetry-otlp,
//! over OTLP/HTTP and OTLP/gRPC) into a running `lens watch`, `--save` read back by
//! `lens check`, and the errors a user meets.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cli_support;
mod watch_support;

use std::process::Stdio;

use cli_support::{lens, lens_with_stdin};
use serde_json::{Value, json};
use watch_support::{PATIENCE, Watch, address, command, demo_into, lines};

fn check_demo_trace(line: &str, trace_id: &str) -> Value {
    let trace: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    assert_eq!(trace["trace_id"], trace_id);
    let spans = trace["spans"].as_array().unwrap();
    assert_eq!(spans.len(), 13);
    let services: Vec<&str> = trace["services"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    for s in [
        "lens-demo",
        "gateway",
        "planner",
        "trainer",
        "trainer-rank-3",
    ] {
        assert!(services.contains(&s), "{s} in {services:?}");
    }
    // One root; every other span's parent is in the trace.
    let ids: Vec<&str> = spans
        .iter()
        .map(|s| s["span_id"].as_str().unwrap())
        .collect();
    let roots = spans
        .iter()
        .filter(|s| s["parent_span_id"].is_null())
        .count();
    assert_eq!(roots, 1);
    assert!(
        spans.iter().all(|s| s["parent_span_id"].is_null()
            || ids.contains(&s["parent_span_id"].as_str().unwrap()))
    );
    let server = spans.iter().find(|s| s["name"] == "POST /plan").unwrap();
    assert_eq!(server["kind"], "SERVER");
    assert_eq!(server["parent_is_remote"], true);
    assert!(server["start_unix_nano"].as_u64().unwrap() > 1_600_000_000_000_000_000);
    trace
}

#[test]
fn the_demo_over_otlp_http_lands_in_watch_json_as_one_trace() {
    let watch = Watch::start(&["--json"]);
    let id = demo_into(&format!("http://{}", watch.http), "http/protobuf");
    check_demo_trace(&watch.next_stdout(), &id);
}

#[test]
fn the_demo_over_otlp_grpc_lands_in_watch_as_a_waterfall_with_a_status_line() {
    let watch = Watch::start(&["--color", "never"]);
    let id = demo_into(&format!("http://{}", watch.grpc), "grpc");
    let mut text = Vec::new();
    loop {
        let line = watch.next_stdout();
        let done = line.starts_with(&format!("trace {id}:"));
        text.push(line);
        if done {
            break;
        }
    }
    assert_eq!(text[0], format!("trace {id}"));
    for name in [
        "demo request",
        "POST /plan",
        "lens.demo.Trainer/Step",
        "pp_stage 3",
        "↳ link → pp_stage 2 (trainer-rank-2)",
    ] {
        assert!(text.iter().any(|l| l.contains(name)), "{name}: {text:#?}");
    }
    assert!(
        text.last().unwrap().contains("13 spans, complete"),
        "{text:#?}"
    );
    assert!(text.last().unwrap().contains("1 grpc"), "{text:#?}");
    let status = watch.stderr.recv_timeout(PATIENCE).unwrap();
    assert!(
        status.starts_with("13 spans received, 1 traces"),
        "{status}"
    );
    assert!(status.contains("0 rejected, 0 traces evicted"), "{status}");
}

#[test]
fn saved_spans_read_back_with_check_as_the_same_trace() {
    let dir = std::env::temp_dir().join(format!("lens-watch-save-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("spans.jsonl");
    let _ = std::fs::remove_file(&file);
    let watched = {
        let watch = Watch::start(&["--json", "--save", file.to_str().unwrap()]);
        let id = demo_into(&format!("http://{}", watch.http), "http/protobuf");
        check_demo_trace(&watch.next_stdout(), &id)
    };
    let saved = std::fs::read_to_string(&file).unwrap();
    // One ExportTraceServiceRequest a line, one per export (the demo exports per service).
    assert!(saved.lines().count() > 1);
    assert!(
        saved
            .lines()
            .all(|l| serde_json::from_str::<Value>(l).unwrap()["resourceSpans"].is_array())
    );
    let run = lens(&["check", "--json", file.to_str().unwrap()]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 1);
    let checked: Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(checked, watched);
    assert!(run.stderr.contains("13 spans received"), "{}", run.stderr);
    // The demo's trace is healthy: the doctor finds nothing on it.
    assert!(
        run.stderr
            .contains("; 0 findings (0 errors, 0 warnings, 0 info)"),
        "{}",
        run.stderr
    );

    // Read back over a bound: the trace is marked partial in both outputs, its drop counted,
    // and the doctor says nothing of the pieces the bound took.
    let file = file.to_str().unwrap();
    let run = lens(&["check", "--json", "--max-spans-per-trace", "5", file]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{}", run.stdout);
    let partial: Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(
        (&partial["partial"], &partial["lost_spans"]),
        (&json!(true), &json!(8))
    );
    assert_eq!(partial["spans"].as_array().unwrap().len(), 5);
    assert!(
        run.stderr.contains("13 spans received")
            && run
                .stderr
                .contains("8 spans dropped over the per-trace limit")
            && run
                .stderr
                .contains("; 0 findings (0 errors, 0 warnings, 0 info)"),
        "{}",
        run.stderr
    );
    let run = lens(&[
        "check",
        "--color",
        "never",
        "--max-spans-per-trace",
        "5",
        file,
    ]);
    assert!(
        run.stdout
            .contains("5 spans, PARTIAL (8 more spans dropped over the per-trace limit"),
        "{}",
        run.stdout
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_port_in_use_is_a_usage_error_naming_the_port_and_the_flag() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{port}");
    for (flag, other) in [("--grpc", "--http"), ("--http", "--grpc")] {
        let run = lens(&["watch", other, "127.0.0.1:0", flag, &addr]);
        assert_eq!(run.code, Some(2), "{run:?}");
        assert!(run.stdout.is_empty());
        assert!(
            run.stderr
                .contains(&format!("port {port} is already in use ({flag} {addr})")),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn a_non_loopback_address_is_announced_as_reachable() {
    let mut child = command(&["watch", "--grpc", "127.0.0.1:0", "--http", "0.0.0.0:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = lines(child.stderr.take().unwrap());
    let first = stderr.recv_timeout(PATIENCE).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(first.starts_with("warning: --http 0.0.0.0:"), "{first}");
    assert!(first.contains("reachable by anyone"), "{first}");
}

const GOOD: &str = r#"{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7","name":"GET /","kind":2,"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000001000000"}]}]}]}"#;

#[test]
fn check_reads_standard_input_and_prints_the_waterfall() {
    let run = lens_with_stdin(&["check", "--color", "never", "-"], &format!("{GOOD}\n\n"));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stdout
            .starts_with("trace 4bf92f3577b34da6a3ce929d0e0e4736\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("GET /") && run.stdout.contains("svc") && run.stdout.contains("SERVER")
    );
    assert!(
        run.stdout.contains("1 spans, complete, 1.0 ms"),
        "{}",
        run.stdout
    );
}

#[test]
fn check_names_the_line_of_invalid_input_and_exits_2() {
    let run = lens_with_stdin(
        &["check", "-"],
        &format!("{GOOD}\n{{\"resourceSpans\": 5}}\n"),
    );
    assert_eq!(run.code, Some(2));
    assert!(run.stdout.is_empty());
    assert!(run.stderr.contains("<stdin>:2: not an OTLP/JSON ExportTraceServiceRequest: resourceSpans: invalid type: integer `5`, expected a sequence"), "{}", run.stderr);
    let bad_id = GOOD.replace("00f067aa0ba902b7", "00f067aa");
    let run = lens_with_stdin(&["check", "-"], &bad_id);
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr.contains("<stdin>:1: 1 spans rejected"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("invalid span id"), "{}", run.stderr);
}

#[test]
fn check_of_an_unreadable_file_exits_2() {
    let run = lens(&["check", "/nonexistent/lens/spans.jsonl"]);
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr
            .contains("cannot read /nonexistent/lens/spans.jsonl"),
        "{}",
        run.stderr
    );
}

#[test]
fn check_counts_evicted_traces_never_silently() {
    let second = GOOD.replace(
        "4bf92f3577b34da6a3ce929d0e0e4736",
        "5bf92f3577b34da6a3ce929d0e0e4736",
    );
    let run = lens_with_stdin(
        &["check", "--json", "--max-traces", "1", "-"],
        &format!("{GOOD}\n{second}\n"),
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout.lines().count(), 1);
    assert!(run.stdout.contains("5bf92f3577b34da6a3ce929d0e0e4736"));
    assert!(
        run.stderr.contains("1 traces evicted (1 spans)"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_closed_standard_error_does_not_stop_the_watch() {
    let mut child = command(&[
        "watch",
        "--json",
        "--grpc",
        "127.0.0.1:0",
        "--http",
        "127.0.0.1:0",
        "--quiet-for",
        "0.3",
    ])
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let stdout = lines(child.stdout.take().unwrap());
    let first = {
        use std::io::BufRead as _;
        let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        line
        // Dropped here: lens watch's standard error is now a closed pipe.
    };
    let http = address(&first, "OTLP/HTTP on http://", '/');
    for _ in 0..2 {
        let id = demo_into(&format!("http://{http}"), "http/protobuf");
        let line = stdout
            .recv_timeout(PATIENCE)
            .expect("the trace, status line or not");
        assert!(line.contains(&id), "{line}");
    }
    let _ = child.kill();
    let _ = child.wait();
}
