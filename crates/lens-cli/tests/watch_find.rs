//! Finding on the `lens watch` page: the list's filters (trace id, service, name, attribute,
//! errors, duration), each with a near miss; the spans of a trace that match; the findings
//! marked in the list and on span rows, with a lost hop's other trace one click away; the trace
//! exported as OTLP/JSON and read back by `lens check` and `lens watch --load`. The page parts
//! run in headless Chromium (skipped without it, as in watch_page.rs).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod browser_support;
mod watch_support;

use std::path::Path;
use std::time::Instant;

use browser_support::{browse, chromium, console_messages, screenshot, tempdir};
use serde_json::{Value, json};
use watch_support::{PATIENCE, Watch, demo_broken, demo_into, http, succeed};

/// Headless Chromium runs the page's script for this much virtual time.
const VIRTUAL_TIME: &str = "--virtual-time-budget=4000";

const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1";
const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb2";
const T0: u64 = 1_700_000_000_000_000_000;

/// One OTLP/JSON span of service `shop`; `ms` its start and end in milliseconds after T0.
fn span(trace: &str, id: &str, parent: Option<&str>, name: &str, ms: (u64, u64)) -> Value {
    let mut span = json!({
        "traceId": trace, "spanId": id, "name": name, "kind": 2,
        "startTimeUnixNano": (T0 + ms.0 * 1_000_000).to_string(),
        "endTimeUnixNano": (T0 + ms.1 * 1_000_000).to_string(),
        "attributes": [],
    });
    if let Some(parent) = parent {
        span["parentSpanId"] = parent.into();
        span["kind"] = 3.into();
    }
    span
}

fn attribute(span: &mut Value, key: &str, value: &str) {
    span["attributes"]
        .as_array_mut()
        .unwrap()
        .push(json!({"key": key, "value": {"stringValue": value}}));
}

fn request(spans: Vec<Value>) -> String {
    json!({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "shop"}}]},
        "scopeSpans": [{"scope": {"name": "test"}, "spans": spans}],
    }]})
    .to_string()
}

/// Trace A: `GET /cart` (5 ms) over `db.query` (an error, `db.system=postgresql`,
/// `tenant=acme`). Trace B: `GET /cart` (4 ms) over `cache.get` (`tenant=acme2`).
fn two_traces(watch: &Watch) {
    let mut query = span(
        A,
        "a000000000000002",
        Some("a000000000000001"),
        "db.query",
        (1, 3),
    );
    query["status"] = json!({"code": 2, "message": "timeout"});
    attribute(&mut query, "db.system", "postgresql");
    attribute(&mut query, "tenant", "acme");
    let mut cache = span(
        B,
        "b000000000000002",
        Some("b000000000000001"),
        "cache.get",
        (1, 2),
    );
    attribute(&mut cache, "tenant", "acme2");
    for spans in [
        vec![
            span(A, "a000000000000001", None, "GET /cart", (0, 5)),
            query,
        ],
        vec![
            span(B, "b000000000000001", None, "GET /cart", (0, 4)),
            cache,
        ],
    ] {
        let (status, body) = http(&watch.http, "POST", "/v1/traces", Some(&request(spans)));
        assert!(status.starts_with("HTTP/1.1 200"), "{status} {body}");
    }
    watch.next_stdout();
    watch.next_stdout();
}

/// The status line and the JSON body of `GET path`.
fn get(watch: &Watch, path: &str) -> (String, Value) {
    let (status, body) = http(&watch.http, "GET", path, None);
    let json = serde_json::from_str(&body).unwrap_or(Value::String(body));
    (status, json)
}

