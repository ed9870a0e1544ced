//! `lens inspect --json`: one JSON object per value (kind, valid, fields, rejections with the
//! rule, what would be sent), parsed back with serde_json.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cli_support;

use cli_support::{lens, lens_with_stdin};
use serde_json::Value;

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// Every stdout line as a JSON object.
fn objects(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

#[test]
fn a_valid_traceparent_gives_its_fields_and_what_is_sent() {
    let run = lens(&["inspect", "--json", TRACEPARENT]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let all = objects(&run.stdout);
    assert_eq!(all.len(), 1);
    let o = &all[0];
    assert_eq!(o["kind"], "traceparent");
    assert_eq!(o["valid"], true);
    assert_eq!(o["input"], serde_json::json!([TRACEPARENT]));
    assert_eq!(o["fields"]["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(o["fields"]["parent_id"], "00f067aa0ba902b7");
    assert_eq!(o["fields"]["flags"], "01");
    assert_eq!(o["fields"]["sampled"], true);
    assert_eq!(o["rejections"], serde_json::json!([]));
    assert_eq!(o["sent"], TRACEPARENT);
}

#[test]
fn an_invalid_traceparent_gives_the_rule_and_sends_nothing() {
    let run = lens(&[
        "inspect",
        "--json",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
    ]);
    assert_eq!(run.code, Some(1), "{run:?}");
    let o = &objects(&run.stdout)[0];
    assert_eq!(o["valid"], false);
    let rejection = &o["rejections"][0];
    assert!(
        rejection["reason"]
            .as_str()
            .unwrap()
            .contains("trace-id is all zeros"),
        "{rejection}"
    );
    assert_eq!(rejection["rule"], "docs/propagation-rules.md#traceparent");
    assert!(
        rejection["effect"]
            .as_str()
            .unwrap()
            .contains("no remote parent")
    );
    assert_eq!(o["sent"], Value::Null);
}

#[test]
fn baggage_rejections_name_the_member_and_the_rule() {
    let run = lens(&["inspect", "--json", "baggage: a b=1, c=2, c=3"]);
    assert_eq!(run.code, Some(1), "{run:?}");
    let o = &objects(&run.stdout)[0];
    assert_eq!(o["kind"], "baggage");
    assert_eq!(o["rejections"][0]["member"], "a b=1");
    assert_eq!(
        o["rejections"][0]["rule"],
        "docs/propagation-rules.md#baggage"
    );
    assert_eq!(
        o["fields"]["members"],
        serde_json::json!([{"key": "c", "value": "3", "properties": ""}])
    );
    assert!(
        o["notes"][0]
            .as_str()
            .unwrap()
            .contains("1 repeated key merged")
    );
    assert_eq!(o["sent"], "c=3");
}

#[test]
fn a_header_dump_on_stdin_gives_one_object_per_header() {
    let dump = format!("traceparent: {TRACEPARENT}\ntracestate: rojo=1\nHost: x\n");
    let run = lens_with_stdin(&["inspect", "--json", "-"], &dump);
    assert_eq!(run.code, Some(0), "{run:?}");
    let all = objects(&run.stdout);
    let kinds: Vec<&str> = all.iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["traceparent", "tracestate"]);
    assert_eq!(all[1]["fields"]["members"][0]["key"], "rojo");
}

#[test]
fn nccl_bytes_carry_their_headers_inspected() {
    let json = format!(r#"{{"traceparent": "{TRACEPARENT}", "baggage": "rank=3"}}"#);
    let run = lens(&["inspect", "--json", &json]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let o = &objects(&run.stdout)[0];
    assert_eq!(o["kind"], "nccl");
    assert_eq!(o["fields"]["encoding"], "json");
    let headers = o["fields"]["headers"].as_array().unwrap();
    assert_eq!(headers[0]["kind"], "traceparent");
    assert_eq!(headers[1]["kind"], "baggage");
    assert_eq!(o["sent"], json);
}

#[test]
fn json_false_prints_text() {
    let run = lens(&["inspect", "--json=false", TRACEPARENT]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.starts_with("traceparent: "), "{}", run.stdout);
}
