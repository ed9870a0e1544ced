#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::decode::Batch;
use crate::diagnose::{BAGGAGE_KEYS_ATTRIBUTE as BAGGAGE_KEYS, NEW_ROOT_ATTRIBUTE as NEW_ROOT};
use crate::model::{KeyValue, Resource, Span, SpanId, SpanKind, TraceId, Value};
use crate::session::Session;
use crate::session::SessionConfig;
use crate::testing::span_at;
use serde_json::json;

const T0: u64 = 1_700_000_000_000_000_000;

/// The probe's context: trace 7..., span 1..., `lens=probe,vendor=x`, baggage `lens.probe`.
fn sent() -> Sent {
    Sent::new(
        TraceId([7; 16]),
        SpanId([1; 8]),
        "lens=probe,vendor=x",
        ["lens.probe"],
    )
}

/// A span of the probe's trace: `id` under `parent` (0: the probe's own span), in `service`.
fn span(service: &str, kind: SpanKind, id: u64, parent: u64, at: u64) -> Span {
    let mut s = span_at(service, service, id, 0, kind, (at, at + 10));
    s.trace_id = TraceId([7; 16]);
    s.parent_span_id = Some(if parent == 0 {
        SpanId([1; 8])
    } else {
        SpanId(parent.to_be_bytes())
    });
    s.flags = 0x303;
    s.trace_state = "lens=probe,vendor=x".to_owned();
    let text = |v: &str| Value::String(v.into());
    s.attributes
        .push(KeyValue::new("http.request.method", text("POST")));
    s.attributes
        .push(KeyValue::new("server.address", text("127.0.0.1")));
    s.attributes
        .push(KeyValue::new("server.port", Value::Int(9000 + id as i64)));
    match kind {
        SpanKind::Client => {
            let url = format!("http://127.0.0.1:{}/call", 9000 + id + 1);
            s.attributes
                .push(KeyValue::new("url.full", Value::String(url)));
            s.attributes.retain(|a| &*a.key != "server.port");
            s.attributes.push(KeyValue::new(
                "server.port",
                Value::Int(9000 + id as i64 + 1),
            ));
        }
        _ => s.attributes.push(KeyValue::new("url.path", text("/call"))),
    }
    s
}

fn with_keys(mut s: Span, keys: &[&str]) -> Span {
    s.attributes.push(KeyValue::new(
        BAGGAGE_KEYS,
        Value::Array(keys.iter().map(|k| Value::String((*k).into())).collect()),
    ));
    s
}

/// The route through `spans`, the probe's own CLIENT span added, every trace diagnosed.
fn route(spans: Vec<Span>) -> Route {
    let sent = sent();
    let mut session = Session::new(SessionConfig::default());
    let mut all = vec![sent.client_span("http://127.0.0.1:8080/v1", "POST", T0, T0 + 1_000_000)];
    all.extend(spans);
    let now = Instant::now();
    session.ingest(Batch::new(all), now);
    session.poll(now + Duration::from_secs(60));
    Route::build(&sent, &session)
}

/// gateway (SERVER 2, child of the probe) -> CLIENT 3 -> planner (SERVER 4).
fn healthy() -> Vec<Span> {
    vec![
        with_keys(span("gateway", SpanKind::Server, 2, 0, 10), &["lens.probe"]),
        span("gateway", SpanKind::Client, 3, 2, 20),
        with_keys(
            span("planner", SpanKind::Server, 4, 3, 30),
            &["lens.probe", "tenant"],
        ),
    ]
}

#[test]
fn a_healthy_chain_keeps_everything_on_every_hop() {
    let r = route(healthy());
    let hops: Vec<(&str, Option<&str>)> = r
        .hops
        .iter()
        .map(|h| (h.from.as_str(), h.to.as_deref()))
        .collect();
    assert_eq!(
        hops,
        [
            (PROBE_SERVICE, Some("gateway")),
            ("gateway", Some("planner"))
        ]
    );
    for hop in &r.hops {
        assert_eq!(hop.trace, TraceVerdict::Kept);
        assert_eq!(hop.parent, ParentVerdict::Kept);
        assert_eq!(hop.flags, FlagsVerdict::Kept(0x03));
        assert_eq!(hop.trace_state, TraceStateVerdict::Kept);
        assert_eq!(hop.baggage, BaggageVerdict::Kept);
        assert!(hop.broken().is_empty());
        assert_eq!(hop.kind, "http");
    }
    assert_eq!(r.spans, 3);
    assert_eq!(r.broken(&[]).count(), 0);
    assert!(!r.saw_nothing());
}

