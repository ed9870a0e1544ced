//! How a hop is named: the kind of context crossing that gave a span its remote parent.

use crate::model::Span;

/// How hops are named: instrumentation scopes whose spans with a remote parent are a known kind
/// of crossing (for lens: `("nemo.lens.ray", "remote call")`, `("lens-dist", "broadcast")`).
/// Spans with RPC or HTTP attributes are `grpc`/the RPC system and `http` whatever their scope.
#[derive(Clone, Copy, Debug, Default)]
pub struct HopNames<'a> {
    /// (scope name, label) pairs.
    pub scopes: &'a [(&'a str, &'a str)],
}

/// The kind of context crossing that gave `span` its remote parent, if it has one: the RPC
/// system (`rpc.system` or `rpc.system.name`, e.g. `grpc`), `http` (stable or older HTTP
/// conventions), `messaging` (a message's consumer), else the label of its scope in `names`,
/// else the scope's name.
pub fn hop_label<'a>(span: &'a Span, names: HopNames<'a>) -> Option<&'a str> {
    if span.parent_is_remote() != Some(true) || span.parent_span_id.is_none() {
        return None;
    }
    let rpc = span
        .attribute("rpc.system.name")
        .or_else(|| span.attribute("rpc.system"));
    if let Some(system) = rpc {
        return Some(system.as_str().unwrap_or("rpc"));
    }
    if span.attribute("http.request.method").is_some() || span.attribute("http.method").is_some() {
        return Some("http");
    }
    // A message's consumer (current and older messaging conventions: `messaging.system`, or a
    // destination only, as celery writes it).
    if span.attribute("messaging.system").is_some()
        || span.attribute("messaging.destination.name").is_some()
        || span.attribute("messaging.destination").is_some()
    {
        return Some("messaging");
    }
    let scope = span.scope.name.as_str();
    Some(
        names
            .scopes
            .iter()
            .find(|(name, _)| *name == scope)
            .map_or(scope, |(_, label)| label),
    )
}
