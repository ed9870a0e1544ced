//! `lens check` with the propagation doctor, as a user's CI runs it: OTLP/JSON lines of a lost
//! hop and of a hop linked by policy, the findings printed (text and JSON) and the exit status.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod browser_support;
mod cli_support;
mod watch_support;

use std::io::{Read as _, Write as _};

use cli_support::lens_with_stdin;
use serde_json::{Value, json};
use watch_support::Watch;

const CLIENT_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const SERVER_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

/// One OTLP/JSON export request of `service` with one span (times in µs after 1.7e9 s).
fn export(service: &str, span: Value) -> String {
    json!({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]},
        "scopeSpans": [{"scope": {"name": "test"}, "spans": [span]}],
    }]})
    .to_string()
}

fn attrs(pairs: &[(&str, &str)]) -> Value {
    pairs
        .iter()
        .map(|(k, v)| json!({"key": k, "value": {"stringValue": v}}))
        .collect()
}

fn t(micros: u64) -> String {
    (1_700_000_000_000_000_000u64 + micros * 1000).to_string()
}

/// gateway's CLIENT span `POST http://127.0.0.1:8000/plan` with no child, and planner's new
/// root SERVER span for that request, started for `cause` (lens' attribute), maybe linked.
fn lost_hop(cause: &str, linked: bool) -> String {
    let client = export(
        "gateway",
        json!({"traceId": CLIENT_TRACE, "spanId": "00000000000000c1", "name": "POST",
            "kind": 3, "startTimeUnixNano": t(1_000), "endTimeUnixNano": t(9_000), "flags": 0x101,
            "attributes": attrs(&[("http.request.method", "POST"),
                ("url.full", "http://127.0.0.1:8000/plan")])}),
    );
    let mut server = json!({"traceId": SERVER_TRACE, "spanId": "00000000000000a1",
        "name": "POST /plan", "kind": 2, "startTimeUnixNano": t(2_000),
        "endTimeUnixNano": t(8_000), "flags": 0x101,
        "attributes": attrs(&[("http.request.method", "POST"), ("url.path", "/plan"),
            ("server.address", "127.0.0.1"), ("lens.trace.new_root", cause)])});
    if linked {
        server["links"] = json!([{"traceId": CLIENT_TRACE, "spanId": "00000000000000c1"}]);
    }
    format!("{client}\n{}\n", export("planner", server))
}

