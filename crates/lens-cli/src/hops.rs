//! How lens names its own hops: the instrumentation scopes whose spans with a remote parent are
//! a known kind of crossing, for every waterfall the commands draw.

use lens_watch::render::HopNames;

/// The instrumentation scope of the pipeline-rank spans (lens-dist's broadcast): a span of
/// this scope with a remote parent got its context through the trace-context broadcast.
pub(crate) const BROADCAST_SCOPE: &str = "lens-dist";

/// lens' scopes whose remote-parent spans are a known kind of hop.
pub(crate) const HOP_NAMES: HopNames<'static> = HopNames {
    scopes: &[
        (lens_tonic::RAY_TRACER_NAME, "remote call"),
        (BROADCAST_SCOPE, "broadcast"),
    ],
};
