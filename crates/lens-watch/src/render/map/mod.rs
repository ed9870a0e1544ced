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
//!
//! [`Span::parent_is_remote`]: crate::model::Span::parent_is_remote

mod build;
mod graph;
mod json;
mod layers;
mod svg;

pub use graph::{MapBounds, MapEdge, MapNode, ServiceMap};

#[cfg(test)]
mod tests;
