//! The service map: services as nodes, hops as edges (caller → called), from the traces held
//! and the doctor's findings, bounded; as JSON ([`ServiceMap::to_json`]) and as one inline SVG
//! drawing ([`ServiceMap::svg`]: no script, no external asset).
//!
//! A hop is a span whose parent is held in the same trace, in another service, and either
//! marked remote ([`Span::parent_is_remote`]) or a CLIENT or PRODUCER span: its edge runs from
//! the parent's service to the span's, and the span (the receiving side) gives the edge its
//! request, error and duration figures. A finding that names two services (a lost hop: the
//! client's, then the one that started a new trace) is drawn on the edge between them, which is
//! there even when no span links them.
//!
//! The drawing is laid out in layers by call depth, left to right (the longest path from a
//! service nobody calls; a call back to an earlier layer does not move it), each layer's
//! services sorted by name: the same map draws the same every time.
//!
//! ```
//! use lens_watch::render::map::{MapBounds, ServiceMap};
//! # let spans: Vec<lens_watch::model::Span> = Vec::new();
//! let map = ServiceMap::build([spans.as_slice()], [], MapBounds::default());
//! let mut svg = String::new();
//! map.svg(&mut svg);
//! assert!(svg.starts_with("<svg"));
//! ```

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::{Value as Json, json};

use super::html::escape;
use crate::diagnose::{Finding, Rule, Severity};
use crate::model::{Span, SpanId, SpanKind, Status};

/// How much a [`ServiceMap`] holds: what is over a bound is counted, not drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MapBounds {
    /// The most services drawn: those with the most spans (then by name); default 40.
    pub services: usize,
    /// The most edges drawn: those with findings first, then those with the most requests;
    /// default 120.
    pub edges: usize,
    /// The most findings kept on one edge (the first given: the newest, as
    /// [`Session::service_map`](crate::session::Session::service_map) gives them); default 5.
    pub findings_per_edge: usize,
}

impl Default for MapBounds {
    fn default() -> Self {
        MapBounds {
            services: 40,
            edges: 120,
            findings_per_edge: 5,
        }
    }
}

/// A service on the map.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MapNode {
    /// Its name (`service.name`).
    pub service: String,
    /// Its spans among the traces held.
    pub spans: u64,
    /// Those with an error status.
    pub errors: u64,
    /// Its layer, left to right: 0 for a service nobody calls, else one more than its deepest
    /// caller's.
    pub layer: usize,
    /// Its place in its layer, top to bottom (the layer's services sorted by name).
    pub row: usize,
}

/// A hop on the map: calls from one service to another.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct MapEdge {
    /// The calling service.
    pub from: String,
    /// The called service.
    pub to: String,
    /// Spans of `to` whose parent is a span of `from` (0 for an edge that only a finding draws:
    /// a lost hop).
    pub requests: u64,
    /// Those with an error status.
    pub errors: u64,
    /// The median duration of those spans (the lower middle of an even count), in nanoseconds;
    /// 0 without requests.
    pub median_ns: u64,
    /// The findings on this hop, up to [`MapBounds::findings_per_edge`].
    pub findings: Vec<Finding>,
    /// The findings on this hop in all.
    pub findings_total: u64,
}

impl MapEdge {
    /// `errors / requests`, 0 without requests.
    pub fn error_rate(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.errors as f64 / self.requests as f64
        }
    }

    /// The worst severity among the findings kept on it.
    pub fn severity(&self) -> Option<Severity> {
        self.findings.iter().map(Finding::severity).min()
    }

    /// Whether the doctor found context lost on this hop (a `lost-context` finding).
    pub fn is_lost(&self) -> bool {
        self.findings.iter().any(|f| f.rule == Rule::LostContext)
    }
}

