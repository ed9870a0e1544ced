#![allow(clippy::unwrap_used, clippy::panic)]

use super::*;
use crate::diagnose::{Finding, Rule, Severity};
use crate::model::TraceId;
use crate::model::{Span, SpanId, SpanKind, Status};
use crate::testing::span_at;

/// A caller's CLIENT span (id `id`, under `parent`) and the SERVER span of `to` under it
/// (id `id + 1`, remote parent), lasting `us` microseconds.
fn call(from: &str, to: &str, id: u64, parent: u64, us: u64) -> [Span; 2] {
    let client = span_at(from, "call", id, parent, SpanKind::Client, (0, us + 10));
    let mut server = span_at(to, "serve", id + 1, id, SpanKind::Server, (5, 5 + us));
    server.flags = 0x301;
    [client, server]
}

fn in_trace(mut spans: Vec<Span>, trace: u8) -> Vec<Span> {
    for s in &mut spans {
        s.trace_id = TraceId([trace; 16]);
    }
    spans
}

fn map(traces: &[Vec<Span>], findings: &[Finding], bounds: MapBounds) -> ServiceMap {
    ServiceMap::build(traces.iter().map(Vec::as_slice), findings, bounds)
}

fn edge<'m>(map: &'m ServiceMap, from: &str, to: &str) -> &'m MapEdge {
    map.edges
        .iter()
        .find(|e| e.from == from && e.to == to)
        .unwrap_or_else(|| panic!("no edge {from} → {to}: {map:?}"))
}

#[test]
fn edges_count_requests_errors_and_the_median_of_the_receiving_spans() {
    let mut traces = Vec::new();
    for (i, us) in [(1u8, 100), (2, 300), (3, 200), (4, 900)] {
        let root = span_at("web", "GET /", 1, 0, SpanKind::Server, (0, 2000));
        let mut spans = vec![root];
        spans.extend(call("web", "api", 2, 1, us));
        if i == 2 {
            spans[2].status = Status::Error("boom".into());
        }
        traces.push(in_trace(spans, i));
    }
    let map = map(&traces, &[], MapBounds::default());
    assert_eq!(map.traces, 4);
    assert_eq!(map.edges.len(), 1, "{map:?}");
    let e = edge(&map, "web", "api");
    assert_eq!((e.requests, e.errors), (4, 1));
    assert!((e.error_rate() - 0.25).abs() < 1e-9);
    // Durations 100, 200, 300, 900 µs: the lower middle.
    assert_eq!(e.median_ns, 200_000);
    assert!(!e.is_lost() && e.severity().is_none());
    let names: Vec<(&str, usize, u64, u64)> = map
        .nodes
        .iter()
        .map(|n| (n.service.as_str(), n.layer, n.spans, n.errors))
        .collect();
    assert_eq!(names, [("web", 0, 8, 0), ("api", 1, 4, 1)]);
}

#[test]
fn near_misses_are_not_hops() {
    // A remote parent in the same service; an INTERNAL parent in another service with the
    // child's remoteness unknown; a parent that is not held.
    let mut same = span_at("web", "again", 3, 2, SpanKind::Server, (1, 2));
    same.flags = 0x301;
    let mut unknown = span_at("db", "query", 5, 4, SpanKind::Internal, (1, 2));
    unknown.flags = 0x001;
    let orphan = span_at("cache", "get", 7, 99, SpanKind::Server, (1, 2));
    let spans = vec![
        span_at("web", "GET /", 1, 0, SpanKind::Server, (0, 9)),
        span_at("web", "call", 2, 1, SpanKind::Client, (0, 9)),
        same,
        span_at("web", "work", 4, 1, SpanKind::Internal, (0, 9)),
        unknown,
        orphan,
    ];
    let map = map(std::slice::from_ref(&spans), &[], MapBounds::default());
    assert!(map.edges.is_empty(), "{map:?}");
    assert_eq!(map.nodes.len(), 3);
    // The same db span under a CLIENT parent is a hop; a remote flag alone also makes one.
    let mut hop = spans;
    hop[4].parent_span_id = Some(SpanId(2u64.to_be_bytes()));
    hop[5].parent_span_id = Some(SpanId(4u64.to_be_bytes()));
    hop[5].flags = 0x301;
    let map = map_of(&[hop]);
    assert_eq!(edge(&map, "web", "db").requests, 1);
    assert_eq!(edge(&map, "web", "cache").requests, 1);
}

fn map_of(traces: &[Vec<Span>]) -> ServiceMap {
    map(traces, &[], MapBounds::default())
}

fn lost(from: &str, to: &str) -> Finding {
    Finding {
        rule: Rule::LostContext,
        trace_ids: vec![TraceId([1; 16]), TraceId([2; 16])],
        span_ids: vec![SpanId([3; 8]), SpanId([4; 8])],
        services: vec![from.into(), to.into()],
        message: "lost".into(),
    }
}

