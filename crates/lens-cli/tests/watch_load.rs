//! `lens watch --load FILE...` and `lens check FILE...`, one reader: OTLP/JSON lines as `lens
//! watch --save` and the Collector's file exporter write them, plain, gzip or zstd (told by
//! their first bytes), the Collector's length-prefixed zstd records; a file read up to a bad or
//! cut line with one warning; and `--save F --load F` across restarts, every span once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cli_support;
mod watch_support;

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use cli_support::{assert_usage_error, lens};
use serde_json::Value;
use watch_support::{Watch, demo_into};

/// One request a line: two traces, `svc` (healthy) and `api` (an error span).
fn request(trace: &str, span: &str, service: &str, status: u8) -> String {
    format!(
        r#"{{"resourceSpans":[{{"resource":{{"attributes":[{{"key":"service.name","value":{{"stringValue":"{service}"}}}}]}},"scopeSpans":[{{"spans":[{{"traceId":"{trace}","spanId":"{span}","name":"GET /","kind":2,"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000001000000","status":{{"code":{status}}}}}]}}]}}]}}"#
    )
}

const SVC_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const API_TRACE: &str = "5bf92f3577b34da6a3ce929d0e0e4736";

fn lines() -> Vec<String> {
    vec![
        request(SVC_TRACE, "00f067aa0ba902b7", "svc", 1),
        request(API_TRACE, "00f067aa0ba902b8", "api", 2),
    ]
}