/// The services and the hops between them: see the module docs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServiceMap {
    /// The traces it was built from.
    pub traces: usize,
    /// The services drawn, by layer, then row.
    pub nodes: Vec<MapNode>,
    /// The hops drawn, by caller, then called service.
    pub edges: Vec<MapEdge>,
    /// Services left out by [`MapBounds::services`].
    pub more_services: usize,
    /// Edges left out: by [`MapBounds::edges`], or for a service left out.
    pub more_edges: usize,
}

#[derive(Default)]
struct NodeCount {
    spans: u64,
    errors: u64,
}

#[derive(Default)]
struct EdgeCount<'a> {
    durations: Vec<u64>,
    errors: u64,
    findings: Vec<&'a Finding>,
    findings_total: u64,
}

fn is_error(span: &Span) -> bool {
    matches!(span.status, Status::Error(_))
}

/// Whether `span`, with `parent` held, is a hop: another service, and a remote parent or a
/// CLIENT/PRODUCER one.
fn is_hop(parent: &Span, span: &Span) -> bool {
    parent.service() != span.service()
        && (span.parent_is_remote() == Some(true)
            || matches!(parent.kind, SpanKind::Client | SpanKind::Producer))
}

impl ServiceMap {
    /// The map of `traces` (each the spans of one trace) with `findings` (newest first) drawn
    /// on their hops, within `bounds`: one pass over the spans.
    pub fn build<'a>(
        traces: impl IntoIterator<Item = &'a [Span]>,
        findings: impl IntoIterator<Item = &'a Finding>,
        bounds: MapBounds,
    ) -> ServiceMap {
        let mut nodes: HashMap<&'a str, NodeCount> = HashMap::new();
        let mut edges: HashMap<(&'a str, &'a str), EdgeCount<'a>> = HashMap::new();
        let mut count = 0;
        let mut by_id: HashMap<SpanId, &'a Span> = HashMap::new();
        for spans in traces {
            count += 1;
            by_id.clear();
            by_id.extend(spans.iter().map(|s| (s.span_id, s)));
            for span in spans {
                let node = nodes.entry(span.service()).or_default();
                node.spans += 1;
                node.errors += u64::from(is_error(span));
                let Some(parent) = span.parent_span_id.and_then(|p| by_id.get(&p)) else {
                    continue;
                };
                if is_hop(parent, span) {
                    let edge = edges.entry((parent.service(), span.service())).or_default();
                    edge.durations.push(span.duration_nanos());
                    edge.errors += u64::from(is_error(span));
                }
            }
        }
        for finding in findings {
            let [from, to, ..] = finding.services.as_slice() else {
                continue;
            };
            if from == to {
                continue;
            }
            nodes.entry(from.as_str()).or_default();
            nodes.entry(to.as_str()).or_default();
            let edge = edges.entry((from.as_str(), to.as_str())).or_default();
            edge.findings_total += 1;
            if edge.findings.len() < bounds.findings_per_edge {
                edge.findings.push(finding);
            }
        }

        // The services kept: the most spans first.
        let mut ranked: Vec<(&str, NodeCount)> = nodes.into_iter().collect();
        ranked.sort_by(|a, b| b.1.spans.cmp(&a.1.spans).then(a.0.cmp(b.0)));
        let more_services = ranked.len().saturating_sub(bounds.services);
        ranked.truncate(bounds.services);
        ranked.sort_by(|a, b| a.0.cmp(b.0));
        let index: HashMap<&str, usize> =
            ranked.iter().enumerate().map(|(i, n)| (n.0, i)).collect();

        // The edges kept: those with findings first, then the most requests.
        let total_edges = edges.len();
        let mut kept: Vec<((usize, usize), EdgeCount<'_>)> = edges
            .into_iter()
            .filter_map(|((from, to), e)| Some(((*index.get(from)?, *index.get(to)?), e)))
            .collect();
        kept.sort_by(|(a, x), (b, y)| {
            (y.findings_total > 0)
                .cmp(&(x.findings_total > 0))
                .then(y.durations.len().cmp(&x.durations.len()))
                .then(a.cmp(b))
        });
        kept.truncate(bounds.edges);
        kept.sort_by_key(|(pair, _)| *pair);
        let more_edges = total_edges - kept.len();

        let pairs: Vec<(usize, usize)> = kept.iter().map(|(pair, _)| *pair).collect();
        let (layers, rows) = layout(ranked.len(), &pairs);
        let mut map_nodes: Vec<MapNode> = ranked
            .iter()
            .enumerate()
            .map(|(i, (service, n))| MapNode {
                service: (*service).to_owned(),
                spans: n.spans,
                errors: n.errors,
                layer: layers[i],
                row: rows[i],
            })
            .collect();
        map_nodes.sort_by_key(|n| (n.layer, n.row));
        let map_edges = kept
            .into_iter()
            .map(|((from, to), mut e)| MapEdge {
                from: ranked[from].0.to_owned(),
                to: ranked[to].0.to_owned(),
                requests: e.durations.len() as u64,
                errors: e.errors,
                median_ns: median(&mut e.durations),
                findings: e.findings.into_iter().cloned().collect(),
                findings_total: e.findings_total,
            })
            .collect();
        ServiceMap {
            traces: count,
            nodes: map_nodes,
            edges: map_edges,
            more_services,
            more_edges,
        }
    }
}

