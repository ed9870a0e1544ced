#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use super::*;
use crate::decode::Batch;
use crate::diagnose::Severity;
use crate::model::{Span, SpanId, Status, TraceId};
use crate::render::map::MapBounds;
use crate::testing::sample;

fn batch(spans: Vec<Span>) -> Batch {
    Batch::new(spans)
}

#[test]
fn logs_show_under_their_spans_and_the_others_are_listed_by_service() {
    use crate::render::Output;
    use crate::testing::log;
    let mut session = Session::new(SessionConfig::default());
    let t0 = Instant::now();
    // Logs may arrive before their spans.
    let mut other = log(Some(4), "of no trace held");
    other.trace_id = Some(TraceId([9; 16]));
    let mut late = log(Some(3), "second");
    late.time_unix_nano = 9;
    session.ingest(
        Batch::of_logs(vec![
            late,
            log(Some(3), "first"),
            log(None, "no span"),
            other,
        ]),
        t0,
    );
    session.ingest(batch(sample()), t0);
    let done = session.flush();
    let view = session.with_logs(session.view_of(&done[0]).unwrap());
    let bodies: Vec<String> = view
        .logs(SpanId(3u64.to_be_bytes()))
        .iter()
        .map(|l| l.body.to_string())
        .collect();
    assert_eq!(bodies, ["first", "second"]);
    assert!(view.logs(SpanId(4u64.to_be_bytes())).is_empty());
    let mut text = String::new();
    Output::Text { colour: false }.trace(&view, &mut text);
    let lines: Vec<&str> = text.lines().collect();
    let server = lines.iter().position(|l| l.contains("POST /v1")).unwrap();
    assert!(lines[server + 1].ends_with("INFO first"), "{text}");
    assert!(lines[server + 2].ends_with("INFO second"), "{text}");
    // Without the logs, the waterfall is as before.
    let mut plain = String::new();
    Output::Text { colour: false }.trace(&session.view_of(&done[0]).unwrap(), &mut plain);
    assert!(!plain.contains("first"));
    let mut json = String::new();
    Output::Json.trace(&view, &mut json);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    let server = json["spans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "POST /v1")
        .unwrap();
    assert_eq!(server["logs"][1]["body"], "second");
    assert_eq!(server["logs"][0]["severity"], "INFO");
    let unmatched = session.unmatched_logs("", 0);
    let bodies: Vec<String> = unmatched.logs.iter().map(|l| l.body.to_string()).collect();
    assert_eq!(bodies, ["no span", "of no trace held"]);
    assert_eq!(
        (unmatched.matching, unmatched.services.as_slice()),
        (2, &["gateway".to_owned()][..])
    );
    assert_eq!(session.unmatched_logs("nobody", 0).matching, 0);
    assert_eq!(session.unmatched_logs("gateway", 1).logs.len(), 1);
    assert!(
        session
            .stats()
            .to_string()
            .ends_with("; 4 logs received (4 held)"),
        "{}",
        session.stats()
    );
}

#[test]
fn logs_are_bounded_the_oldest_dropped_first_and_counted() {
    use crate::testing::log;
    let mut session = Session::new(SessionConfig {
        max_logs: 2,
        ..SessionConfig::default()
    });
    let now = Instant::now();
    for body in ["a", "b", "c"] {
        session.ingest(Batch::of_logs(vec![log(Some(3), body)]), now);
    }
    session.ingest(batch(sample()), now);
    let done = session.flush();
    let view = session.with_logs(session.view_of(&done[0]).unwrap());
    let bodies: Vec<String> = view
        .logs(SpanId(3u64.to_be_bytes()))
        .iter()
        .map(|l| l.body.to_string())
        .collect();
    assert_eq!(bodies, ["b", "c"]);
    let stats = session.stats().logs;
    assert_eq!((stats.received, stats.held, stats.dropped), (3, 2, 1));
    assert!(
        session
            .stats()
            .to_string()
            .ends_with("; 3 logs received (2 held, 1 dropped, the oldest first)")
    );
    let mut none = Session::new(SessionConfig {
        max_logs: 0,
        ..SessionConfig::default()
    });
    let mut rejected = Batch::of_logs(vec![log(None, "x")]);
    rejected.rejected_logs = 2;
    none.ingest(rejected, now);
    let stats = none.stats().logs;
    assert_eq!(
        (stats.received, stats.held, stats.dropped, stats.rejected),
        (1, 0, 1, 2)
    );
    assert_eq!(none.stats().spans.spans_rejected, 0);
}

#[test]
fn a_trace_completes_with_its_findings_counted_once_and_listed() {
    let mut session = Session::new(SessionConfig::default());
    let t0 = Instant::now();
    session.ingest(batch(sample()), t0);
    assert!(session.poll(t0).is_empty());
    let done = session.poll(t0 + Duration::from_secs(3));
    assert_eq!(done.len(), 1);
    assert!(!done[0].cut_short);
    let view = session.view_of(&done[0]).unwrap();
    assert_eq!(view.services(), ["client", "gateway"]);
    assert_eq!(view.root().unwrap().name, "request");
    let list = session.list(&ListFilter::default());
    assert_eq!((list.matching, list.traces[0].spans), (1, 5));
    assert_eq!(list.services, ["client", "gateway"]);
    let filtered = session.list(&ListFilter {
        service: "nobody".into(),
        ..ListFilter::default()
    });
    assert_eq!(filtered.matching, 0);
    assert!(
        session
            .stats()
            .to_string()
            .starts_with("5 spans received, 1 traces (1 complete)")
    );
}

#[test]
fn a_filter_lets_through_the_traces_that_meet_every_condition_set() {
    use crate::testing::span;
    let mut session = Session::new(SessionConfig::default());
    let mut failed = span(7, 1, None);
    failed.status = Status::Error(String::new());
    session.ingest(batch(sample()), Instant::now());
    session.ingest(batch(vec![failed, span(7, 2, Some(1))]), Instant::now());
    let sample_id = sample()[0].trace_id;
    let ids = |filter: ListFilter| -> Vec<TraceId> {
        let mut ids: Vec<TraceId> = session
            .assembler()
            .traces()
            .filter(|(_, t)| filter.matches(t))
            .map(|(id, _)| *id)
            .collect();
        ids.sort();
        let listed = session.list(&filter);
        let mut from_list: Vec<TraceId> = listed.traces.iter().map(|t| t.trace_id).collect();
        from_list.sort();
        assert_eq!(ids, from_list, "list and matches agree");
        ids
    };
    let errors = ListFilter {
        errors: true,
        ..ListFilter::default()
    };
    assert_eq!(ids(errors.clone()), [TraceId([7; 16])]);
    assert_eq!(ids(ListFilter::default()).len(), 2);
    let gateway = ListFilter {
        service: "gateway".into(),
        ..ListFilter::default()
    };
    assert_eq!(ids(gateway.clone()), [sample_id]);
    // Conditions combine with AND.
    assert!(
        ids(ListFilter {
            errors: true,
            ..gateway
        })
        .is_empty()
    );
    let one = ListFilter {
        trace_id: Some(sample_id),
        ..ListFilter::default()
    };
    assert_eq!(ids(one.clone()), [sample_id]);
    assert!(
        ids(ListFilter {
            errors: true,
            ..one
        })
        .is_empty()
    );
    assert_eq!(
        ids(ListFilter {
            name: "STAGE".into(),
            ..ListFilter::default()
        }),
        [sample_id]
    );
}

#[test]
fn attribute_and_duration_conditions_each_with_a_near_miss() {
    let mut session = Session::new(SessionConfig::default());
    session.ingest(batch(sample()), Instant::now());
    let sample_id = sample()[0].trace_id;
    let count = |attribute: &str, min_duration_ns: u64| {
        session
            .list(&ListFilter {
                attribute: attribute.into(),
                min_duration_ns,
                ..ListFilter::default()
            })
            .matching
    };
    assert_eq!(count("http.request.method=POST", 0), 1);
    assert_eq!(
        count(" http.request.method = POST", 0),
        0,
        "the value is exact"
    );
    assert_eq!(count("http.request.method=GET", 0), 0);
    assert_eq!(count("http.request.method", 0), 1, "present");
    assert_eq!(count("http.request.metho", 0), 0);
    assert_eq!(count("service.name=gateway", 0), 1, "a resource attribute");
    assert_eq!(count("service.name=gate", 0), 0);
    // The sample lasts 1 ms from its earliest start to its latest end.
    assert_eq!(count("", 1_000_000), 1);
    assert_eq!(count("", 1_000_001), 0);
    assert_eq!(count("http.request.method", 1_000_001), 0, "AND");

    let spans = |filter: ListFilter| session.matching_spans(&sample_id, &filter).unwrap();
    let server = [SpanId(3u64.to_be_bytes())];
    assert_eq!(
        spans(ListFilter {
            attribute: "http.request.method=POST".into(),
            ..ListFilter::default()
        }),
        server
    );
    // root (1000 µs), client (800 µs) and server (600 µs) last 600 µs or more.
    let long = |ns: u64| {
        spans(ListFilter {
            min_duration_ns: ns,
            ..ListFilter::default()
        })
        .len()
    };
    assert_eq!((long(600_000), long(600_001)), (3, 2));
    assert_eq!(spans(ListFilter::default()).len(), 5);
    assert_eq!(
        spans(ListFilter {
            service: "gateway".into(),
            name: "stage".into(),
            ..ListFilter::default()
        })
        .len(),
        2
    );
    assert!(
        session
            .matching_spans(&TraceId([9; 16]), &ListFilter::default())
            .is_none()
    );
}

#[test]
fn a_listed_trace_carries_its_worst_finding() {
    use crate::testing::span;
    let mut session = Session::new(SessionConfig::default());
    // A span that names itself as its parent: a warning.
    session.ingest(batch(vec![span(9, 1, Some(1))]), Instant::now());
    session.ingest(batch(sample()), Instant::now());
    let done = session.flush();
    assert_eq!(done.len(), 2);
    let list = session.list(&ListFilter::default());
    let worst = |id: TraceId| {
        list.traces
            .iter()
            .find(|t| t.trace_id == id)
            .unwrap()
            .findings
    };
    assert_eq!(worst(TraceId([9; 16])), Some(Severity::Warning));
    assert_eq!(worst(sample()[0].trace_id), None);
}

#[test]
fn the_service_map_is_of_the_traces_held() {
    let mut session = Session::new(SessionConfig::default());
    assert!(session.service_map(MapBounds::default()).nodes.is_empty());
    session.ingest(batch(sample()), Instant::now());
    let map = session.service_map(MapBounds::default());
    assert_eq!(map.traces, 1);
    let edges: Vec<(&str, &str, u64, u64)> = map
        .edges
        .iter()
        .map(|e| (e.from.as_str(), e.to.as_str(), e.requests, e.median_ns))
        .collect();
    assert_eq!(edges, [("client", "gateway", 1, 600_000)]);
}

#[test]
fn a_stop_cuts_short_what_is_still_open() {
    let mut session = Session::new(SessionConfig::default());
    let t0 = Instant::now();
    session.ingest(batch(sample()), t0);
    let done = session.stop(t0);
    assert_eq!(done.len(), 1);
    assert!(done[0].cut_short);
    let mut out = String::new();
    crate::render::Output::Text { colour: false }
        .trace(&session.view_of(&done[0]).unwrap(), &mut out);
    assert!(out.contains("; cut short by the stop"), "{out}");
}
