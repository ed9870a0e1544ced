//! `lens watch` stopped by SIGINT (Ctrl-C) or SIGTERM right after exporters were told
//! "success": every span they were acknowledged for is in `--save` and shown, the traces still
//! open are shown cut short, and the last line accounts for every span. Real exporters
//! (opentelemetry-otlp, through `lens demo --otlp`), over OTLP/HTTP and OTLP/gRPC at once.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod watch_support;

use std::path::Path;

use serde_json::Value;
use watch_support::{Watch, demo_requests};

/// Requests per demo: 13 spans each.
const REQUESTS: u64 = 300;

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
    let watch = Watch::with(&[
        "--quiet-for",
        "600",
        "--json",
        "--save",
        save.to_str().unwrap(),
    ]);
    let grpc = format!("http://{}", watch.grpc);
    let over_grpc = std::thread::spawn(move || demo_requests(&grpc, "grpc", REQUESTS));
    let over_http = demo_requests(&format!("http://{}", watch.http), "http/protobuf", REQUESTS);
    let acknowledged = over_http + over_grpc.join().unwrap();
    assert_eq!(acknowledged, 2 * REQUESTS * 13);

    // At once: no waiting for the watch to catch up.
    let stopped = watch.stop(signal);
    assert!(stopped.status.success(), "{}", stopped.status);
    assert_eq!(
        spans_in(&save),
        acknowledged,
        "--save holds every acknowledged span"
    );

    // Every trace shown, whole, marked as cut short by the stop.
    let traces: Vec<Value> = stopped
        .stdout
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(traces.len() as u64, 2 * REQUESTS);
    for trace in &traces {
        assert_eq!(trace["spans"].as_array().unwrap().len(), 13, "{trace}");
        assert_eq!(trace["cut_short"], true);
        assert_eq!(trace["partial"], false);
    }

    let account = stopped
        .stderr
        .iter()
        .find(|l| l.starts_with("lens watch: stopped"))
        .unwrap_or_else(|| panic!("a last line accounts for every span: {:?}", stopped.stderr));
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

/// A second Ctrl-C while the stop is held up (here by a standard output nobody reads) ends the
/// run at once, saying how many accepted spans it left unwritten; the file holds whole lines,
/// and what it holds plus what was left is what was acknowledged.
#[test]
fn a_second_sigint_stops_at_once_and_says_what_it_left() {
    let dir = std::env::temp_dir().join(format!("lens-watch-stop-twice-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let save = dir.join("spans.jsonl");
    let _ = std::fs::remove_file(&save);
    let watch = Watch::with_stdout_unread(&[
        "--quiet-for",
        "600",
        "--json",
        "--save",
        save.to_str().unwrap(),
    ]);
    let acknowledged = demo_requests(&format!("http://{}", watch.http), "http/protobuf", REQUESTS);
    watch.signal("INT");
    let stopping = watch
        .stderr
        .recv_timeout(watch_support::PATIENCE)
        .expect("the first signal is acknowledged");
    assert!(
        stopping.starts_with("lens watch: stopping (SIGINT): saving and showing the "),
        "{stopping}"
    );
    let stopped = watch.stop("INT");
    assert_eq!(stopped.status.code(), Some(130), "{:?}", stopped.stderr);
    let last = stopped.stderr.last().unwrap();
    let left: u64 = last
        .strip_prefix("lens watch: stopped at once (SIGINT again): ")
        .and_then(|rest| rest.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("{last}"));
    assert!(last.contains(" accepted spans left unwritten, "), "{last}");
    assert_eq!(spans_in(&save) + left, acknowledged);
    let _ = std::fs::remove_dir_all(&dir);
}