/// The trace ids `GET /api/traces?query` lists, sorted.
fn listed(watch: &Watch, query: &str) -> Vec<String> {
    let (status, list) = get(watch, &format!("/api/traces?{query}"));
    assert!(
        status.starts_with("HTTP/1.1 200"),
        "{query}: {status} {list}"
    );
    let mut ids: Vec<String> = list["traces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["trace_id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    assert_eq!(list["matching"], ids.len(), "{query}");
    ids
}

#[test]
fn each_filter_of_the_list_lets_its_trace_through_and_not_the_near_miss() {
    let watch = Watch::start(&["--json"]);
    two_traces(&watch);
    // Each filter, and its near miss.
    let uppercase = format!("trace_id={}", A.to_uppercase());
    let absent = format!("trace_id={}", "a".repeat(32));
    let cases: [(&str, &[&str]); 24] = [
        ("", &[A, B]),
        (&format!("trace_id={A}"), &[A]),
        (&uppercase, &[A]),
        (&absent, &[]),
        ("service=shop", &[A, B]),
        ("service=sho", &[]),
        ("name=QUERY", &[A]),
        ("name=querx", &[]),
        ("attr=tenant%3Dacme", &[A]),
        ("attr=tenant%3Dacme2", &[B]),
        ("attr=tenant%3Dacm", &[]),
        ("attr=db.system", &[A]),
        ("attr=db.syste", &[]),
        ("attr=tenant", &[A, B]),
        ("attr=service.name%3Dshop", &[A, B]),
        ("errors=1", &[A]),
        ("errors=", &[A, B]),
        ("min_ms=5", &[A]),
        ("min_ms=5.000001", &[]),
        ("min_ms=4", &[A, B]),
        // Conditions combine with AND.
        ("min_ms=4&attr=tenant%3Dacme2", &[B]),
        ("errors=1&attr=tenant%3Dacme2", &[]),
        ("errors=1&name=cache", &[]),
        ("name=cache&attr=tenant", &[B]),
    ];
    for (query, want) in cases {
        assert_eq!(listed(&watch, query), want, "{query}");
    }
    for bad in ["trace_id=a1", "min_ms=x", "min_ms=-1"] {
        let (status, body) = get(&watch, &format!("/api/traces?{bad}"));
        assert!(status.starts_with("HTTP/1.1 400"), "{bad}: {status} {body}");
    }
    // No finding on either trace.
    let (_, list) = get(&watch, "/api/traces");
    assert!(list["traces"][0]["findings"].is_null(), "{list}");

    // Which spans of a trace match.
    let spans = |query: &str| {
        let (status, found) = get(&watch, &format!("/api/traces/{A}/matches?{query}"));
        assert!(status.starts_with("HTTP/1.1 200"), "{query}: {status}");
        found["span_ids"].clone()
    };
    assert_eq!(spans(""), json!(["a000000000000001", "a000000000000002"]));
    assert_eq!(spans("attr=tenant%3Dacme"), json!(["a000000000000002"]));
    assert_eq!(spans("attr=tenant%3Dacme2"), json!([]));
    assert_eq!(
        spans("min_ms=2"),
        json!(["a000000000000001", "a000000000000002"])
    );
    assert_eq!(spans("min_ms=2.1"), json!(["a000000000000001"]));
    assert_eq!(spans("errors=1&name=cart"), json!([]));
    let (status, _) = get(&watch, &format!("/api/traces/{}/matches", "1".repeat(32)));
    assert!(status.starts_with("HTTP/1.1 404"), "{status}");
    let (status, _) = get(&watch, "/api/traces/xyz/matches");
    assert!(status.starts_with("HTTP/1.1 400"), "{status}");
}

#[tokio::test]
async fn an_exported_trace_reads_back_with_lens_check_and_watch_load() {
    let watch = Watch::start(&["--json"]);
    let id = demo_into(&format!("http://{}", watch.http), "http/protobuf");
    let shown: Value = serde_json::from_str(&watch.next_stdout()).unwrap();
    let span_ids = |trace: &Value| -> Vec<String> {
        let mut ids: Vec<String> = trace["spans"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["span_id"].as_str().unwrap().to_owned())
            .collect();
        ids.sort();
        ids
    };

    let answer = reqwest::get(format!("http://{}/api/traces/{id}/otlp", watch.http))
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(
        answer.headers()["content-disposition"],
        format!("attachment; filename=\"lens-trace-{id}.json\"").as_str()
    );
    let body = answer.text().await.unwrap();
    assert!(body.starts_with("{\"resourceSpans\":["), "{body}");
    assert_eq!(body.lines().count(), 1, "one line");
    let missing = reqwest::get(format!(
        "http://{}/api/traces/{}/otlp",
        watch.http,
        "1".repeat(32)
    ))
    .await
    .unwrap();
    assert_eq!(missing.status(), 404);

    let work = tempdir(Path::new(env!("CARGO_TARGET_TMPDIR")), "lens-watch-export");
    let file = work.join(format!("lens-trace-{id}.json"));
    std::fs::write(&file, &body).unwrap();
    let file = file.to_str().unwrap();
    let check = succeed(&["check", "--json", file]);
    let traces: Vec<Value> = String::from_utf8_lossy(&check.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l.get("spans").is_some())
        .collect();
    assert_eq!(traces.len(), 1, "{traces:?}");
    assert_eq!(traces[0]["trace_id"], id.as_str());
    assert_eq!(span_ids(&traces[0]), span_ids(&shown));
    assert_eq!(traces[0]["services"], shown["services"]);

    let loaded = Watch::start(&["--json", "--load", file]);
    let list: Value = reqwest::get(format!("http://{}/api/traces", loaded.http))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["matching"], 1, "{list}");
    assert_eq!(list["traces"][0]["trace_id"], id.as_str());
    assert_eq!(list["traces"][0]["spans"], 13);
}