#[test]
fn tracestate_dropped_is_broken_and_an_entry_added_at_the_front_is_not() {
    let mut spans = healthy();
    spans[2].trace_state = String::new();
    let r = route(spans);
    assert_eq!(
        r.hops[1].trace_state,
        TraceStateVerdict::Dropped {
            keys: vec!["lens".into(), "vendor".into()]
        }
    );
    assert_eq!(r.broken(&[]).collect::<Vec<_>>(), ["tracestate-dropped"]);
    assert_eq!(r.broken(&["tracestate-dropped".into()]).count(), 0);

    // Near miss: planner's vendor adds (or updates) its own entry at the front.
    let mut spans = healthy();
    spans[2].trace_state = "planner=7,lens=probe,vendor=x".into();
    let r = route(spans);
    assert_eq!(
        r.hops[1].trace_state,
        TraceStateVerdict::Added {
            keys: vec!["planner".into()]
        }
    );
    assert_eq!(r.broken(&[]).count(), 0);
}

#[test]
fn baggage_dropped_where_the_receiver_lists_its_keys_and_not_observable_where_it_does_not() {
    let mut spans = healthy();
    spans[2].attributes.retain(|a| &*a.key != BAGGAGE_KEYS);
    spans[2] = with_keys(spans[2].clone(), &["tenant"]);
    let r = route(spans);
    assert_eq!(
        r.hops[1].baggage,
        BaggageVerdict::Dropped {
            keys: vec!["lens.probe".into()]
        }
    );
    assert_eq!(r.broken(&[]).collect::<Vec<_>>(), ["baggage-dropped"]);

    // Near miss: a receiver that does not list its keys says nothing either way.
    let mut spans = healthy();
    spans[2].attributes.retain(|a| &*a.key != BAGGAGE_KEYS);
    let r = route(spans);
    assert_eq!(r.hops[1].baggage, BaggageVerdict::NotObservable);
    assert_eq!(r.broken(&[]).count(), 0);
}

#[test]
fn flags_dropped_where_both_sides_report_them_and_not_where_an_exporter_does_not() {
    let mut spans = healthy();
    spans[2].flags = 0x301; // random flag gone
    let r = route(spans);
    assert_eq!(
        r.hops[1].flags,
        FlagsVerdict::Dropped {
            sent: 0x03,
            received: 0x01
        }
    );
    assert_eq!(r.broken(&[]).collect::<Vec<_>>(), ["flag-dropped"]);

    // Near miss: an exporter that reports no trace flags (Python's).
    let mut spans = healthy();
    spans[2].flags = 0;
    let r = route(spans);
    assert_eq!(r.hops[1].flags, FlagsVerdict::NotReported);
    assert_eq!(r.broken(&[]).count(), 0);
}

#[test]
fn a_parent_nobody_exported_is_an_unreported_hop_in_between() {
    let mut spans = healthy();
    // A load balancer that traces itself but does not export: planner's parent is its span.
    spans[2].parent_span_id = Some(SpanId([0xee; 8]));
    let r = route(spans.clone());
    // The gateway's call was on the wire when the planner started: the hop goes through it.
    assert_eq!(r.hops.len(), 2);
    let hop = &r.hops[1];
    assert_eq!(
        (hop.from.as_str(), hop.to.as_deref()),
        ("gateway", Some("planner"))
    );
    assert_eq!(hop.sender, Some(SpanId(3u64.to_be_bytes())));
    assert_eq!(
        hop.parent,
        ParentVerdict::Reparented {
            parent: SpanId([0xee; 8])
        }
    );
    // The rest is still compared with the gateway's span.
    assert_eq!(hop.trace_state, TraceStateVerdict::Kept);
    assert_eq!(r.broken(&[]).collect::<Vec<_>>(), ["missing-parent"]);
    let mut text = String::new();
    r.text(&mut text);
    assert!(
        text.contains("2. gateway -> ? -> planner (http): trace kept, PARENT CHANGED"),
        "{text}"
    );

    // Near miss: a planner that started after the gateway's call ended was not its receiver.
    let mut late = spans;
    late[2].start_unix_nano = late[1].end_unix_nano + 1;
    late[2].end_unix_nano = late[2].start_unix_nano + 10;
    let r = route(late);
    let hop = r
        .hops
        .iter()
        .find(|h| h.to.as_deref() == Some("planner"))
        .unwrap();
    assert_eq!((hop.from.as_str(), hop.sender), ("?", None));
    let unseen = r.hops.iter().find(|h| h.from == "gateway").unwrap();
    assert_eq!(unseen.trace, TraceVerdict::Unseen);
}