#[test]
fn a_lost_hop_is_an_error_finding_naming_both_services_and_the_cause() {
    let run = lens_with_stdin(
        &["check", "--color", "never", "-"],
        &lost_hop("none", false),
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let finding = run
        .stdout
        .lines()
        .find(|l| l.starts_with("error[lost-context]"))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert!(finding.contains("gateway -> planner"), "{finding}");
    assert!(
        finding.contains("planner received no traceparent"),
        "{finding}"
    );
    assert!(
        finding.ends_with("(docs/doctor.md#lost-context)"),
        "{finding}"
    );
    assert!(
        run.stderr
            .contains("1 findings (1 errors, 0 warnings, 0 info)"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_exit_status_is_that_of_the_traces_a_filter_prints() {
    let input = lost_hop("none", false);
    let run = lens_with_stdin(&["check", "--json", "--service", "planner", "-"], &input);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stdout.contains("\"finding\":\"lost-context\""),
        "{}",
        run.stdout
    );
    // The lost hop's traces filtered out: its finding is neither printed nor counted.
    let run = lens_with_stdin(&["check", "--json", "--service", "nobody", "-"], &input);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}

#[test]
fn findings_as_json_lines_after_the_traces() {
    let run = lens_with_stdin(
        &["check", "--json", "-"],
        &lost_hop("rejected:traceparent-zero-ids", false),
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let lines: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[..2].iter().all(|l| l["trace_id"].is_string()));
    let f = &lines[2];
    assert_eq!(f["finding"], "lost-context");
    assert_eq!(f["severity"], "error");
    assert_eq!(f["trace_ids"], json!([CLIENT_TRACE, SERVER_TRACE]));
    assert_eq!(
        f["span_ids"],
        json!(["00000000000000c1", "00000000000000a1"])
    );
    assert_eq!(f["services"], json!(["gateway", "planner"]));
    assert_eq!(f["doc"], "docs/doctor.md#lost-context");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("(rule traceparent-zero-ids of docs/propagation-rules.md)")
    );
}

#[test]
fn a_hop_linked_by_policy_is_info_and_quiet_leaves_it_out() {
    let input = lost_hop("untrusted:linked", true);
    let run = lens_with_stdin(&["check", "--json", "-"], &input);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let finding: Value = serde_json::from_str(run.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(
        (&finding["finding"], &finding["severity"]),
        (&json!("untrusted-linked"), &json!("info"))
    );
    let run = lens_with_stdin(&["check", "--json", "--quiet", "-"], &input);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(!run.stdout.contains("\"finding\""), "{}", run.stdout);
    assert!(run.stderr.contains("0 findings"), "{}", run.stderr);
}

#[test]
fn a_client_of_an_uninstrumented_service_is_no_finding() {
    let client_only = lost_hop("none", false).lines().next().unwrap().to_owned();
    let run = lens_with_stdin(&["check", "--json", "-"], &client_only);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout.lines().count(), 1);
}

#[test]
fn an_allowed_rule_is_left_out_of_the_output_and_the_exit_status() {
    let input = lost_hop("none", false);
    let run = lens_with_stdin(&["check", "--json", "--allow", "lost-context", "-"], &input);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(!run.stdout.contains("\"finding\""), "{}", run.stdout);
    assert_eq!(
        run.stdout.lines().count(),
        2,
        "the traces are still printed"
    );
    assert!(
        run.stderr
            .contains("0 findings (0 errors, 0 warnings, 0 info) (1 allowed by --allow, left out)"),
        "{}",
        run.stderr
    );
    // Another rule allowed: the lost hop still counts.
    let run = lens_with_stdin(
        &[
            "check",
            "--json",
            "--allow",
            "missing-parent",
            "--allow",
            "clock-skew",
            "-",
        ],
        &input,
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stdout.contains("\"finding\":\"lost-context\""),
        "{}",
        run.stdout
    );
}

#[test]
fn an_unknown_rule_is_a_usage_error_listing_the_rules() {
    // Refused before any input is read (so none is given: lens exits without reading it).
    let run = cli_support::lens(&["check", "--allow", "lost_context", "-"]);
    cli_support::assert_usage_error(&run, &["check", "--allow", "lost_context"]);
    assert!(
        run.stderr.contains(
            "the rules: lost-context, untrusted-linked, missing-parent, clock-skew, \
flag-dropped, tracestate-dropped, baggage-dropped, self-parent, duplicate-span-id, dangling-link, \
ambiguous-producer, untrusted-ignored, ambiguous-hop"
        ),
        "{}",
        run.stderr
    );
}

/// A lost hop and `n` traces of one span each: more text than a pipe holds.
fn many_traces(n: usize) -> String {
    let mut input = lost_hop("none", false);
    for i in 0..n {
        input.push_str(&export(
            "svc",
            json!({"traceId": format!("{:032x}", i + 1), "spanId": "0000000000000001",
                "name": "work", "kind": 1, "startTimeUnixNano": t(0), "endTimeUnixNano": t(5)}),
        ));
        input.push('\n');
    }
    input
}

#[test]
fn a_reader_that_stops_early_is_no_error_and_the_findings_decide_the_status() {
    use std::process::{Command, Stdio};
    let input = many_traces(3_000);
    let mut child = Command::new(env!("CARGO_BIN_EXE_lens"))
        .args(["check", "--color", "never", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // As `| head -0` does: the reader goes before lens writes (the output is over 64 KiB, a
    // pipe's buffer, so the write meets the closed pipe whatever the order).
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("error:"), "{stderr}");
    assert!(stderr.contains("1 findings (1 errors"), "{stderr}");
}

#[test]
fn standard_output_that_cannot_be_written_is_exit_2_with_a_message() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return; // no /dev/full on this system
    };
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_lens"))
        .args(["check", "--color", "never", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(full)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(lost_hop("none", false).as_bytes()).unwrap();
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with("error: cannot write the traces: "),
        "{stderr}"
    );
}

/// POSTs one OTLP/JSON request to `lens watch`'s HTTP receiver.
fn post(addr: &str, body: &str) {
    let (status, body) = watch_support::http(addr, "POST", "/v1/traces", Some(body));
    assert!(status.starts_with("HTTP/1.1 200"), "{status} {body}");
}

#[test]
fn watch_prints_the_finding_after_the_trace_it_completes_and_counts_it() {
    let watch = Watch::start(&["--json"]);
    for line in lost_hop("none", false).lines() {
        post(&watch.http, line);
    }
    let lines: Vec<Value> = (0..3)
        .map(|_| serde_json::from_str(&watch.next_stdout()).unwrap())
        .collect();
    assert!(
        lines[..2].iter().all(|l| l["trace_id"].is_string()),
        "{lines:?}"
    );
    assert_eq!(lines[2]["finding"], "lost-context");
    assert_eq!(lines[2]["services"], json!(["gateway", "planner"]));
    // The status line after the finding counts it (one per trace printed; the first may be
    // "0 findings" when the two traces complete apart).
    let counted = (0..3)
        .filter_map(|_| watch.stderr.recv_timeout(watch_support::PATIENCE).ok())
        .any(|l| l.ends_with("; 1 findings (1 errors, 0 warnings, 0 info)"));
    assert!(counted);
    // The page's findings panel reads the same finding.
    let mut stream = std::net::TcpStream::connect(&watch.http).unwrap();
    write!(
        stream,
        "GET /api/findings HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let body = response.split("\r\n\r\n").nth(1).unwrap();
    let page: Value = serde_json::from_str(body).unwrap();
    assert_eq!(page, json!([lines[2]]));
}

#[test]
fn the_page_lists_the_finding_in_chromium() {
    let Some(chromium) = browser_support::chromium() else {
        return;
    };
    let watch = Watch::start(&["--json"]);
    for line in lost_hop("none", false).lines() {
        post(&watch.http, line);
    }
    for _ in 0..3 {
        watch.next_stdout();
    }
    let work = browser_support::tempdir(
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")),
        "lens-doctor-browser",
    );
    let url = format!("http://{}/#trace={SERVER_TRACE}", watch.http);
    let shown = browser_support::browse(
        &chromium,
        &work,
        &url,
        &["--dump-dom", "--virtual-time-budget=4000"],
    );
    let dom = &shown.stdout;
    assert!(
        dom.contains("error[lost-context]"),
        "the panel lists it: {dom}"
    );
    assert!(dom.contains("gateway -&gt; planner"), "{dom}");
    assert_eq!(
        browser_support::console_messages(&shown.stderr),
        Vec::<&str>::new()
    );
}

/// trainer's PRODUCER span to `rollout.jobs` at 5 ms (trace CLIENT_TRACE), and rollout-worker's
/// CONSUMER root for it (trace SERVER_TRACE) `after_ms` later.
fn queue_hop(after_ms: u64) -> String {
    let messaging = attrs(&[
        ("messaging.system", "nats"),
        ("messaging.destination.name", "rollout.jobs"),
    ]);
    let span = |trace: &str, id: &str, kind: u8, start_us: u64| {
        json!({"traceId": trace, "spanId": id, "name": "m", "kind": kind,
            "startTimeUnixNano": t(start_us), "endTimeUnixNano": t(start_us + 500),
            "attributes": messaging.clone()})
    };
    format!(
        "{}\n{}\n",
        export("trainer", span(CLIENT_TRACE, "0000000000000002", 4, 5_000)),
        export(
            "rollout-worker",
            span(SERVER_TRACE, "0000000000000007", 5, 5_000 + after_ms * 1000)
        )
    )
}

#[test]
fn the_queue_window_is_an_option_of_lens_check() {
    // 5 s after the send: past the default 2 s window, within a 10 s one.
    let input = queue_hop(5_000);
    let default = lens_with_stdin(&["check", "--json", "-"], &input);
    assert_eq!(default.code, Some(0), "{}", default.stderr);
    let wide = lens_with_stdin(&["check", "--json", "--queue-window", "10", "-"], &input);
    assert_eq!(wide.code, Some(1), "{}", wide.stderr);
    assert!(
        wide.stdout.contains("\"finding\":\"lost-context\""),
        "{}",
        wide.stdout
    );
    for bad in ["0", "-1", "x", "3601"] {
        let run = cli_support::lens(&["check", "--queue-window", bad, "-"]);
        cli_support::assert_usage_error(&run, &["check", "--queue-window", bad]);
    }
}

#[test]
fn the_queue_window_is_an_option_of_lens_watch_too() {
    // The same hop 5 s apart, loaded into `lens watch`: a finding only with the wider window.
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("lens-doctor-queue-window");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("queue.jsonl");
    std::fs::write(&file, queue_hop(5_000)).unwrap();
    let file = file.to_str().unwrap();
    let lines_of = |extra: &[&str]| {
        let mut args = vec!["--json", "--load", file];
        args.extend_from_slice(extra);
        let watch = Watch::start(&args);
        // Both traces shown: the doctor has judged the second one.
        let shown: Vec<String> = (0..2).map(|_| watch.next_stdout()).collect();
        let stopped = watch.stop("INT");
        assert!(stopped.status.success(), "{:?}", stopped.stderr);
        shown.into_iter().chain(stopped.stdout).collect::<Vec<_>>()
    };
    let finds = |lines: &[String]| {
        lines
            .iter()
            .any(|l| l.contains("\"finding\":\"lost-context\""))
    };
    let default = lines_of(&[]);
    assert!(!finds(&default), "{default:?}");
    let wide = lines_of(&["--queue-window", "10"]);
    assert!(finds(&wide), "{wide:?}");
    let run = cli_support::lens(&["watch", "--queue-window", "0"]);
    cli_support::assert_usage_error(&run, &["watch", "--queue-window", "0"]);
}
