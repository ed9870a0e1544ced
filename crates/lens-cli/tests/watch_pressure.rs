//! `lens watch` under memory pressure, as a new user met it: four `lens demo --requests 1000
//! --otlp` at once into one `lens watch --json --max-traces N` far below the 4,000 traces in
//! flight (each demo service exports the spans of all its requests in one batch, so every trace
//! is open at once). Every trace printed has its 13 spans or is marked partial (never a fragment
//! shown as a whole trace), every span received is accounted for once (shown or dropped, by
//! reason), each trace is counted once, and the doctor finds nothing.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod watch_support;

use std::collections::HashMap;

use serde_json::Value;
use watch_support::{Watch, demo_requests};

const DEMOS: u64 = 4;
const REQUESTS: u64 = 1000;

/// The number before `what` in `line` ("12 traces evicted" → 12).
fn count(line: &str, what: &str) -> u64 {
    let before = line
        .split(what)
        .next()
        .unwrap_or_else(|| panic!("{what:?} in {line}"));
    before
        .rsplit([' ', '('])
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a count before {what:?} in {line}"))
}

fn pressure(max_traces: u64) {
    let watch = Watch::with(&[
        "--quiet-for",
        "5",
        "--json",
        "--max-traces",
        &max_traces.to_string(),
    ]);
    let demos: Vec<_> = (0..DEMOS)
        .map(|_| {
            let url = format!("http://{}", watch.http);
            std::thread::spawn(move || demo_requests(&url, "http/protobuf", REQUESTS))
        })
        .collect();
    let sent: u64 = demos.into_iter().map(|d| d.join().unwrap()).sum();
    assert_eq!(sent, DEMOS * REQUESTS * 13);
    let stopped = watch.stop("INT");
    assert!(stopped.status.success(), "{}", stopped.status);

    let mut shown: HashMap<String, u64> = HashMap::new();
    for line in &stopped.stdout {
        let object: Value = serde_json::from_str(line).unwrap();
        assert!(object.get("finding").is_none(), "no finding: {line}");
        let spans = object["spans"].as_array().unwrap().len() as u64;
        assert!(
            spans == 13 || object["partial"] == true,
            "--max-traces {max_traces}: a trace of {spans} of its 13 spans, not marked partial"
        );
        let id = object["trace_id"].as_str().unwrap().to_owned();
        let most = shown.entry(id).or_default();
        *most = (*most).max(spans);
    }
    let err = &stopped.stderr;
    let status = err
        .iter()
        .rev()
        .find(|l| l.contains("findings ("))
        .unwrap_or_else(|| panic!("a final status line: {err:?}"));
    assert!(status.contains("; 0 findings ("), "{status}");
    let account = err
        .iter()
        .find(|l| l.starts_with("lens watch: stopped (SIGINT): "))
        .unwrap_or_else(|| panic!("a final account: {err:?}"));
    // received = shown + dropped by reason, and shown is what was printed.
    let received = count(account, " spans received");
    let printed: u64 = shown.values().sum();
    assert_eq!(received, sent, "{account}");
    assert_eq!(count(account, " shown"), printed, "{account}");
    let dropped = count(account, " dropped (");
    assert_eq!(printed + dropped, received, "{account}");
    assert_eq!(
        dropped,
        count(account, " in traces evicted while open")
            + count(account, " arriving after their trace was evicted")
            + count(account, " over the per-trace limit"),
        "{account}"
    );
    // Each trace counted once: shown, or evicted while open (never created again).
    let evicted_open = if status.contains(" of them open") {
        count(status, " of them open")
    } else {
        0
    };
    assert_eq!(
        shown.len() as u64 + evicted_open,
        DEMOS * REQUESTS,
        "{status}"
    );
    assert!(shown.len() as u64 <= max_traces, "{status}");
    // The user was told once, with the remedy.
    let warnings = err
        .iter()
        .filter(|l| l.contains("evicting traces that are still open"))
        .count();
    assert_eq!(warnings, 1, "{err:?}");
}

#[test]
fn four_demos_into_max_traces_1000() {
    pressure(1000);
}

#[test]
fn four_demos_into_max_traces_200() {
    pressure(200);
}
