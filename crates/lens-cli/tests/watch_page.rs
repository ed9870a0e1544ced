//! The `lens watch` page in a real browser: a trace sent by `lens demo --otlp` is listed, its
//! waterfall shows every span's bar, the filters answer, the console stays silent, and a
//! screenshot is written under target/ for a person to look at.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod browser_support;
mod watch_support;

use std::path::Path;

use browser_support::{browse, chromium, console_messages, screenshot, tempdir};
use serde_json::Value;
use watch_support::{Watch, demo_into};

/// Headless Chromium runs the page's script for this much virtual time: the list is fetched,
/// the linked trace shown, and the page refreshed.
const VIRTUAL_TIME: &str = "--virtual-time-budget=4000";

#[test]
fn the_live_page_lists_the_trace_and_shows_every_bar_in_chromium() {
    let Some(chromium) = chromium() else {
        return;
    };
    let watch = Watch::start(&["--json"]);
    let id = demo_into(&format!("http://{}", watch.http), "http/protobuf");
    let trace: Value = serde_json::from_str(&watch.next_stdout()).unwrap();
    let span_ids: Vec<&str> = trace["spans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["span_id"].as_str().unwrap())
        .collect();
    assert_eq!(span_ids.len(), 13);

    let work = tempdir(Path::new(env!("CARGO_TARGET_TMPDIR")), "lens-watch-browser");
    let url = format!("http://{}/#trace={id}", watch.http);
    let shown = browse(&chromium, &work, &url, &["--dump-dom", VIRTUAL_TIME]);
    let dom = &shown.stdout;
    assert!(
        dom.contains(&format!("data-trace-id=\"{id}\"")),
        "the trace is listed: {dom}"
    );
    for span in &span_ids {
        let row = dom
            .find(&format!("data-span-id=\"{span}\""))
            .unwrap_or_else(|| panic!("no row for span {span}: {dom}"));
        let end = dom[row..].find("</tr>").unwrap() + row;
        assert!(
            dom[row..end].contains("class=\"bar\""),
            "span {span} has no bar"
        );
    }
    assert!(
        dom.contains("13 spans received"),
        "the status line is shown"
    );
    assert_eq!(console_messages(&shown.stderr), Vec::<&str>::new());

    // For a person to look at (docs/watch.md shows it).
    screenshot(&chromium, &work, &url, VIRTUAL_TIME, "watch.png");
}

#[test]
fn a_partial_trace_is_marked_in_the_list_and_its_waterfall_in_chromium() {
    let Some(chromium) = chromium() else {
        return;
    };
    // 13 spans sent, 5 kept: the trace is partial.
    let watch = Watch::start(&["--json", "--max-spans-per-trace", "5"]);
    let id = demo_into(&format!("http://{}", watch.http), "http/protobuf");
    let trace: Value = serde_json::from_str(&watch.next_stdout()).unwrap();
    assert_eq!(trace["partial"], true);
    assert_eq!(trace["lost_spans"], 8);
    assert_eq!(trace["spans"].as_array().unwrap().len(), 5);

    let work = tempdir(Path::new(env!("CARGO_TARGET_TMPDIR")), "lens-watch-partial");
    let url = format!("http://{}/#trace={id}", watch.http);
    let shown = browse(&chromium, &work, &url, &["--dump-dom", VIRTUAL_TIME]);
    let dom = &shown.stdout;
    let listed = dom
        .find(&format!("data-trace-id=\"{id}\""))
        .unwrap_or_else(|| panic!("the trace is listed: {dom}"));
    let item = &dom[listed..listed + dom[listed..].find("</li>").unwrap()];
    assert!(
        item.contains(">partial</span>"),
        "marked in the list: {item}"
    );
    assert!(
        dom.contains("5 spans, PARTIAL (8 more spans dropped over the per-trace limit"),
        "marked in its waterfall: {dom}"
    );
    assert_eq!(console_messages(&shown.stderr), Vec::<&str>::new());
}

#[tokio::test]
async fn the_list_filters_by_service_and_name_and_sorts_by_duration() {
    let watch = Watch::start(&["--json"]);
    let first = demo_into(&format!("http://{}", watch.http), "http/protobuf");
    watch.next_stdout();
    let second = demo_into(&format!("http://{}", watch.http), "http/protobuf");
    watch.next_stdout();
    let get = |query: &str| {
        let url = format!("http://{}/api/traces?{query}", watch.http);
        async move {
            reqwest::get(url)
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        }
    };
    let ids = |list: &Value| -> Vec<String> {
        list["traces"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["trace_id"].as_str().unwrap().to_owned())
            .collect()
    };
    // Newest first.
    let all = get("").await;
    assert_eq!(ids(&all), [second.clone(), first.clone()]);
    assert!(
        all["services"]
            .as_array()
            .unwrap()
            .contains(&Value::from("trainer-rank-2"))
    );
    assert_eq!(all["traces"][0]["name"], "demo request");
    assert_eq!(all["traces"][0]["spans"], 13);
    assert_eq!(ids(&get("service=trainer").await).len(), 2);
    assert_eq!(ids(&get("service=nobody").await).len(), 0);
    assert_eq!(ids(&get("name=PP_STAGE").await).len(), 2);
    assert_eq!(ids(&get("name=no+such+span").await).len(), 0);
    let by_duration = get("sort=duration").await;
    let durations: Vec<u64> = by_duration["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["duration_ns"].as_u64().unwrap())
        .collect();
    assert!(durations[0] >= durations[1], "{durations:?}");
    // One trace's waterfall, and the answers for ids that are not there.
    let fragment = reqwest::get(format!("http://{}/api/traces/{first}", watch.http))
        .await
        .unwrap();
    assert_eq!(fragment.status(), 200);
    let fragment = fragment.text().await.unwrap();
    assert_eq!(fragment.matches("<tr class=\"span").count(), 13);
    let missing = reqwest::get(format!(
        "http://{}/api/traces/{}",
        watch.http,
        "1".repeat(32)
    ))
    .await
    .unwrap();
    assert_eq!(missing.status(), 404);
    let bad = reqwest::get(format!("http://{}/api/traces/xyz", watch.http))
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
}
