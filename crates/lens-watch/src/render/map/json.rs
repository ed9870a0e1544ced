//! The service map as JSON ([`ServiceMap::to_json`]).

use serde_json::{Value as Json, json};

use crate::diagnose::{Finding, Severity};

use super::graph::ServiceMap;

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