/// The lower middle of `values` (0 when empty).
fn median(values: &mut [u64]) -> u64 {
    if values.is_empty() {
        return 0;
    }
    let middle = (values.len() - 1) / 2;
    *values.select_nth_unstable(middle).1
}

/// The layer and row of each of `n` services (sorted by name) joined by `edges` (indexes, sorted):
/// edges that close a cycle (found depth first from the services nobody calls, in name order)
/// are set aside, then each service goes one layer past its deepest caller.
fn layout(n: usize, edges: &[(usize, usize)]) -> (Vec<usize>, Vec<usize>) {
    let mut out: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut called = vec![false; n];
    for &(from, to) in edges {
        if from != to {
            out[from].push(to);
            called[to] = true;
        }
    }
    // Depth first, iteratively: 0 unseen, 1 on the path, 2 done. An edge to a service on the
    // path closes a cycle.
    let mut state = vec![0u8; n];
    let mut forward: Vec<Vec<usize>> = vec![Vec::new(); n];
    let starts = (0..n).filter(|&i| !called[i]).chain(0..n);
    for start in starts {
        if state[start] != 0 {
            continue;
        }
        state[start] = 1;
        let mut path = vec![(start, 0usize)];
        while let Some((node, next)) = path.last_mut() {
            let node = *node;
            let Some(&to) = out[node].get(*next) else {
                state[node] = 2;
                path.pop();
                continue;
            };
            *next += 1;
            match state[to] {
                0 => {
                    forward[node].push(to);
                    state[to] = 1;
                    path.push((to, 0));
                }
                2 => forward[node].push(to),
                _ => {}
            }
        }
    }
    // Longest path over what is left (acyclic), in topological order.
    let mut waiting = vec![0usize; n];
    for to in forward.iter().flatten() {
        waiting[*to] += 1;
    }
    let mut layer = vec![0usize; n];
    let mut ready: Vec<usize> = (0..n).filter(|&i| waiting[i] == 0).collect();
    while let Some(node) = ready.pop() {
        for &to in &forward[node] {
            layer[to] = layer[to].max(layer[node] + 1);
            waiting[to] -= 1;
            if waiting[to] == 0 {
                ready.push(to);
            }
        }
    }
    // Names are sorted: rows in index order are rows by name.
    let mut filled: HashMap<usize, usize> = HashMap::new();
    let row = layer
        .iter()
        .map(|l| {
            let next = filled.entry(*l).or_default();
            *next += 1;
            *next - 1
        })
        .collect();
    (layer, row)
}

