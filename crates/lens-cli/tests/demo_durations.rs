//! `lens demo` prints the request durations per hop after the waterfall, read from the duration
//! histograms its services recorded (lens-reqwest, lens-axum, lens-tonic with a meter each):
//! one row per hop, a count per side equal to the requests sent, durations with their units.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod demo_support;

use demo_support::{run_with_env, stderr, stdout};

/// The table's rows: (hop, requests, [client mean, client max, server mean, server max]), and
/// the line naming the histograms.
fn table(out: &str) -> (Vec<(String, String, Vec<String>)>, String) {
    let mut lines = out
        .lines()
        .skip_while(|l| !l.starts_with("request durations"));
    let header = lines.next().unwrap_or_else(|| panic!("no table in {out}"));
    assert_eq!(
        header
            .split("  ")
            .filter(|c| !c.is_empty())
            .map(str::trim)
            .collect::<Vec<_>>(),
        [
            "request durations",
            "requests",
            "client mean",
            "client max",
            "server mean",
            "server max"
        ]
    );
    let mut rows = Vec::new();
    for line in lines.by_ref() {
        if line.starts_with('(') {
            return (rows, line.to_owned());
        }
        let cells: Vec<&str> = line.split_whitespace().collect();
        // hop, requests, then four durations of two words each ("12.3 ms").
        assert_eq!(cells.len(), 10, "{line}");
        let durations = cells[2..]
            .chunks(2)
            .map(|d| format!("{} {}", d[0], d[1]))
            .collect();
        rows.push((cells[0].to_owned(), cells[1].to_owned(), durations));
    }
    panic!("no line naming the histograms in {out}");
}

/// `12.3 ms`, `850 µs` or `1.24 s`, as seconds.
fn seconds(duration: &str) -> f64 {
    let (value, unit) = duration.split_once(' ').unwrap();
    let value: f64 = value.parse().unwrap_or_else(|_| panic!("{duration}"));
    value
        * match unit {
            "s" => 1.0,
            "ms" => 1e-3,
            "µs" => 1e-6,
            "ns" => 1e-9,
            _ => panic!("unit of {duration}"),
        }
}

#[test]
fn one_row_per_hop_counting_every_request_on_both_sides() {
    let output = run_with_env(
        &["--color", "never", "--requests", "6", "--concurrency", "2"],
        &[],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let out = stdout(&output);
    // After the summary lines of the traces.
    let table_at = out.find("request durations").unwrap();
    assert!(
        out.find("6 requests, 0 failed").unwrap() < table_at,
        "{out}"
    );
    let (rows, histograms) = table(&out);
    let hops: Vec<&str> = rows.iter().map(|(h, _, _)| h.as_str()).collect();
    assert_eq!(
        hops,
        ["lens-demo->gateway", "gateway->planner", "planner->trainer"]
    );
    for (hop, requests, durations) in &rows {
        assert_eq!(requests, "6", "{hop}: both sides recorded every request");
        let [client_mean, client_max, server_mean, server_max] =
            durations.iter().map(|d| seconds(d)).collect::<Vec<_>>()[..]
        else {
            panic!("{durations:?}")
        };
        assert!(
            client_mean > 0.0 && client_mean <= client_max,
            "{hop}: {durations:?}"
        );
        assert!(
            server_mean > 0.0 && server_mean <= server_max,
            "{hop}: {durations:?}"
        );
    }
    // The caller of the gateway waits for everything downstream (the calls are nested).
    let mean = |i: usize| seconds(&rows[i].2[0]);
    assert!(mean(0) >= mean(2), "{rows:?}");
    assert_eq!(
        histograms,
        "(from http.client.request.duration (s), http.server.request.duration (s), \
rpc.client.duration (ms), rpc.server.duration (ms))"
    );
}

#[test]
fn the_rpc_conventions_choice_names_the_histograms_read() {
    let output = run_with_env(
        &["--color", "never"],
        &[("OTEL_SEMCONV_STABILITY_OPT_IN", "rpc")],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let (rows, histograms) = table(&stdout(&output));
    assert!(
        rows.iter().all(|(_, requests, _)| requests == "1"),
        "{rows:?}"
    );
    assert!(
        histograms.contains("rpc.client.call.duration (s), rpc.server.call.duration (s)"),
        "{histograms}"
    );
}

#[test]
fn json_output_has_no_table() {
    let output = run_with_env(&["--json"], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let spans: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        spans.as_array().unwrap().len(),
        demo_support::SPANS_PER_TRACE
    );
}