/// The `<tr ...>...</tr>` of span `span` in a dumped DOM.
fn row<'a>(dom: &'a str, span: &str) -> &'a str {
    let at = dom
        .find(&format!("data-span-id=\"{span}\""))
        .unwrap_or_else(|| panic!("no row for span {span}: {dom}"));
    let start = dom[..at].rfind("<tr").unwrap();
    let end = at + dom[at..].find("</tr>").unwrap();
    &dom[start..end]
}

/// The class attribute of a row.
fn classes(row: &str) -> Vec<&str> {
    let class = row.split("class=\"").nth(1).unwrap();
    class[..class.find('"').unwrap()].split(' ').collect()
}

/// The `<li ...>...</li>` of trace `id` in the list of a dumped DOM.
fn item<'a>(dom: &'a str, id: &str) -> &'a str {
    let at = dom
        .find(&format!("<li data-trace-id=\"{id}\""))
        .unwrap_or_else(|| panic!("trace {id} is not listed: {dom}"));
    &dom[at..at + dom[at..].find("</li>").unwrap()]
}

#[test]
fn the_address_restores_the_filters_and_the_matching_spans_are_highlighted_in_chromium() {
    let Some(chromium) = chromium() else {
        return;
    };
    let watch = Watch::start(&["--json"]);
    let first = demo_into(&format!("http://{}", watch.http), "http/protobuf");
    let trace: Value = serde_json::from_str(&watch.next_stdout()).unwrap();
    let second = demo_into(&format!("http://{}", watch.http), "http/protobuf");
    watch.next_stdout();

    let work = tempdir(Path::new(env!("CARGO_TARGET_TMPDIR")), "lens-watch-find");
    // The search narrows the list: both traces without it, the first alone with its id.
    let all = browse(
        &chromium,
        &work,
        &format!("http://{}/", watch.http),
        &["--dump-dom", VIRTUAL_TIME],
    );
    item(&all.stdout, &first);
    item(&all.stdout, &second);
    let url = format!(
        "http://{}/#trace={first}&trace_id={first}&name=pp_stage&collapse=1",
        watch.http
    );
    let shown = browse(&chromium, &work, &url, &["--dump-dom", VIRTUAL_TIME]);
    let dom = &shown.stdout;
    item(dom, &first);
    assert!(
        !dom.contains(&second),
        "the second trace is not listed: {dom}"
    );
    let mut matched = 0;
    for span in trace["spans"].as_array().unwrap() {
        let name = span["name"].as_str().unwrap();
        let classes = classes(row(dom, span["span_id"].as_str().unwrap()));
        if name.starts_with("pp_stage") {
            matched += 1;
            assert!(classes.contains(&"match"), "{name}: {classes:?}");
        } else {
            assert!(!classes.contains(&"match"), "{name}: {classes:?}");
            // An ancestor of a match stays (as context); the others fold.
            let context = ["demo request", "train_step"].contains(&name)
                || name.starts_with("POST")
                || name == "lens.demo.Trainer/Step";
            assert_eq!(
                (classes.contains(&"context"), classes.contains(&"folded")),
                (context, !context),
                "{name}: {classes:?}"
            );
        }
    }
    assert_eq!(matched, 4);
    assert!(dom.contains("4 of 13 spans match"), "{dom}");
    // The address keeps the view: the link to it, and the export of the trace.
    assert!(
        dom.contains(&format!(
            "id=\"link\" href=\"http://{}/#trace={first}&amp;trace_id={first}&amp;name=pp_stage&amp;collapse=1\"",
            watch.http
        )),
        "{dom}"
    );
    assert!(
        dom.contains(&format!("href=\"/api/traces/{first}/otlp\"")),
        "{dom}"
    );
    assert_eq!(console_messages(&shown.stderr), Vec::<&str>::new());

    // For a person to look at (docs/watch.md shows it).
    screenshot(&chromium, &work, &url, VIRTUAL_TIME, "watch-find.png");
}

