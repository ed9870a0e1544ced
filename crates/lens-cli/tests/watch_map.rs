//! The service map of `lens watch`: `GET /api/map` (services, hops with their figures, the
//! doctor's findings on their hop) and the page's "Service map" tab, a lost hop drawn red with
//! its finding and traces one click away, in headless Chromium (skipped without it, as in
//! watch_page.rs).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod browser_support;
mod watch_support;

use std::path::Path;
use std::time::{Duration, Instant};

use browser_support::{browse, chromium, console_messages, screenshot, tempdir};
use serde_json::Value;
use watch_support::{PATIENCE, Watch, demo_broken, demo_requests, http};

/// Headless Chromium runs the page's script for this much virtual time.
const VIRTUAL_TIME: &str = "--virtual-time-budget=4000";

/// `lens demo --break gateway->planner` into `watch`, then the map once the doctor's
/// `lost-context` finding is on it.
fn break_the_demo(watch: &Watch) -> Value {
    demo_broken(&watch.http);
    let deadline = Instant::now() + PATIENCE;
    loop {
        let (status, body) = http(&watch.http, "GET", "/api/map", None);
        assert!(status.starts_with("HTTP/1.1 200"), "{status} {body}");
        let map: Value = serde_json::from_str(&body).unwrap();
        if edge(&map, "gateway", "planner").is_some_and(|e| e["lost"] == true) {
            return map;
        }
        assert!(Instant::now() < deadline, "no lost hop on the map: {map}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The demo's services that the map must show.
const SERVICES: [&str; 5] = [
    "lens-demo",
    "gateway",
    "planner",
    "trainer",
    "rollout-worker",
];

fn edge<'m>(map: &'m Value, from: &str, to: &str) -> Option<&'m Value> {
    map["edges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["from"] == from && e["to"] == to)
}

#[test]
fn the_map_api_has_the_hops_with_their_figures_and_the_lost_one() {
    let watch = Watch::start(&[]);
    let map = break_the_demo(&watch);
    let services: Vec<&str> = map["services"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["service"].as_str().unwrap())
        .collect();
    for service in SERVICES {
        assert!(services.contains(&service), "{service}: {map}");
    }
    // The demo's hops that kept their context: one request each, with a duration.
    for (from, to) in [("lens-demo", "gateway"), ("planner", "trainer")] {
        let e = edge(&map, from, to).unwrap_or_else(|| panic!("{from} → {to}: {map}"));
        assert_eq!(
            (e["requests"].as_u64(), e["errors"].as_u64()),
            (Some(1), Some(0))
        );
        assert!(e["median_ns"].as_u64().unwrap() > 0, "{e}");
        assert_eq!(e["lost"], false);
    }
    // The lost hop: no span links gateway to planner, the finding does.
    let lost = edge(&map, "gateway", "planner").unwrap();
    assert_eq!(lost["requests"], 0);
    assert_eq!(lost["severity"], "error");
    let finding = &lost["findings"][0];
    assert_eq!(finding["finding"], "lost-context");
    assert_eq!(
        finding["services"],
        serde_json::json!(["gateway", "planner"])
    );
    assert_eq!(finding["trace_ids"].as_array().unwrap().len(), 2);
    // The layers follow the calls: each caller left of what it calls.
    let layer = |name: &str| {
        map["services"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["service"] == name)
            .unwrap()["layer"]
            .as_u64()
            .unwrap()
    };
    assert!(layer("lens-demo") < layer("gateway"));
    assert!(layer("gateway") < layer("planner"));
    assert!(layer("planner") < layer("trainer"));
    let svg = map["svg"].as_str().unwrap();
    assert!(
        svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""),
        "{svg}"
    );
    assert!(
        svg.contains("<g class=\"edge error lost\" data-from=\"gateway\" data-to=\"planner\">"),
        "{svg}"
    );
    assert_eq!(map["more_services"], 0);
    assert_eq!(map["more_edges"], 0);
}

/// The element of `dom` that starts with `start`, up to its end tag `end`.
fn element<'a>(dom: &'a str, start: &str, end: &str) -> &'a str {
    let at = dom
        .find(start)
        .unwrap_or_else(|| panic!("no {start} in {dom}"));
    let rest = &dom[at..];
    &rest[..rest.find(end).map_or(rest.len(), |e| e + end.len())]
}

#[test]
fn the_map_tab_draws_the_lost_hop_red_with_its_finding_one_click_away_in_chromium() {
    let Some(chromium) = chromium() else {
        return;
    };
    let watch = Watch::start(&[]);
    // Traffic that keeps its context, then the broken hop.
    let url = format!("http://{}", watch.http);
    assert!(demo_requests(&url, "http/protobuf", 12) > 0);
    let map = break_the_demo(&watch);
    let lost = edge(&map, "gateway", "planner").unwrap();
    let traces: Vec<&str> = lost["findings"][0]["trace_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(lost["requests"].as_u64().unwrap() >= 12, "{lost}");

    let work = tempdir(Path::new(env!("CARGO_TARGET_TMPDIR")), "lens-watch-map");
    let page = format!("{url}/#view=map&from=gateway&to=planner");
    let shown = browse(&chromium, &work, &page, &["--dump-dom", VIRTUAL_TIME]);
    let dom = &shown.stdout;
    assert!(
        element(dom, "<div id=\"layout\"", ">").contains("hidden"),
        "the list is hidden"
    );
    let svg = element(dom, "<svg", "</svg>");
    assert!(svg.contains("class=\"service-map\""), "{svg}");
    for service in SERVICES {
        assert!(
            svg.contains(&format!("<g class=\"node\" data-service=\"{service}\"")),
            "{service}: {svg}"
        );
    }
    // The lost hop, red, chosen by the address (as a click on it chooses it).
    let red = element(
        svg,
        "<g class=\"edge error lost chosen\" data-from=\"gateway\" data-to=\"planner\">",
        "</g>",
    );
    assert!(red.contains("stroke=\"#c0392b\""), "{red}");
    let plain = element(svg, "data-from=\"planner\" data-to=\"trainer\"", "</g>");
    assert!(!plain.contains("#c0392b"), "{plain}");
    // Its finding, and both its traces one click away.
    let panel = element(dom, "<div id=\"map-edge\"", "</div></div>");
    assert!(panel.contains("gateway → planner"), "{panel}");
    assert!(panel.contains("data-finding=\"lost-context\""), "{panel}");
    for id in &traces {
        assert!(
            panel.contains(&format!("href=\"#trace={id}\"")),
            "{id}: {panel}"
        );
    }
    let table = element(dom, "<table id=\"map-edges\"", "</table>");
    assert!(
        table.contains("<tr data-from=\"gateway\" data-to=\"planner\" class=\"lost chosen\">"),
        "{table}"
    );
    assert_eq!(console_messages(&shown.stderr), Vec::<&str>::new());

    // One of the links opens the trace in the list's tab.
    let opened = browse(
        &chromium,
        &work,
        &format!("{url}/#trace={}", traces[1]),
        &["--dump-dom", VIRTUAL_TIME],
    );
    assert!(element(&opened.stdout, "<div id=\"map-view\"", ">").contains("hidden"));
    assert!(
        opened
            .stdout
            .contains(&format!("data-trace-id=\"{}\"", traces[1])),
        "the trace is shown"
    );

    // For a person to look at (docs/watch.md shows it).
    screenshot(&chromium, &work, &page, VIRTUAL_TIME, "watch-map.png");
}