#[test]
fn a_lost_hop_names_the_new_trace_and_its_cause_and_the_route_goes_on_there() {
    let mut spans = healthy();
    // planner started trace 8... (no traceparent arrived), and calls on to a trainer there.
    let mut root = spans.remove(2);
    root.trace_id = TraceId([8; 16]);
    root.parent_span_id = None;
    root.flags = 0x101;
    root.trace_state = String::new();
    root.attributes
        .push(KeyValue::new(NEW_ROOT, Value::String("none".into())));
    let mut client = span("planner", SpanKind::Client, 5, 4, 40);
    client.trace_id = TraceId([8; 16]);
    let mut trainer = span("trainer", SpanKind::Server, 6, 5, 50);
    trainer.trace_id = TraceId([8; 16]);
    spans.extend([root, client, trainer]);
    let r = route(spans);
    let lost = r.hops.iter().find(|h| h.from == "gateway").unwrap();
    assert_eq!(lost.to.as_deref(), Some("planner"));
    assert_eq!(
        lost.trace,
        TraceVerdict::Lost {
            new_trace: TraceId([8; 16]),
            cause: Some("none".into())
        }
    );
    assert_eq!(lost.receiver, Some(SpanId(4u64.to_be_bytes())));
    let after = r.hops.last().unwrap();
    assert_eq!(
        (after.from.as_str(), after.to.as_deref()),
        ("planner", Some("trainer"))
    );
    assert!(!after.in_probe_trace);
    assert_eq!(after.trace_id, TraceId([8; 16]));
    // Only the trace and the parent are judged there: the probe's baggage never arrived.
    assert_eq!(after.baggage, BaggageVerdict::NotApplicable);
    assert_eq!(r.broken(&[]).collect::<Vec<_>>(), ["lost-context"]);

    let mut text = String::new();
    r.text(&mut text);
    assert!(
        text.contains(&format!(
            "gateway -> planner (http): TRACE LOST: planner started trace {} (it received no traceparent)",
            TraceId([8; 16])
        )),
        "{text}"
    );
    let json = r.json();
    assert_eq!(json["hops"][1]["broken"], json!(["lost-context"]));
    assert_eq!(
        json["hops"][1]["trace"]["lost"]["new_trace_id"],
        TraceId([8; 16]).to_string()
    );
}

#[test]
fn a_service_that_exports_nothing_is_unseen_never_guessed() {
    let r = route(Vec::new());
    assert_eq!(r.hops.len(), 1);
    assert_eq!(r.hops[0].trace, TraceVerdict::Unseen);
    assert!(r.saw_nothing());
    assert_eq!(r.broken(&[]).count(), 0);
    let mut text = String::new();
    r.text(&mut text);
    assert!(text.contains("lens probe -> ? (http): not seen"), "{text}");
}

/// `span` exported by `instance` of its service (`service.instance.id`).
fn on_instance(mut s: Span, instance: &str) -> Span {
    let mut resource = Resource::for_service(s.service());
    resource.attributes.push(KeyValue::new(
        "service.instance.id",
        Value::String(instance.into()),
    ));
    s.resource = Arc::new(resource);
    s
}

/// The healthy chain with the planner on `instance`; the planner drops every trace header
/// (starts trace 8...) when `lose`.
fn through_replica(instance: &str, lose: bool) -> Route {
    let mut spans = healthy();
    if lose {
        spans[2].trace_id = TraceId([8; 16]);
        spans[2].parent_span_id = None;
        spans[2].trace_state = String::new();
    }
    spans[2] = on_instance(spans[2].clone(), instance);
    route(spans)
}

