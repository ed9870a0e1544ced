//! How the adapter is built for one scenario, and which side and conventions it has.

use lens_core::policy::InboundDecision;

/// Which conventions the adapter's metrics follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// `http.server.*` / `http.client.*`.
    Http,
    /// `rpc.server.*` / `rpc.client.*` (either or both of the RPC conventions).
    Grpc,
}

/// Which side of a call the adapter is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// A SERVER span per request; `Setup::decision` applies.
    Server,
    /// A CLIENT span per call; injects into the request.
    Client,
}

/// How the adapter is built for one scenario.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    /// Servers: the inbound policy's decision for every request.
    pub decision: InboundDecision,
    /// The random flag on new traces knob.
    pub random_flag_on_new_traces: bool,
    /// Name every span [`SPAN_NAME`](super::SPAN_NAME).
    pub named: bool,
    /// Install the request and response attribute hooks.
    pub hooks: bool,
    /// Install the suite's classifier (the caller's error is the only failure) and failure hook.
    pub classified: bool,
    /// Record metrics (with every opt-in instrument the adapter has).
    pub metrics: bool,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            decision: InboundDecision::Trust,
            random_flag_on_new_traces: true,
            named: false,
            hooks: false,
            classified: false,
            metrics: false,
        }
    }
}
