//! Headless Chromium for the page tests (`lens demo --html`, the `lens watch` page).
//!
//! Without Chromium a test is skipped with a note, unless `LENS_BROWSER=require` (set by
//! `.ci/run`), which makes a missing browser a failure.
#![allow(dead_code, unreachable_pub)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The browser window the bars are measured in and the screenshot taken of.
pub const WINDOW_SIZE: &str = "--window-size=1400,900";

/// How long one Chromium run may take before it is killed (a loaded machine, a cold start).
pub const BROWSER_LIMIT: Duration = Duration::from_secs(120);

/// The Chromium binary, or `None` (after the note or failure `LENS_BROWSER` asks for).
pub fn chromium() -> Option<PathBuf> {
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
pub struct Browser {
    pub stdout: String,
    pub stderr: String,
}

/// Runs headless Chromium on `url` (a `file://` page or a local server) with `args`
/// (`--dump-dom`, `--screenshot=...`), in a fresh profile, with the network features that
/// would reach out switched off.
pub fn browse(chromium: &Path, work: &Path, url: &str, args: &[&str]) -> Browser {
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
        .arg(url)
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

/// A screenshot of `url` (in [`WINDOW_SIZE`], after `virtual_time`) written to `work/name`, for
/// a person to look at; its path.
pub fn screenshot(
    chromium: &Path,
    work: &Path,
    url: &str,
    virtual_time: &str,
    name: &str,
) -> PathBuf {
    let file = work.join(name);
    browse(
        chromium,
        work,
        url,
        &[
            &format!("--screenshot={}", file.display()),
            WINDOW_SIZE,
            virtual_time,
            "--hide-scrollbars",
        ],
    );
    let png = std::fs::read(&file).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    eprintln!("screenshot: {}", file.display());
    file
}

pub fn tempdir(work: &Path, name: &str) -> PathBuf {
    let dir = work.join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The console messages Chromium logged (`...:CONSOLE:...] "message", source: ...`): on a
/// page that logs nothing itself, the browser complaining about it.
pub fn console_messages(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.contains(":CONSOLE")).collect()
}
