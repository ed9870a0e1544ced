//! A service map built from the spans held and the doctor's findings, within its bounds.

use std::collections::HashMap;

use crate::diagnose::Finding;
use crate::model::{Span, SpanId, SpanKind, Status};

use super::graph::{MapBounds, MapEdge, MapNode, ServiceMap};
use super::layers::layout;

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
pub(super) fn median(values: &mut [u64]) -> u64 {
    if values.is_empty() {
        return 0;
    }
    let middle = (values.len() - 1) / 2;
    *values.select_nth_unstable(middle).1
}
