//! `lens demo --html FILE` opened in a real browser: headless Chromium (Debian's `chromium`)
//! loads the page, every span's bar is laid out on it, the console stays silent, and a
//! screenshot is written under target/ for a person to look at.
//!
//! Without Chromium the test is skipped with a note, unless `LENS_BROWSER=require` (set by
//! `.ci/run`), which makes a missing browser a failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod browser_support;
mod demo_support;

use std::path::Path;

use browser_support::{WINDOW_SIZE, browse, chromium, console_messages, tempdir};
use demo_support::{run, stderr};

fn file_url(page: &Path) -> String {
    format!("file://{}", page.display())
}

/// The span ids of `lens demo --json` output.
fn span_ids(json: &[u8]) -> Vec<String> {
    let spans: serde_json::Value = serde_json::from_slice(json).unwrap();
    spans
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["span_id"].as_str().unwrap().to_owned())
        .collect()
}

/// Measures every bar as laid out: appended to a copy of the page, writes `span-id x width
/// height` per bar into a `<pre>`, which `--dump-dom` then shows.
const MEASURE: &str = r#"<script>
const rows = [];
for (const row of document.querySelectorAll("tr[data-span-id]")) {
  const bar = row.querySelector("div.bar");
  const r = bar ? bar.getBoundingClientRect() : { x: -1, width: 0, height: 0 };
  rows.push([row.dataset.spanId, r.x, r.width, r.height].join(" "));
}
const pre = document.createElement("pre");
pre.id = "lens-measured";
pre.textContent = document.documentElement.clientWidth + "\n" + rows.join("\n");
document.body.appendChild(pre);
</script>"#;

#[test]
fn the_html_waterfall_shows_every_span_in_chromium() {
    let Some(chromium) = chromium() else {
        return;
    };
    let work = tempdir(Path::new(env!("CARGO_TARGET_TMPDIR")), "lens-demo-browser");
    let page = work.join("waterfall.html");
    let output = run(&["--json", "--html", page.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let ids = span_ids(&output.stdout);
    assert!(!ids.is_empty());

    // The page as written: every span's row holds its bar, and the console says nothing.
    let shown = browse(&chromium, &work, &file_url(&page), &["--dump-dom"]);
    for id in &ids {
        let row = shown
            .stdout
            .find(&format!("data-span-id=\"{id}\""))
            .unwrap_or_else(|| panic!("no row for span {id}"));
        let end = shown.stdout[row..].find("</tr>").unwrap() + row;
        assert!(
            shown.stdout[row..end].contains("class=\"bar\""),
            "span {id} has no bar: {}",
            &shown.stdout[row..end]
        );
    }
    assert_eq!(console_messages(&shown.stderr), Vec::<&str>::new());

    // Laid out: each bar has a size and lies within the window.
    let html = std::fs::read_to_string(&page).unwrap();
    let measured_page = work.join("measured.html");
    std::fs::write(
        &measured_page,
        html.replace("</body>", &format!("{MEASURE}</body>")),
    )
    .unwrap();
    // A desktop window: the same size as the screenshot.
    let measured = browse(
        &chromium,
        &work,
        &file_url(&measured_page),
        &["--dump-dom", WINDOW_SIZE],
    );
    assert_eq!(console_messages(&measured.stderr), Vec::<&str>::new());
    let start = measured.stdout.find("<pre id=\"lens-measured\">").unwrap();
    let text = &measured.stdout[start + "<pre id=\"lens-measured\">".len()..];
    let text = &text[..text.find("</pre>").unwrap()];
    let mut lines = text.lines();
    let page_width: f64 = lines.next().unwrap().parse().unwrap();
    let mut bars = 0;
    for line in lines {
        let fields: Vec<&str> = line.split(' ').collect();
        let (x, width, height): (f64, f64, f64) = (
            fields[1].parse().unwrap(),
            fields[2].parse().unwrap(),
            fields[3].parse().unwrap(),
        );
        assert!(ids.iter().any(|id| id == fields[0]), "{line}");
        assert!(
            width >= 1.0 && height >= 1.0,
            "bar of span {line} not drawn"
        );
        assert!(
            x >= 0.0 && x + width <= page_width + 0.5,
            "bar off the page: {line}"
        );
        bars += 1;
    }
    assert_eq!(bars, ids.len(), "{text}");

    // For a person to look at.
    let screenshot = work.join("waterfall.png");
    browse(
        &chromium,
        &work,
        &file_url(&page),
        &[
            &format!("--screenshot={}", screenshot.display()),
            WINDOW_SIZE,
            "--hide-scrollbars",
        ],
    );
    let png = std::fs::read(&screenshot).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    eprintln!("screenshot: {}", screenshot.display());
}

#[test]
fn the_console_check_sees_a_page_error() {
    // The check above can fail: a page that logs an error shows up in the console log.
    let Some(chromium) = chromium() else {
        return;
    };
    let work = tempdir(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        "lens-demo-browser-check",
    );
    let page = work.join("broken.html");
    std::fs::write(
        &page,
        "<!DOCTYPE html><html><body><script>missingFunction();</script></body></html>",
    )
    .unwrap();
    let shown = browse(&chromium, &work, &file_url(&page), &["--dump-dom"]);
    let messages = console_messages(&shown.stderr);
    assert_eq!(messages.len(), 1, "{}", shown.stderr);
    assert!(messages[0].contains("missingFunction"), "{messages:?}");
}
