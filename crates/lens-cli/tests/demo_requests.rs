//! `lens demo --requests 20 --concurrency 4`: twenty distinct traces, each complete.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod demo_support;

use std::collections::{HashMap, HashSet};

use demo_support::{SPANS_PER_TRACE, json_spans, run, stderr, stdout, str_of};

#[test]
fn twenty_requests_print_twenty_complete_traces() {
    let output = run(&["--requests", "20", "--concurrency", "4"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    // The summary lines, then (after a blank line) the request durations per hop.
    let (summary, durations) = text.split_once("\n\n").unwrap_or_else(|| panic!("{text}"));
    assert!(durations.starts_with("request durations"), "{text}");
    let lines: Vec<&str> = summary.lines().collect();
    assert_eq!(lines.len(), 21, "{text}");
    let mut ids = HashSet::new();
    for line in &lines[..20] {
        let (id, rest) = line
            .strip_prefix("trace ")
            .and_then(|l| l.split_once(": "))
            .unwrap_or_else(|| panic!("{line}"));
        assert_eq!(id.len(), 32);
        ids.insert(id.to_owned());
        assert!(
            rest.starts_with(&format!("{SPANS_PER_TRACE} spans, complete, ")),
            "{line}"
        );
    }
    assert_eq!(ids.len(), 20);
    assert_eq!(
        lines[20],
        "20 requests, 0 failed; 20 distinct trace ids, 20 complete"
    );
}

#[test]
fn twenty_concurrent_requests_do_not_mix_their_spans() {
    let spans = json_spans(&["--requests", "20", "--concurrency", "5"]);
    let mut by_trace: HashMap<&str, Vec<&serde_json::Value>> = HashMap::new();
    for span in &spans {
        by_trace
            .entry(str_of(span, "trace_id"))
            .or_default()
            .push(span);
    }
    assert_eq!(by_trace.len(), 20);
    let mut requests = Vec::new();
    for (trace, spans) in by_trace {
        assert_eq!(spans.len(), SPANS_PER_TRACE, "trace {trace}");
        let ids: HashSet<&str> = spans.iter().map(|s| str_of(s, "span_id")).collect();
        // Every parent and every link target is in the same trace.
        for span in &spans {
            if let Some(parent) = span["parent_span_id"].as_str() {
                assert!(ids.contains(parent), "{span}");
            }
            for link in span["links"].as_array().unwrap() {
                assert_eq!(link["trace_id"], trace);
                assert!(ids.contains(str_of(link, "span_id")));
            }
        }
        // One root per trace, and each trace is a different request.
        let roots: Vec<_> = spans
            .iter()
            .filter(|s| s["parent_span_id"].is_null())
            .collect();
        assert_eq!(roots.len(), 1);
        requests.push(roots[0]["attributes"]["demo.request"].as_i64().unwrap());
    }
    requests.sort_unstable();
    assert_eq!(requests, (0..20).collect::<Vec<i64>>());
}
