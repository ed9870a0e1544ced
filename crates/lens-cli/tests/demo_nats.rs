//! `lens demo --nats URL` against a real nats-server the test starts: the trainer's rollout job
//! crosses the queue through lens-nats, the worker's `process` span the child of the trainer's
//! `send` span in the request's trace; `--break trainer->rollout.jobs` sends it without context
//! and the doctor names the queue hop; demos sharing one server never take each other's jobs.
//! Without a server: the queue hop needs `--nats`, a bad URL is a usage error, a server that
//! does not answer an error.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod demo_support;

use std::thread;

use demo_support::{by_id, json_spans, run, stderr, stdout, str_of, trace_ids};
use lens_testkit::nats::NatsServer;
use serde_json::Value;

/// The spans of `kind` whose name starts with `prefix`.
fn spans_of<'a>(spans: &'a [Value], kind: &str, prefix: &str) -> Vec<&'a Value> {
    spans
        .iter()
        .filter(|s| s["kind"] == kind && str_of(s, "name").starts_with(prefix))
        .collect()
}

fn attribute<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"].get(key)
}

#[test]
fn the_rollout_job_crosses_the_queue_in_the_requests_trace() {
    let Some(nats) = NatsServer::start() else {
        return;
    };
    let spans = json_spans(&["--nats", &nats.url()]);
    assert_eq!(trace_ids(&spans).len(), 1, "{spans:#?}");
    let [send] = spans_of(&spans, "PRODUCER", "send rollout.jobs.")[..] else {
        panic!("one send span: {spans:#?}");
    };
    let [process] = spans_of(&spans, "CONSUMER", "process rollout.jobs.")[..] else {
        panic!("one process span: {spans:#?}");
    };
    // The run's own subject names no span: the template does (one name for every run).
    assert_eq!(send["name"], "send rollout.jobs.*");
    assert_eq!(process["name"], "process rollout.jobs.*");
    assert_eq!(send["service"], "trainer");
    assert_eq!(process["service"], "rollout-worker");
    // The worker's span is the child of the trainer's, over the wire, on the same subject.
    assert_eq!(process["parent_span_id"], send["span_id"]);
    let subject = attribute(send, "messaging.destination.name").unwrap();
    assert_eq!(
        attribute(process, "messaging.destination.name"),
        Some(subject)
    );
    assert_eq!(attribute(process, "messaging.system").unwrap(), "nats");
    assert!(attribute(process, "lens.trace.new_root").is_none());
    // The trainer sends from its gRPC SERVER span, and the worker's work is under its span.
    assert_eq!(
        by_id(&spans, str_of(send, "parent_span_id"))["kind"],
        "SERVER"
    );
    let collect = spans
        .iter()
        .find(|s| s["name"] == "collect rollout")
        .unwrap();
    assert_eq!(collect["parent_span_id"], process["span_id"]);
}

#[test]
fn the_waterfall_counts_the_messaging_hop_and_the_table_times_it() {
    let Some(nats) = NatsServer::start() else {
        return;
    };
    let output = run(&["--color", "never", "--nats", &nats.url()]);
    let out = stdout(&output);
    assert!(output.status.success(), "{}", stderr(&output));
    let summary = out
        .lines()
        .find(|l| l.contains(" spans, complete"))
        .unwrap();
    assert!(summary.contains(", 1 messaging)"), "{summary}");
    let row = out
        .lines()
        .find(|l| l.starts_with("trainer->rollout.jobs "))
        .unwrap_or_else(|| panic!("no queue row in {out}"));
    assert!(row.split_whitespace().nth(1) == Some("1"), "{row}");
    assert!(out.contains("messaging.process.duration (s)"), "{out}");
    assert!(!out.contains("error["), "{out}");
}

#[test]
fn breaking_the_queue_hop_gives_one_lost_context_over_the_queue() {
    let Some(nats) = NatsServer::start() else {
        return;
    };
    let output = run(&[
        "--color",
        "never",
        "--nats",
        &nats.url(),
        "--break",
        "trainer->rollout.jobs",
    ]);
    let out = stdout(&output);
    assert!(output.status.success(), "{}", stderr(&output));
    let found: Vec<&str> = out
        .lines()
        .filter(|l| {
            ["error[", "warning[", "info["]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .collect();
    let [finding] = found[..] else {
        panic!("one finding: {out}");
    };
    assert!(
        finding.starts_with(
            "error[lost-context] context lost on trainer -> rollout-worker over a queue"
        ),
        "{finding}"
    );
    assert!(
        finding.contains("found no traceparent in the message"),
        "{finding}"
    );
    // The request's trace and the worker's own, both named by the finding.
    let traces: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("trace "))
        .filter(|l| !l.contains(':'))
        .collect();
    assert_eq!(traces.len(), 2, "{out}");
    for id in traces {
        assert!(finding.contains(id), "{id} in {finding}");
    }

    // In JSON: the worker's span is the root of a trace of its own, and says why.
    let output = run(&[
        "--json",
        "--nats",
        &nats.url(),
        "--break",
        "trainer->rollout.jobs",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let spans: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    let [process] = spans_of(&spans, "CONSUMER", "process rollout.jobs.")[..] else {
        panic!("one process span: {spans:#?}");
    };
    assert!(process["parent_span_id"].is_null(), "{process}");
    assert_eq!(attribute(process, "lens.trace.new_root").unwrap(), "none");
    assert_eq!(trace_ids(&spans).len(), 2);
}

#[test]
fn demos_sharing_a_server_each_consume_only_their_own_jobs() {
    let Some(nats) = NatsServer::start() else {
        return;
    };
    let url = nats.url();
    let runs: Vec<Vec<Value>> = thread::scope(|scope| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    json_spans(&["--nats", &url, "--requests", "12", "--concurrency", "4"])
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut subjects = Vec::new();
    for spans in &runs {
        let sends = spans_of(spans, "PRODUCER", "send rollout.jobs.");
        let processed = spans_of(spans, "CONSUMER", "process rollout.jobs.");
        assert_eq!((sends.len(), processed.len()), (12, 12));
        assert_eq!(trace_ids(spans).len(), 12);
        // Each job processed once, under the send of its own request.
        for process in processed {
            let send = by_id(spans, str_of(process, "parent_span_id"));
            assert_eq!(send["kind"], "PRODUCER");
            assert_eq!(send["trace_id"], process["trace_id"]);
        }
        let subject = attribute(sends[0], "messaging.destination.name").unwrap();
        assert!(
            sends
                .iter()
                .all(|s| attribute(s, "messaging.destination.name") == Some(subject))
        );
        subjects.push(subject.clone());
    }
    assert_ne!(
        subjects[0], subjects[1],
        "each run has a subject of its own"
    );
}

#[test]
fn the_queue_hop_needs_nats_and_a_server_that_answers() {
    let output = run(&["--break", "trainer->rollout.jobs"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("needs --nats URL"),
        "{}",
        stderr(&output)
    );

    for bad in ["http://127.0.0.1:4222", "nats://", "nats://h:4222/x"] {
        let output = run(&["--nats", bad]);
        assert_eq!(output.status.code(), Some(2), "{bad}");
        assert!(
            stderr(&output).contains("e.g. nats://127.0.0.1:4222"),
            "{bad}"
        );
    }

    // A port nothing listens on: taken from the OS, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let output = run(&["--nats", &format!("nats://127.0.0.1:{port}")]);
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(
        err.contains(&format!(
            "cannot connect to the nats-server at nats://127.0.0.1:{port}"
        )),
        "{err}"
    );
    assert!(stdout(&output).is_empty());
}