/// The drawing's measures, in pixels.
const NODE_W: usize = 170;
const NODE_H: usize = 30;
const GAP_X: usize = 70;
const GAP_Y: usize = 16;
const MARGIN: usize = 12;
/// The most characters of a service name written in its box (the whole name is its title).
const LABEL_CHARS: usize = 21;

const RED: &str = "#c0392b";
const AMBER: &str = "#c9a227";
const GREY: &str = "#8a90a0";

impl ServiceMap {
    fn at(node: &MapNode) -> (usize, usize) {
        (
            MARGIN + node.layer * (NODE_W + GAP_X),
            MARGIN + node.row * (NODE_H + GAP_Y),
        )
    }

    /// The map as one SVG element into `out`: a box per service (`<g class="node"
    /// data-service="...">`), an arrow per hop (`<g class="edge" data-from="..." data-to="...">`,
    /// classed `lost` and drawn red for a lost hop, dashed when no span links the two; amber for
    /// other findings), each with a `<title>` of its figures; well-formed XML.
    pub fn svg(&self, out: &mut String) {
        let layers = self.nodes.iter().map(|n| n.layer + 1).max().unwrap_or(0);
        let rows = self.nodes.iter().map(|n| n.row + 1).max().unwrap_or(0);
        let width = 2 * MARGIN + (layers * (NODE_W + GAP_X)).saturating_sub(GAP_X);
        let height = 2 * MARGIN + (rows * (NODE_H + GAP_Y)).saturating_sub(GAP_Y);
        let _ = write!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"service-map\" width=\"{width}\" \
             height=\"{height}\" viewBox=\"0 0 {width} {height}\" \
             font-family=\"ui-monospace, monospace\" font-size=\"12\"><defs>"
        );
        for (id, colour) in [("plain", GREY), ("error", RED), ("warning", AMBER)] {
            let _ = write!(
                out,
                "<marker id=\"lens-map-{id}\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" \
                 markerUnits=\"userSpaceOnUse\" markerWidth=\"10\" markerHeight=\"10\" \
                 orient=\"auto\">\
                 <path d=\"M0,0L10,5L0,10z\" fill=\"{colour}\"/></marker>"
            );
        }
        out.push_str("</defs>");
        let place: HashMap<&str, (usize, usize)> = self
            .nodes
            .iter()
            .map(|n| (n.service.as_str(), Self::at(n)))
            .collect();
        for edge in &self.edges {
            let (Some(&(fx, fy)), Some(&(tx, ty))) =
                (place.get(edge.from.as_str()), place.get(edge.to.as_str()))
            else {
                continue;
            };
            edge_svg(
                edge,
                (fx + NODE_W, fy + NODE_H / 2),
                (tx, ty + NODE_H / 2),
                out,
            );
        }
        for node in &self.nodes {
            node_svg(node, Self::at(node), out);
        }
        out.push_str("</svg>");
    }
}

fn edge_svg(edge: &MapEdge, from: (usize, usize), to: (usize, usize), out: &mut String) {
    let (colour, marker, class) = match edge.severity() {
        Some(Severity::Error) => (RED, "error", "error"),
        Some(Severity::Warning) => (AMBER, "warning", "warning"),
        _ => (GREY, "plain", "plain"),
    };
    let (x1, y1, x2, y2) = (from.0 as i64, from.1 as i64, to.0 as i64, to.1 as i64);
    // Forward: an S curve; back or within a layer: a loop out to the right and back in.
    let reach = if x2 > x1 { (x2 - x1) / 2 } else { 60 };
    let path = format!(
        "M{x1},{y1} C{},{y1} {},{y2} {x2},{y2}",
        x1 + reach,
        x2 - reach
    );
    let width = 1.5 + (edge.requests.max(1) as f64).log10().min(3.0);
    let dash = if edge.requests == 0 {
        " stroke-dasharray=\"6 4\""
    } else {
        ""
    };
    out.push_str("<g class=\"edge ");
    out.push_str(class);
    if edge.is_lost() {
        out.push_str(" lost");
    }
    out.push_str("\" data-from=\"");
    escape(out, &edge.from);
    out.push_str("\" data-to=\"");
    escape(out, &edge.to);
    let _ = write!(
        out,
        "\"><path d=\"{path}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"{width:.1}\"\
             {dash} marker-end=\"url(#lens-map-{marker})\"/>\
             <path class=\"hit\" d=\"{path}\" fill=\"none\" stroke=\"transparent\" \
             stroke-width=\"12\"/><title>"
    );
    escape(out, &edge_title(edge));
    out.push_str("</title></g>");
}