#[test]
fn a_lost_hop_is_marked_in_the_list_and_its_other_trace_is_one_click_away_in_chromium() {
    let Some(chromium) = chromium() else {
        return;
    };
    let watch = Watch::start(&[]);
    demo_broken(&watch.http);
    // The finding comes once both traces are complete.
    let deadline = Instant::now() + PATIENCE;
    let lost = loop {
        let (_, found) = get(&watch, "/api/findings");
        if let Some(f) = found
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["finding"] == "lost-context")
        {
            break f.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no lost-context finding: {found}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let text = |v: &Value| v.as_str().unwrap().to_owned();
    let (client_trace, new_trace) = (text(&lost["trace_ids"][0]), text(&lost["trace_ids"][1]));
    let (client_span, new_root) = (text(&lost["span_ids"][0]), text(&lost["span_ids"][1]));
    let (_, list) = get(&watch, "/api/traces");
    for id in [&client_trace, &new_trace] {
        let listed = list["traces"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["trace_id"] == id.as_str())
            .unwrap();
        assert_eq!(listed["findings"], "error", "{listed}");
    }
    assert_eq!(
        listed(&watch, "service=planner"),
        std::slice::from_ref(&new_trace)
    );

    let work = tempdir(Path::new(env!("CARGO_TARGET_TMPDIR")), "lens-watch-lost");
    for (from, span, to) in [
        (&client_trace, &client_span, &new_trace),
        (&new_trace, &new_root, &client_trace),
    ] {
        let url = format!("http://{}/#trace={from}", watch.http);
        let shown = browse(&chromium, &work, &url, &["--dump-dom", VIRTUAL_TIME]);
        let dom = &shown.stdout;
        assert!(
            item(dom, from).contains("class=\"badge finding error\""),
            "the badge in the list: {dom}"
        );
        let row = row(dom, span);
        assert!(classes(row).contains(&"finding"), "{row}");
        assert!(row.contains("error[lost-context]"), "{row}");
        assert!(
            row.contains(&format!("<a class=\"jump\" href=\"#trace={to}\"")),
            "one click to the other trace: {row}"
        );
        assert_eq!(console_messages(&shown.stderr), Vec::<&str>::new());
    }
}
