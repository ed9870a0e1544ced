//! `lens demo --html FILE` opened in a real browser: headless Chromium (Debian's `chromium`)
//! loads the page, every span's bar is laid out on it, the console stays silent, and a
//! screenshot is written under target/ for a person to look at.
//!
//! Without Chromium the test is skipped with a note, unless `LENS_BROWSER=require` (set by
//! `.ci/run`), which makes a missing browser a failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod demo_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use demo_support::{run, stderr};

/// The browser window the bars are measured in and the screenshot taken of.
const WINDOW_SIZE: &str = "--window-size=1400,900";

/// How long one Chromium run may take before it is killed (a loaded machine, a cold start).
const BROWSER_LIMIT: Duration = Duration::from_secs(120);

/// The Chromium binary, or `None` (after the note or failure `LENS_BROWSER` asks for).
fn chromium() -> Option<PathBuf> {
    let found = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists());
    if found.is_none() {
        let required = std::env::var("LENS_BROWSER").is_ok_and(|v| v == "require");
        assert!(
            !required,
            "LENS_BROWSER=require but Chromium is not installed (Debian: apt-get install chromium)"
        );
        eprintln!(
            "note: skipped: Chromium is not installed (Debian package `chromium`); \
             LENS_BROWSER=require makes this a failure"
        );
    }
    found
}

/// What one headless Chromium run printed.
struct Browser {
    stdout: String,
    stderr: String,
}

/// Runs headless Chromium on `page` with `args` (`--dump-dom`, `--screenshot=...`), in a fresh
/// profile, with the network features that would reach out switched off.
fn browse(chromium: &Path, work: &Path, page: &Path, args: &[&str]) -> Browser {
    let profile = tempdir(work, "profile");
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read both pipes while waiting, so that a full pipe cannot stall the browser.
    let out = child.stdout.take().unwrap();
    let err = child.stderr.take().unwrap();
    let read = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let (out, err) = (read(Box::new(out)), read(Box::new(err)));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > BROWSER_LIMIT {
            let _ = child.kill();
            panic!("Chromium did not finish within {BROWSER_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let browser = Browser {
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    };
    assert!(status.success(), "Chromium failed: {}", browser.stderr);
    let _ = std::fs::remove_dir_all(&profile);
    browser
}

fn tempdir(work: &Path, name: &str) -> PathBuf {
    let dir = work.join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The console messages Chromium logged (`...:CONSOLE:...] "message", source: ...`). The page
/// has no script, so any message is the browser complaining about it.
fn console_messages(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.contains(":CONSOLE")).collect()
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
    let shown = browse(&chromium, &work, &page, &["--dump-dom"]);
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
        &measured_page,
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
        &page,
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
    let shown = browse(&chromium, &work, &page, &["--dump-dom"]);
    let messages = console_messages(&shown.stderr);
    assert_eq!(messages.len(), 1, "{}", shown.stderr);
    assert!(messages[0].contains("missingFunction"), "{messages:?}");
}