#[test]
fn a_tally_names_the_instance_where_the_losses_concentrate() {
    let routes: Vec<Route> = (0..6)
        .map(|i| {
            let instance = format!("planner-{}", i % 3 + 1);
            through_replica(&instance, instance == "planner-2")
        })
        .collect();
    let tally = Tally::new(&routes, &[], &[]);
    assert_eq!((tally.requests, tally.lost, tally.unseen), (6, 2, 0));
    assert_eq!(tally.hops.len(), 2);
    let hop = &tally.hops[1];
    assert_eq!(
        (hop.from.as_str(), hop.to.as_deref(), hop.crossed, hop.lost),
        ("gateway", Some("planner"), 6, 2)
    );
    assert_eq!(hop.rules, [("lost-context", 2)]);
    let losing: Vec<(&str, usize, usize)> = hop
        .losing_instances()
        .map(|i| (i.instance.as_str(), i.lost, i.crossed))
        .collect();
    assert_eq!(losing, [("planner-2", 2, 2)]);
    assert_eq!(hop.instances.len(), 3);
    let mut text = String::new();
    tally.text(&mut text);
    assert!(
        text.contains(
            "2. gateway -> planner (http): 4 of 6 kept, 2 of 6 lost (lost-context 2; planner instance planner-2: 2 of 2)"
        ),
        "{text}"
    );
    assert!(
        text.contains(" 1. lens probe -> gateway (http): 6 of 6 kept"),
        "{text}"
    );
    let json = tally.json();
    assert_eq!(json["hops"][1]["instances"][0]["instance"], "planner-2");
    assert_eq!(json["hops"][1]["rules"]["lost-context"], 2);

    // Allowed, the same losses are no loss.
    let tally = Tally::new(&routes, &[], &["lost-context".into()]);
    assert_eq!(tally.lost, 0);
    assert_eq!(tally.hops[1].losing_instances().count(), 0);
}

#[test]
fn a_healthy_pool_tallies_no_loss() {
    let routes: Vec<Route> = (0..3)
        .map(|i| through_replica(&format!("planner-{i}"), false))
        .collect();
    let tally = Tally::new(&routes, &[], &[]);
    assert_eq!((tally.requests, tally.lost), (3, 0));
    assert!(tally.lost_traces.is_empty());
    assert!(tally.hops.iter().all(|h| h.lost == 0 && h.crossed == 3));
}

#[test]
fn the_instance_is_the_service_instance_id_else_the_host() {
    let s = span("planner", SpanKind::Server, 4, 3, 30);
    assert_eq!(s.resource.instance(), None);
    let mut host = s.clone();
    let mut resource = Resource::for_service("planner");
    resource
        .attributes
        .push(KeyValue::new("host.name", Value::String("node-7".into())));
    host.resource = Arc::new(resource);
    assert_eq!(host.resource.instance(), Some("node-7"));
    assert_eq!(
        on_instance(host, "planner-2").resource.instance(),
        Some("planner-2")
    );
}

/// The route of an unsampled probe through `spans` (the probe's own span added), compared
/// with the healthy sampled route.
fn unsampled_route(spans: Vec<Span>) -> Route {
    let sent = sent().unsampled();
    let mut session = Session::new(SessionConfig::default());
    let mut own = sent.client_span("http://127.0.0.1:8080/v1", "POST", T0, T0 + 1_000_000);
    own.trace_id = sent.trace_id;
    let mut all = vec![own];
    all.extend(spans);
    let now = Instant::now();
    session.ingest(Batch::new(all), now);
    session.poll(now + Duration::from_secs(60));
    let mut r = Route::build(&sent, &session);
    r.compare_sampling(&route(healthy()));
    r
}

#[test]
fn an_unsampled_probe_that_leaves_nothing_kept_every_hop_silent() {
    let r = unsampled_route(Vec::new());
    assert_eq!(
        r.sent.traceparent(),
        format!("00-{}-{}-02", TraceId([7; 16]), SpanId([1; 8]))
    );
    let sampling = r.sampling.as_ref().unwrap();
    assert_eq!(
        (sampling.forced.as_ref(), sampling.silent),
        (None, Some((2, 2)))
    );
    assert_eq!(r.broken(&[]).count(), 0);
}

#[test]
fn a_span_recorded_for_an_unsampled_probe_is_sampling_forced_on_its_hop() {
    // The gateway kept the flag (nothing recorded); the planner's span arrived, its parent the
    // gateway's unrecorded CLIENT span.
    let mut planner = span("planner", SpanKind::Server, 4, 3, 30);
    planner.flags = 0x301;
    let r = unsampled_route(vec![planner]);
    let sampling = r.sampling.as_ref().unwrap();
    let forced = sampling.forced.as_ref().unwrap();
    assert_eq!(
        (forced.from.as_str(), forced.to.as_str(), forced.flags),
        ("gateway", "planner", Some(0x01))
    );
    assert_eq!(sampling.silent, Some((1, 2)));
    assert_eq!(r.broken(&[]).collect::<Vec<_>>(), ["sampling-forced"]);
    assert_eq!(r.broken(&["sampling-forced".into()]).count(), 0);
    let mut text = String::new();
    r.text(&mut text);
    assert!(
        text.contains("SAMPLING FORCED: gateway -> planner (http): planner recorded a span"),
        "{text}"
    );
}
