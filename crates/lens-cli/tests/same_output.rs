//! The same input gives the same bytes: a saved session (`same_output/session.jsonl`: `lens
//! demo` runs, healthy and with broken hops, and hand-written spans for a hop linked by policy,
//! an error status, a missing parent and non-ASCII names) through `lens check` in every output,
//! and through `lens watch`'s page (the list, each trace's waterfall, the findings), compared
//! with the bytes recorded before lens-watch's pipeline was rebuilt around one session.
//!
//! `LENS_BLESS=1` records them again (only when an output is meant to change).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cli_support;
mod watch_support;

use std::path::{Path, PathBuf};

use cli_support::lens;
use serde_json::Value;
use watch_support::{Watch, http};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/same_output")
}

fn session() -> String {
    dir().join("session.jsonl").to_str().unwrap().to_owned()
}

/// `got` against the recorded file `name` (recorded when `LENS_BLESS` is set).
fn same(name: &str, got: &str) {
    let path = dir().join(name);
    if std::env::var_os("LENS_BLESS").is_some() {
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if got != want {
        let line = got
            .lines()
            .zip(want.lines())
            .position(|(g, w)| g != w)
            .unwrap_or(got.lines().count().min(want.lines().count()));
        panic!(
            "{name}: not the recorded bytes (first difference at line {}):\n got: {:?}\nwant: {:?}",
            line + 1,
            got.lines().nth(line),
            want.lines().nth(line)
        );
    }
}

#[test]
fn lens_check_prints_the_recorded_bytes_in_every_output() {
    let session = session();
    for (name, args) in [
        ("check.txt", vec!["--color", "never"]),
        ("check-colour.txt", vec!["--color", "always"]),
        ("check.jsonl", vec!["--json"]),
        ("check-quiet.jsonl", vec!["--json", "--quiet"]),
        (
            "check-allow.txt",
            vec!["--color", "never", "--allow", "lost-context"],
        ),
        (
            "check-partial.txt",
            vec!["--color", "never", "--max-spans-per-trace", "5"],
        ),
        (
            "check-partial.jsonl",
            vec!["--json", "--max-spans-per-trace", "5"],
        ),
        (
            "check-evicting.txt",
            vec!["--color", "never", "--max-traces", "3"],
        ),
    ] {
        let mut all = vec!["check"];
        all.extend(args);
        all.push(&session);
        let run = lens(&all);
        same(name, &run.stdout);
        same(
            &format!("{name}.stderr"),
            &format!("exit {:?}\n{}", run.code, run.stderr),
        );
    }
}

#[test]
fn the_page_serves_the_recorded_bytes() {
    let text = std::fs::read_to_string(session()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let is_trace = |line: &str| {
        serde_json::from_str::<Value>(line)
            .unwrap()
            .get("spans")
            .is_some()
    };
    let traces = lens(&["check", "--json", &session()])
        .stdout
        .lines()
        .filter(|l| is_trace(l))
        .count();
    // A window wider than the posting takes: each trace completes once.
    let watch = Watch::with(&["--json", "--quiet-for", "2"]);
    for line in &lines {
        let (status, body) = http(&watch.http, "POST", "/v1/traces", Some(line));
        assert!(status.starts_with("HTTP/1.1 200"), "{status} {body}");
    }
    let mut shown = 0;
    while shown < traces {
        let line = watch.next_stdout();
        if serde_json::from_str::<Value>(&line)
            .unwrap()
            .get("spans")
            .is_some()
        {
            shown += 1;
        }
    }
    let (_, list) = http(&watch.http, "GET", "/api/traces", None);
    same("page-list.json", &list);
    let (_, findings) = http(&watch.http, "GET", "/api/findings", None);
    same("page-findings.json", &findings);
    let list: Value = serde_json::from_str(&list).unwrap();
    let mut sections = String::new();
    for trace in list["traces"].as_array().unwrap() {
        let id = trace["trace_id"].as_str().unwrap();
        let (_, section) = http(&watch.http, "GET", &format!("/api/traces/{id}"), None);
        sections.push_str(&section);
        sections.push('\n');
    }
    same("page-traces.html", &sections);
}
