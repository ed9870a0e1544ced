//! `lens demo --stream`: the trainer reads the rollout worker's tokens as server-sent events,
//! the worker streaming them from an inference engine. The four spans of the streaming hop mark
//! their first chunk in their bars, the trace gets its "time to first chunk by hop" table (the
//! parts adding up to the outer figure), `--json` carries the marks, and the doctor finds no
//! buffering hop (each hop forwards its chunks as they come; the trainer reads the tokens it
//! asked for).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod demo_support;

use demo_support::{run, stderr, stdout};

/// `1.5 ms`, `118 µs`, `+2.0 ms`, `1.20 s` in nanoseconds.
fn nanos(text: &str) -> f64 {
    let text = text.trim_start_matches('+');
    let (number, unit) = text.split_once(' ').unwrap();
    let number: f64 = number.parse().unwrap();
    number
        * match unit {
            "µs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            other => panic!("{other}"),
        }
}

#[test]
fn the_streaming_hop_is_marked_and_broken_down_by_hop() {
    let output = run(&["--stream"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let marked: Vec<&str> = text.lines().filter(|l| l.contains('┃')).collect();
    let names: Vec<&str> = marked
        .iter()
        .map(|l| {
            let name = l.trim_start_matches([' ', '│', '├', '└', '─']);
            name.split("  ").next().unwrap()
        })
        .collect();
    assert_eq!(
        names,
        ["POST", "POST /generate", "POST", "POST /v1/completions"],
        "{text}"
    );

    let (_, table) = text
        .split_once("time to first chunk by hop: ")
        .unwrap_or_else(|| panic!("no table: {text}"));
    let mut lines = table.lines();
    let heading = lines.next().unwrap();
    let (outer, at) = heading.split_once(" at ").unwrap();
    assert_eq!(at, "rollout-worker (POST /generate)");
    assert!(lines.next().unwrap().trim_start().starts_with("hop"));
    let rows: Vec<&str> = lines.take(3).collect();
    assert!(
        rows[0]
            .trim_start()
            .starts_with("gateway  rollout-worker (POST /generate)"),
        "{table}"
    );
    assert!(
        rows[1]
            .trim_start()
            .starts_with("network  rollout-worker → inference-engine"),
        "{table}"
    );
    assert!(
        rows[2]
            .trim_start()
            .starts_with("engine   inference-engine (POST /v1/completions)"),
        "{table}"
    );
    let added: f64 = rows
        .iter()
        .map(|r| nanos(r.rsplit_once("  ").unwrap().1.trim()))
        .sum();
    // Each figure is rounded to a tenth of a millisecond (or a microsecond) when printed.
    assert!(
        (added - nanos(outer)).abs() <= 0.2e6,
        "{added} vs {outer}: {table}"
    );
    // The engine waits 6 ms before its first token: its own part is at least that.
    assert!(
        nanos(rows[2].rsplit_once("  ").unwrap().1.trim()) >= 6e6,
        "{table}"
    );
    assert!(!text.contains("buffered-stream"), "{text}");
}

#[test]
fn json_carries_the_marks() {
    let output = run(&["--stream", "--json"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let spans: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let streamed: Vec<&serde_json::Value> = spans
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s.get("first_chunk_unix_nano").is_some())
        .collect();
    assert_eq!(streamed.len(), 4);
    for span in streamed {
        let attributes = &span["attributes"];
        assert_eq!(attributes["lens.stream.chunks"], 8, "{span}");
        assert_eq!(attributes["lens.stream.end"], "complete");
        assert_eq!(attributes["gen_ai.operation.name"], "text_completion");
        let first = span["first_chunk_unix_nano"].as_u64().unwrap();
        assert!(span["start_unix_nano"].as_u64().unwrap() < first);
        assert!(first <= span["end_unix_nano"].as_u64().unwrap());
    }
}
