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

/// POSTs one OTLP/JSON request to `lens watch`'s HTTP receiver.
fn post(addr: &str, body: &str) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST /v1/traces HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
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