fn node_svg(node: &MapNode, (x, y): (usize, usize), out: &mut String) {
    let stroke = if node.errors > 0 { RED } else { "#4a5160" };
    out.push_str("<g class=\"node\" data-service=\"");
    escape(out, &node.service);
    let _ = write!(
        out,
        "\" transform=\"translate({x},{y})\"><rect width=\"{NODE_W}\" height=\"{NODE_H}\" \
         rx=\"5\" fill=\"#ffffff\" stroke=\"{stroke}\"/><text x=\"8\" y=\"{}\">",
        NODE_H / 2 + 4
    );
    let label: String = if node.service.chars().count() > LABEL_CHARS {
        node.service
            .chars()
            .take(LABEL_CHARS - 1)
            .chain(['…'])
            .collect()
    } else {
        node.service.clone()
    };
    escape(out, &label);
    out.push_str("</text><title>");
    escape(
        out,
        &format!(
            "{}: {} spans, {} errors",
            node.service, node.spans, node.errors
        ),
    );
    out.push_str("</title></g>");
}

/// `a → b: 12 requests, 8% errors, median 3.1ms; 1 finding (lost-context)`.
fn edge_title(edge: &MapEdge) -> String {
    let mut title = format!(
        "{} → {}: {} requests, {:.0}% errors, median {}",
        edge.from,
        edge.to,
        edge.requests,
        edge.error_rate() * 100.0,
        super::format::format_duration(std::time::Duration::from_nanos(edge.median_ns))
    );
    if edge.findings_total > 0 {
        let mut rules: Vec<&str> = edge.findings.iter().map(|f| f.rule.id()).collect();
        rules.dedup();
        let _ = write!(
            title,
            "; {} findings ({})",
            edge.findings_total,
            rules.join(", ")
        );
    }
    title
}

impl ServiceMap {
    /// The map as JSON: `{"traces", "services": [{"service", "spans", "errors", "layer",
    /// "row"}], "edges": [{"from", "to", "requests", "errors", "error_rate", "median_ns",
    /// "severity", "lost", "findings": [as lens check --json prints them], "findings_total"}],
    /// "more_services", "more_edges"}`.
    pub fn to_json(&self) -> Json {
        json!({
            "traces": self.traces,
            "services": self.nodes.iter().map(|n| json!({
                "service": n.service,
                "spans": n.spans,
                "errors": n.errors,
                "layer": n.layer,
                "row": n.row,
            })).collect::<Vec<_>>(),
            "edges": self.edges.iter().map(|e| json!({
                "from": e.from,
                "to": e.to,
                "requests": e.requests,
                "errors": e.errors,
                "error_rate": e.error_rate(),
                "median_ns": e.median_ns,
                "severity": e.severity().map(Severity::name),
                "lost": e.is_lost(),
                "findings": e.findings.iter().map(Finding::to_value).collect::<Vec<_>>(),
                "findings_total": e.findings_total,
            })).collect::<Vec<_>>(),
            "more_services": self.more_services,
            "more_edges": self.more_edges,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use super::*;
    use crate::model::TraceId;
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
        assert!(some.edges.iter().all(|e| kept.contains(&e.from.as_str())
            && kept.contains(&e.to.as_str())
            && !e.is_lost()));
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
}