/// A fresh directory for one test.
fn dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lens-load-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// One record of the Collector's file exporter with `compression: zstd`: the request compressed
/// on its own, after its length (4 bytes, big-endian).
fn record(request: &str) -> Vec<u8> {
    let frame = zstd::encode_all(request.as_bytes(), 3).unwrap();
    let mut record = (frame.len() as u32).to_be_bytes().to_vec();
    record.extend(frame);
    record
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn check_reads_gzip_zstd_and_the_collectors_zstd_records_by_their_first_bytes() {
    let dir = dir("formats");
    let text = lines().iter().map(|l| format!("{l}\n")).collect::<String>();
    let plain = dir.join("spans.jsonl");
    std::fs::write(&plain, &text).unwrap();
    let expected = lens(&["check", "--json", path(&plain)]);
    assert_eq!(expected.code, Some(0), "{}", expected.stderr);
    assert_eq!(expected.stdout.lines().count(), 2, "{}", expected.stdout);

    let lines = lines();
    // Names that do not say how the bytes are compressed: the first bytes do.
    let gz = dir.join("a.jsonl");
    std::fs::write(&gz, gzip(text.as_bytes())).unwrap();
    // Two gzip members, one after the other (`cat a.gz b.gz`), are one stream.
    let members = dir.join("b.jsonl.gz");
    let mut two = gzip(format!("{}\n", lines[0]).as_bytes());
    two.extend(gzip(format!("{}\n", lines[1]).as_bytes()));
    std::fs::write(&members, two).unwrap();
    // zstd: the whole file one stream (`zstd spans.jsonl`, the Collector's native compression).
    let zst = dir.join("c.data");
    std::fs::write(&zst, zstd::encode_all(text.as_bytes(), 3).unwrap()).unwrap();
    // The Collector's file exporter with `compression: zstd`: each request compressed on its
    // own, after its length (4 bytes, big-endian); no newlines.
    let prefixed = dir.join("d.zst");
    std::fs::write(&prefixed, [record(&lines[0]), record(&lines[1])].concat()).unwrap();
    for file in [&gz, &members, &zst, &prefixed] {
        let run = lens(&["check", "--json", path(file)]);
        assert_eq!(run.code, Some(0), "{file:?}: {}", run.stderr);
        assert_eq!(run.stdout, expected.stdout, "{file:?}");
        assert!(run.stderr.contains("2 spans received"), "{}", run.stderr);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_cut_or_bad_file_is_read_up_to_it_and_check_names_the_place() {
    let dir = dir("bad");
    let lines = lines();
    // The second request cut off: a file that ends mid-line.
    let cut = dir.join("cut.jsonl");
    std::fs::write(&cut, format!("{}\n{}", lines[0], &lines[1][..40])).unwrap();
    // A gzip stream cut off in its middle.
    let cut_gz = dir.join("cut.jsonl.gz");
    let whole = gzip(format!("{}\n{}\n", lines[0], lines[1]).as_bytes());
    std::fs::write(&cut_gz, &whole[..whole.len() - 12]).unwrap();
    // A zstd record whose length says more than the file holds.
    let cut_zst = dir.join("cut.zst");
    let whole = record(&lines[1]);
    std::fs::write(
        &cut_zst,
        [record(&lines[0]), whole[..whole.len() - 5].to_vec()].concat(),
    )
    .unwrap();
    for (file, place, why) in [
        (
            &cut,
            "cut.jsonl:2",
            "the file ends mid-line: not JSON: EOF while parsing",
        ),
        (&cut_gz, "cut.jsonl.gz:", "cannot decompress (gzip)"),
        (&cut_zst, "cut.zst:2", "the file ends mid-record"),
    ] {
        let run = lens(&["check", "--json", path(file)]);
        assert_eq!(run.code, Some(2), "{file:?}: {run:?}");
        assert!(run.stdout.is_empty(), "{file:?}: {}", run.stdout);
        let message = run.stderr.lines().next().unwrap();
        assert!(message.starts_with("error: "), "{message}");
        assert!(message.contains(place), "{place}: {message}");
        assert!(message.contains(why), "{why}: {message}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn watch_shows_and_counts_what_it_loads_warns_once_for_a_bad_line_and_still_receives() {
    let dir = dir("watch");
    let lines = lines();
    let good = dir.join("good.jsonl.gz");
    std::fs::write(&good, gzip(format!("{}\n", lines[0]).as_bytes())).unwrap();
    // A bad line between two good ones: read up to it; the line after it is not read.
    let bad = dir.join("bad.jsonl");
    let third = request(
        "6bf92f3577b34da6a3ce929d0e0e4736",
        "00f067aa0ba902b9",
        "svc",
        0,
    );
    std::fs::write(
        &bad,
        format!("{}\n{{\"resourceSpans\": 5}}\n{third}\n", lines[1]),
    )
    .unwrap();
    let watch = Watch::start(&["--json", "--load", path(&good), "--load", path(&bad)]);
    let warnings: Vec<&String> = watch
        .before
        .iter()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    assert_eq!(warnings.len(), 1, "{:#?}", watch.before);
    assert!(
        warnings[0].contains(&format!("{}:2: not an OTLP/JSON", path(&bad)))
            && warnings[0].contains("loaded the 1 spans before it"),
        "{}",
        warnings[0]
    );
    assert!(
        watch
            .before
            .contains(&format!("lens watch: loaded 1 spans from {}", path(&good))),
        "{:#?}",
        watch.before
    );
    // Both traces loaded are shown, the one after the bad line is not.
    let shown: Vec<String> = (0..2)
        .map(|_| {
            let trace: Value = serde_json::from_str(&watch.next_stdout()).unwrap();
            trace["trace_id"].as_str().unwrap().to_owned()
        })
        .collect();
    assert!(
        shown.contains(&SVC_TRACE.to_owned()) && shown.contains(&API_TRACE.to_owned()),
        "{shown:?}"
    );
    // Live receiving opened too.
    let id = demo_into(&format!("http://{}", watch.http), "http/protobuf");
    let live: Value = serde_json::from_str(&watch.next_stdout()).unwrap();
    assert_eq!(live["trace_id"], id.as_str());
    let stopped = watch.stop("INT");
    let last = stopped.stderr.last().unwrap();
    assert!(
        last.contains("15 spans received")
            && last.contains("(2 of the spans received were loaded by --load"),
        "{last}"
    );
    assert!(
        !stopped
            .stdout
            .iter()
            .any(|l| l.contains("6bf92f3577b34da6"))
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_load_file_that_cannot_be_read_is_a_usage_error_before_the_servers_start() {
    let args = [
        "watch",
        "--grpc",
        "127.0.0.1:0",
        "--http",
        "127.0.0.1:0",
        "--load",
        "/nonexistent/lens/spans.jsonl",
    ];
    let run = lens(&args);
    assert_usage_error(&run, &args);
    assert!(
        run.stderr
            .contains("--load: cannot read /nonexistent/lens/spans.jsonl"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("OTLP/gRPC on"), "{}", run.stderr);
}

/// Every span in `file`, by (trace id, span id): how many times.
fn spans_in(file: &Path) -> HashMap<(String, String), usize> {
    let mut spans = HashMap::new();
    for line in std::fs::read_to_string(file).unwrap().lines() {
        let request: Value = serde_json::from_str(line).unwrap();
        for resource in request["resourceSpans"].as_array().unwrap() {
            for scope in resource["scopeSpans"].as_array().unwrap() {
                for span in scope["spans"].as_array().unwrap() {
                    let key = (
                        span["traceId"].as_str().unwrap().to_lowercase(),
                        span["spanId"].as_str().unwrap().to_lowercase(),
                    );
                    *spans.entry(key).or_insert(0) += 1;
                }
            }
        }
    }
    spans
}

#[test]
fn save_and_load_on_one_file_keep_every_span_once_across_restarts() {
    let dir = dir("restart");
    let file = dir.join("session.jsonl");
    let args = ["--json", "--save", path(&file), "--load", path(&file)];
    // First run: the file does not exist yet; --save creates it, --load finds it empty.
    let watch = Watch::start(&args);
    let first = demo_into(&format!("http://{}", watch.http), "http/protobuf");
    let stopped = watch.stop("INT");
    assert!(stopped.status.success(), "{:?}", stopped.stderr);
    assert_eq!(stopped.stdout.len(), 1, "{:#?}", stopped.stdout);
    assert_eq!(spans_in(&file).len(), 13);
    // A run killed while writing leaves a line cut off: mended (cut away, and said) so that
    // what is appended next reads back.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap();
    f.write_all(b"{\"resourceSpans\":[{\"reso").unwrap();
    drop(f);

    // Second run: what was saved is shown, what arrives is appended, nothing twice.
    let watch = Watch::start(&args);
    assert!(
        watch
            .before
            .iter()
            .any(|l| l.starts_with("warning: the --save file") && l.contains("ends mid-line")),
        "{:#?}",
        watch.before
    );
    assert!(
        watch
            .before
            .contains(&format!("lens watch: loaded 13 spans from {}", path(&file))),
        "{:#?}",
        watch.before
    );
    let loaded: Value = serde_json::from_str(&watch.next_stdout()).unwrap();
    assert_eq!(loaded["trace_id"], first.as_str());
    assert_eq!(loaded["spans"].as_array().unwrap().len(), 13);
    let second = demo_into(&format!("http://{}", watch.http), "http/protobuf");
    let stopped = watch.stop("INT");
    assert!(stopped.status.success(), "{:?}", stopped.stderr);
    let mut traces: Vec<String> = vec![loaded["trace_id"].as_str().unwrap().to_owned()];
    for line in &stopped.stdout {
        let trace: Value = serde_json::from_str(line).unwrap();
        assert_eq!(trace["spans"].as_array().unwrap().len(), 13, "{line}");
        traces.push(trace["trace_id"].as_str().unwrap().to_owned());
    }
    assert_eq!(traces, [first.clone(), second.clone()]);
    let last = stopped.stderr.last().unwrap();
    assert!(
        last.contains("26 spans received, 13 saved")
            && last.contains("(13 of the spans received were loaded by --load"),
        "{last}"
    );

    // The file: each span of both runs exactly once, and it reads back whole.
    let spans = spans_in(&file);
    assert_eq!(spans.len(), 26);
    assert!(spans.values().all(|n| *n == 1), "{spans:?}");
    let run = lens(&["check", "--json", path(&file)]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let checked: Vec<String> = run
        .stdout
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["trace_id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(checked, [first, second]);
    let _ = std::fs::remove_dir_all(&dir);
}