#[test]
fn a_lost_hop_is_an_edge_no_span_draws_red_and_dashed() {
    let mut client = in_trace(call("gateway", "x", 2, 1, 10).to_vec(), 1);
    client.truncate(1);
    let planner = in_trace(
        vec![span_at("planner", "plan", 9, 0, SpanKind::Server, (0, 5))],
        2,
    );
    let findings = [lost("gateway", "planner"), lost("gateway", "planner")];
    let bounds = MapBounds {
        findings_per_edge: 1,
        ..MapBounds::default()
    };
    let map = map(&[client, planner], &findings, bounds);
    let e = edge(&map, "gateway", "planner");
    assert_eq!((e.requests, e.median_ns, e.findings_total), (0, 0, 2));
    assert_eq!(e.findings.len(), 1);
    assert!(e.is_lost());
    assert_eq!(e.severity(), Some(Severity::Error));
    let layers: Vec<(&str, usize)> = map
        .nodes
        .iter()
        .map(|n| (n.service.as_str(), n.layer))
        .collect();
    assert_eq!(layers, [("gateway", 0), ("planner", 1)]);
    let mut svg = String::new();
    map.svg(&mut svg);
    let at = svg
        .find("<g class=\"edge error lost\" data-from=\"gateway\" data-to=\"planner\">")
        .unwrap();
    let drawn = &svg[at..];
    assert!(drawn.contains("stroke=\"#c0392b\""), "{drawn}");
    assert!(drawn.contains("stroke-dasharray"), "{drawn}");
    assert!(drawn.contains("2 findings (lost-context)"), "{drawn}");
    let json = map.to_json();
    assert_eq!(json["edges"][0]["lost"], true);
    assert_eq!(json["edges"][0]["findings"][0]["finding"], "lost-context");
    // A finding of one service, or of a service with itself, draws nothing.
    let mut one = lost("a", "a");
    let map = ServiceMap::build([], [&one], MapBounds::default());
    assert!(map.edges.is_empty());
    one.services.pop();
    let map = ServiceMap::build([], [&one], MapBounds::default());
    assert!(map.edges.is_empty() && map.nodes.is_empty());
}

/// A chain of `n` services `s00 → s01 → ...` with fan-out to the second next, in one trace.
fn chain(n: u64) -> Vec<Span> {
    let mut spans = vec![span_at("s00", "root", 1, 0, SpanKind::Server, (0, 1000))];
    for i in 1..n {
        spans.extend(call(
            &format!("s{:02}", i - 1),
            &format!("s{i:02}"),
            10 * i,
            if i == 1 { 1 } else { 10 * (i - 1) + 1 },
            10,
        ));
        if i >= 2 {
            spans.extend(call(
                &format!("s{:02}", i - 2),
                &format!("s{i:02}"),
                10 * i + 1000,
                10 * (i - 2) + 1,
                10,
            ));
        }
    }
    spans
}

#[test]
fn bounds_keep_the_busiest_and_count_the_rest() {
    let spans = chain(20);
    let all = map_of(std::slice::from_ref(&spans));
    assert_eq!((all.nodes.len(), all.edges.len()), (20, 37));
    assert_eq!((all.more_services, all.more_edges), (0, 0));
    let bounds = MapBounds {
        services: 5,
        edges: 3,
        findings_per_edge: 5,
    };
    let findings = [lost("s19", "s00")];
    let some = map(&[spans], &findings, bounds);
    assert_eq!((some.nodes.len(), some.more_services), (5, 15));
    assert_eq!(some.edges.len() + some.more_edges, 38);
    assert_eq!(some.edges.len(), 3);
    // Four spans each from s02 on (ties by name); the finding's s19 is left out, and with it
    // its edge, findings or not.
    let kept: Vec<&str> = some.nodes.iter().map(|n| n.service.as_str()).collect();
    let mut sorted = kept.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, ["s02", "s03", "s04", "s05", "s06"]);
    assert!(
        some.edges.iter().all(|e| kept.contains(&e.from.as_str())
            && kept.contains(&e.to.as_str())
            && !e.is_lost())
    );
}

#[test]
fn twenty_services_lay_out_in_layers_without_overlap_the_same_every_time() {
    let mut spans = chain(20);
    // A call back to the start (a cycle) does not move anything.
    spans.extend(call("s19", "s00", 5000, 191, 10));
    let map = map_of(std::slice::from_ref(&spans));
    let again = map_of(&[spans.into_iter().rev().collect()]);
    assert_eq!(map, again);
    let layers: Vec<usize> = map.nodes.iter().map(|n| n.layer).collect();
    assert_eq!(layers, (0..20).collect::<Vec<_>>());
    let mut places: Vec<(usize, usize)> = map.nodes.iter().map(|n| (n.layer, n.row)).collect();
    places.dedup();
    assert_eq!(places.len(), 20, "one place per service");
    let mut svg = String::new();
    map.svg(&mut svg);
    assert_eq!(svg.matches("<g class=\"node\"").count(), 20);
    assert_eq!(svg.matches("<g class=\"edge").count(), 38);
    // Boxes do not overlap: each a distinct translate.
    let mut boxes: Vec<&str> = svg
        .split("transform=\"translate(")
        .skip(1)
        .map(|s| &s[..s.find(')').unwrap()])
        .collect();
    boxes.sort();
    boxes.dedup();
    assert_eq!(boxes.len(), 20);
}

#[test]
fn fan_out_shares_a_layer_sorted_by_name_and_names_are_escaped_and_cut() {
    let mut spans = vec![span_at("<front>", "GET /", 1, 0, SpanKind::Server, (0, 99))];
    let long = "a-service-with-a-very-long-name-indeed";
    for (i, to) in ["zeta", long, "beta"].into_iter().enumerate() {
        spans.extend(call("<front>", to, 10 * (i as u64 + 1), 1, 5));
    }
    let map = map_of(&[spans]);
    let placed: Vec<(&str, usize, usize)> = map
        .nodes
        .iter()
        .map(|n| (n.service.as_str(), n.layer, n.row))
        .collect();
    assert_eq!(
        placed,
        [
            ("<front>", 0, 0),
            (long, 1, 0),
            ("beta", 1, 1),
            ("zeta", 1, 2)
        ]
    );
    let mut svg = String::new();
    map.svg(&mut svg);
    assert!(svg.contains("data-service=\"&lt;front&gt;\""), "{svg}");
    assert!(svg.contains(">a-service-with-a-ver…</text>"), "{svg}");
    assert!(!svg.contains("<front>"));
}
