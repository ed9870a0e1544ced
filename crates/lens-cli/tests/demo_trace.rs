//! `lens demo --json`: the request crosses every boundary in one trace, and each crossing is
//! recorded as it should be (CLIENT/SERVER pairs, the remote call, rank spans, stage links).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod demo_support;

use demo_support::{SPANS_PER_TRACE, by_id, json_spans, named, parent, str_of, trace_ids};
use serde_json::Value;

#[test]
fn one_request_is_one_trace_across_every_hop() {
    let spans = json_spans(&[]);
    assert_eq!(spans.len(), SPANS_PER_TRACE, "{spans:#?}");
    assert_eq!(trace_ids(&spans).len(), 1);
    let span_ids: std::collections::HashSet<&str> =
        spans.iter().map(|s| str_of(s, "span_id")).collect();
    assert_eq!(span_ids.len(), spans.len(), "span ids are unique");

    // One root: the driver's request span; every other parent is in the trace.
    let roots: Vec<&Value> = spans
        .iter()
        .filter(|s| s["parent_span_id"].is_null())
        .collect();
    assert_eq!(roots.len(), 1);
    assert_eq!(roots[0]["name"], "demo request");
    assert_eq!(roots[0]["service"], "lens-demo");
    for span in &spans {
        if !span["parent_span_id"].is_null() {
            parent(&spans, span);
        }
    }
}

#[test]
fn every_http_and_grpc_hop_is_a_client_span_parenting_a_remote_server_span() {
    let spans = json_spans(&[]);
    let servers: Vec<&Value> = spans.iter().filter(|s| s["kind"] == "SERVER").collect();
    let clients: Vec<&Value> = spans.iter().filter(|s| s["kind"] == "CLIENT").collect();
    assert_eq!(servers.len(), 3);
    assert_eq!(clients.len(), 3);

    let mut hops = Vec::new();
    for server in &servers {
        let client = parent(&spans, server);
        assert_eq!(client["kind"], "CLIENT", "{server}");
        assert_eq!(server["parent_is_remote"], true);
        assert_ne!(client["service"], server["service"]);
        let protocol = if server["attributes"]["rpc.system"] == "grpc" {
            assert_eq!(client["attributes"]["rpc.system"], "grpc");
            "grpc"
        } else {
            assert!(
                server["attributes"]["http.request.method"].is_string(),
                "{server}"
            );
            assert!(
                client["attributes"]["http.request.method"].is_string(),
                "{client}"
            );
            "http"
        };
        hops.push((
            str_of(client, "service").to_owned(),
            str_of(server, "service").to_owned(),
            protocol,
        ));
    }
    hops.sort();
    assert_eq!(
        hops,
        [
            ("gateway".to_owned(), "planner".to_owned(), "http"),
            ("lens-demo".to_owned(), "gateway".to_owned(), "http"),
            ("planner".to_owned(), "trainer".to_owned(), "grpc"),
        ]
    );
    let grpc = servers.iter().find(|s| s["service"] == "trainer").unwrap();
    assert_eq!(grpc["name"], "lens.demo.Trainer/Step");
    assert_eq!(grpc["attributes"]["rpc.grpc.status_code"], 0);
}

#[test]
fn the_remote_call_runs_under_the_grpc_server_span() {
    let spans = json_spans(&[]);
    let call = named(&spans, "RolloutWorker.generate");
    assert_eq!(call["kind"], "INTERNAL");
    assert_eq!(call["service"], "rollout-worker");
    assert_eq!(call["scope"], "nemo.lens.ray");
    // The context crossed as `_otel_carrier`: a remote parent, the trainer's SERVER span.
    assert_eq!(call["parent_is_remote"], true);
    let server = parent(&spans, call);
    assert_eq!(server["kind"], "SERVER");
    assert_eq!(server["service"], "trainer");
}

#[test]
fn four_ranks_share_the_step_and_each_stage_links_to_the_previous_one() {
    let spans = json_spans(&[]);
    let step = named(&spans, "train_step");
    assert_eq!(step["service"], "trainer");
    let mut stages: Vec<&Value> = spans
        .iter()
        .filter(|s| str_of(s, "name").starts_with("pp_stage "))
        .collect();
    stages.sort_by_key(|s| s["attributes"]["pp.stage"].as_i64().unwrap());
    assert_eq!(stages.len(), 4);
    for (rank, stage) in stages.iter().enumerate() {
        assert_eq!(stage["name"], format!("pp_stage {rank}"));
        assert_eq!(stage["service"], format!("trainer-rank-{rank}"));
        assert_eq!(stage["parent_span_id"], step["span_id"]);
        // Ranks 1..3 got the step's context through the broadcast: a remote parent.
        assert_eq!(stage["parent_is_remote"], rank > 0);
        // Baggage set at the gateway arrived on every rank.
        assert_eq!(stage["attributes"]["tenant"], "acme", "{stage}");
        let links = stage["links"].as_array().unwrap();
        if rank == 0 {
            assert!(links.is_empty());
        } else {
            assert_eq!(links.len(), 1);
            let previous = by_id(&spans, str_of(&links[0], "span_id"));
            assert_eq!(previous["name"], format!("pp_stage {}", rank - 1));
            assert_eq!(links[0]["trace_id"], stage["trace_id"]);
            // A stage starts once the previous one has handed on its activations.
            assert!(stage["start_unix_nano"].as_u64() >= previous["start_unix_nano"].as_u64());
        }
    }
    // Only the last stage has the loss; it is the step's loss.
    assert!(stages[3]["attributes"]["train.loss"].is_f64());
    assert_eq!(
        stages[3]["attributes"]["train.loss"],
        step["attributes"]["train.loss"]
    );
}
