//! `lens watch` stopped by SIGINT (Ctrl-C) or SIGTERM right after exporters were told
//! "success": every span they were acknowledged for is in `--save` and shown, the traces still
//! open are shown cut short, and the last line accounts for every span. Real exporters
//! (opentelemetry-otlp, through `lens demo --otlp`), over OTLP/HTTP and OTLP/gRPC at once.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod watch_support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;

use serde_json::Value;
use watch_support::{PATIENCE, command, lines};

/// Requests per demo: 13 spans each.
const REQUESTS: u64 = 300;

/// Runs `lens demo --requests REQUESTS --otlp URL` over `protocol`; the spans it was
/// acknowledged for ("exported N spans").
fn demo(url: &str, protocol: &str) -> u64 {
    let output = command(&[
        "demo",
        "--requests",
        &REQUESTS.to_string(),
        "--concurrency",
        "8",
        "--otlp",
        url,
    ])
    .env("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
    .stdout(Stdio::null())
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let n = stderr
        .lines()
        .find_map(|l| l.strip_prefix("exported ")?.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("the demo says what it exported: {stderr}"));
    assert_eq!(n, REQUESTS * 13, "{stderr}");
    n
}

/// Spans in an OTLP/JSON lines file.
fn spans_in(path: &Path) -> u64 {
    let text = std::fs::read_to_string(path).unwrap();
    let mut n = 0;
    for line in text.lines() {
        let request: Value = serde_json::from_str(line).unwrap();
        for resource in request["resourceSpans"].as_array().unwrap() {
            for scope in resource["scopeSpans"].as_array().unwrap() {
                n += scope["spans"].as_array().unwrap().len() as u64;
            }
        }
    }
    n
}

fn stopped_by(signal: &str) {
    let dir = std::env::temp_dir().join(format!("lens-watch-stop-{signal}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let save = dir.join("spans.jsonl");
    let _ = std::fs::remove_file(&save);
    // A quiet window longer than the test: every trace is still open at the stop.
    let mut child = command(&[
        "watch",
        "--grpc",
        "127.0.0.1:0",
        "--http",
        "127.0.0.1:0",
        "--quiet-for",
        "600",
        "--json",
        "--save",
        save.to_str().unwrap(),
    ])
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let stdout = lines(child.stdout.take().unwrap());
    let stderr = lines(child.stderr.take().unwrap());
    let first = stderr.recv_timeout(PATIENCE).unwrap();
    let address = |after: &str, end: char| {
        first
            .split(after)
            .nth(1)
            .unwrap()
            .split(end)
            .next()
            .unwrap()
            .to_owned()
    };
    let (grpc, http) = (
        address("OTLP/gRPC on ", ','),
        address("OTLP/HTTP on http://", '/'),
    );

    let over_grpc = std::thread::spawn(move || demo(&format!("http://{grpc}"), "grpc"));
    let over_http = demo(&format!("http://{http}"), "http/protobuf");
    let acknowledged = over_http + over_grpc.join().unwrap();

    // At once: no waiting for the watch to catch up.
    let pid = child.id().to_string();
    let killed = Command::new("kill")
        .args([&format!("-{signal}"), &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let (done, exited) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(child.wait());
    });
    let status = exited
        .recv_timeout(PATIENCE)
        .expect("lens watch exits after draining")
        .unwrap();
    assert!(status.success(), "{status}");

    assert_eq!(
        spans_in(&save),
        acknowledged,
        "--save holds every acknowledged span"
    );

    // Every trace shown, whole, marked as cut short by the stop.
    // The child has exited: each iterator ends at its pipe's end.
    let traces: Vec<Value> = stdout
        .iter()
        .map(|l| serde_json::from_str(&l).unwrap())
        .collect();
    assert_eq!(traces.len() as u64, 2 * REQUESTS);
    for trace in &traces {
        assert_eq!(trace["spans"].as_array().unwrap().len(), 13, "{trace}");
        assert_eq!(trace["cut_short"], true);
        assert_eq!(trace["partial"], false);
    }

    let err: Vec<String> = stderr.iter().collect();
    let account = err
        .iter()
        .find(|l| l.starts_with("lens watch: stopped"))
        .unwrap_or_else(|| panic!("a last line accounts for every span: {err:?}"));
    assert_eq!(
        account,
        &format!(
            "lens watch: stopped (SIG{signal}): {acknowledged} spans received, {acknowledged} \
saved: {acknowledged} shown, 0 dropped (0 in traces evicted while open, 0 arriving after their \
trace was evicted, 0 over the per-trace limit)"
        )
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigint_drains_every_acknowledged_span_into_save_and_the_output() {
    stopped_by("INT");
}

#[test]
fn sigterm_drains_every_acknowledged_span_into_save_and_the_output() {
    stopped_by("TERM");
}
