//! What a service map holds: its bounds, its services ([`MapNode`]) and hops ([`MapEdge`]).

use crate::diagnose::{Finding, Rule, Severity};

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
