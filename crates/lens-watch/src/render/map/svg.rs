//! The service map as one inline SVG drawing ([`ServiceMap::svg`]): no script, no external
//! asset.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::diagnose::Severity;
use crate::render::html::escape;

use super::graph::{MapEdge, MapNode, ServiceMap};

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
        crate::render::format::format_duration(std::time::Duration::from_nanos(edge.median_ns))
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
