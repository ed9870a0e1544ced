//! OTLP/JSON from a real sender no one here wrote: the OpenTelemetry JS SDK's
//! `@opentelemetry/exporter-trace-otlp-http` (tests/otlp-js, installed pinned by `.ci/run` with
//! `npm ci --prefix tests/otlp-js`) exporting to `lens watch --json`.
//!
//! Without node or the installed packages the test is skipped with a note, unless
//! `LENS_JS=require` (set by `.ci/run`), which makes that a failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod watch_support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use watch_support::Watch;

/// tests/otlp-js with its packages installed, or `None` (after the note or failure `LENS_JS`
/// asks for).
fn sender() -> Option<&'static Path> {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/otlp-js"));
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let installed = dir
        .join("node_modules/@opentelemetry/exporter-trace-otlp-http")
        .is_dir();
    if node && installed {
        return Some(dir);
    }
    let required = std::env::var("LENS_JS").is_ok_and(|v| v == "require");
    assert!(
        !required,
        "LENS_JS=require but node or tests/otlp-js/node_modules is missing (npm ci --prefix tests/otlp-js)"
    );
    eprintln!(
        "note: skipped: node or tests/otlp-js/node_modules is missing (npm ci --prefix tests/otlp-js); LENS_JS=require makes this a failure"
    );
    None
}

#[test]
fn the_js_sdk_otlp_json_exporter_lands_in_watch() {
    let Some(dir) = sender() else {
        return;
    };
    let watch = Watch::start(&["--json"]);
    let output = Command::new("node")
        .arg(dir.join("send.mjs"))
        .arg(format!("http://{}/v1/traces", watch.http))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let sent: Value = serde_json::from_slice(&output.stdout).unwrap();

    let traces: Vec<Value> = (0..2)
        .map(|_| serde_json::from_str(&watch.next_stdout()).unwrap())
        .collect();
    let checkout = traces
        .iter()
        .find(|t| t["trace_id"] == sent["trace_id"])
        .expect("the checkout trace");
    let job = traces
        .iter()
        .find(|t| t["trace_id"] == sent["job_trace_id"])
        .expect("the job trace");

    assert_eq!(checkout["services"], serde_json::json!(["js-frontend"]));
    let spans = checkout["spans"].as_array().unwrap();
    assert_eq!(spans.len(), 2);
    let (root, child) = (&spans[0], &spans[1]);
    assert_eq!(
        (&root["span_id"], &root["kind"], &root["name"]),
        (&sent["root"], &"SERVER".into(), &"GET /checkout".into())
    );
    assert!(root["parent_span_id"].is_null());
    // Every attribute type as the JS exporter encodes it in JSON.
    assert_eq!(root["attributes"]["http.response.status_code"], 200);
    assert_eq!(root["attributes"]["ratio"], 0.5);
    assert_eq!(root["attributes"]["cached"], false);
    assert_eq!(root["attributes"]["tags"], serde_json::json!(["a", "b"]));
    assert_eq!(root["scope"], "lens-otlp-js");
    assert_eq!(child["span_id"], sent["child"]);
    assert_eq!(child["parent_span_id"], sent["root"]);
    assert_eq!(child["kind"], "CLIENT");
    assert_eq!(
        (&child["status"], &child["status_message"]),
        (&"ERROR".into(), &"timeout".into())
    );
    assert_eq!(child["events"][0]["name"], "rows");
    assert_eq!(child["events"][0]["attributes"]["count"], 3);
    assert!(
        child["start_unix_nano"].as_u64().unwrap() >= root["start_unix_nano"].as_u64().unwrap()
    );

    let job_span = &job["spans"][0];
    assert_eq!(job_span["kind"], "CONSUMER");
    assert_eq!(job_span["links"][0]["trace_id"], sent["trace_id"]);
    assert_eq!(job_span["links"][0]["span_id"], sent["root"]);
}
