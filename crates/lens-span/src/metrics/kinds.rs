//! [`Instruments`]: the kinds of call, their duration buckets, and the metric attribute keys
//! the conventions name for each.

use opentelemetry_semantic_conventions::attribute as attr;

use crate::rpc::RpcConventions;

/// The `ExplicitBucketBoundaries` advice of the semantic conventions for durations in seconds.
pub const DURATION_BUCKETS_S: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];

/// The same boundaries in milliseconds, for the RPC durations before the `rpc` opt-in.
pub(super) const DURATION_BUCKETS_MS: [f64; 14] = [
    5.0, 10.0, 25.0, 50.0, 75.0, 100.0, 250.0, 500.0, 750.0, 1000.0, 2500.0, 5000.0, 7500.0,
    10000.0,
];

/// Which instruments an adapter records: its kind of call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Instruments {
    /// `http.server.*` (lens-axum).
    HttpServer,
    /// `http.client.*` (lens-reqwest).
    HttpClient,
    /// `rpc.server.*` under these conventions (lens-tonic's server layer).
    RpcServer(RpcConventions),
    /// `rpc.client.*` under these conventions (lens-tonic's client side).
    RpcClient(RpcConventions),
    /// `messaging.*` (the messaging lifecycle, [`crate::messaging`]; lens-nats).
    Messaging,
}

/// At most this many attributes per data point: the largest set (messaging) is 10.
pub(super) const MAX_ATTRIBUTES: usize = 10;

/// The metric attributes of each kind of call, in the order every data point has them (the SDK
/// finds an existing series without allocating when the order is the same each time).
#[allow(deprecated)] // the legacy RPC keys
pub(super) const HTTP_SERVER_KEYS: [&str; 6] = [
    attr::HTTP_REQUEST_METHOD,
    attr::URL_SCHEME,
    attr::HTTP_ROUTE,
    attr::NETWORK_PROTOCOL_VERSION,
    attr::HTTP_RESPONSE_STATUS_CODE,
    attr::ERROR_TYPE,
];
pub(super) const HTTP_CLIENT_KEYS: [&str; 6] = [
    attr::HTTP_REQUEST_METHOD,
    attr::SERVER_ADDRESS,
    attr::SERVER_PORT,
    attr::NETWORK_PROTOCOL_VERSION,
    attr::HTTP_RESPONSE_STATUS_CODE,
    attr::ERROR_TYPE,
];
#[allow(deprecated)] // the legacy RPC keys
pub(super) const RPC_KEYS: [&str; 9] = [
    attr::RPC_SYSTEM,
    attr::RPC_SERVICE,
    attr::RPC_SYSTEM_NAME,
    attr::RPC_METHOD,
    attr::RPC_GRPC_STATUS_CODE,
    attr::RPC_RESPONSE_STATUS_CODE,
    attr::ERROR_TYPE,
    // Clients only.
    attr::SERVER_ADDRESS,
    attr::SERVER_PORT,
];
pub(super) const MESSAGING_KEYS: [&str; MAX_ATTRIBUTES] = [
    attr::MESSAGING_SYSTEM,
    attr::MESSAGING_OPERATION_NAME,
    attr::MESSAGING_OPERATION_TYPE,
    attr::MESSAGING_DESTINATION_NAME,
    attr::MESSAGING_DESTINATION_TEMPLATE,
    attr::MESSAGING_CONSUMER_GROUP_NAME,
    attr::MESSAGING_DESTINATION_SUBSCRIPTION_NAME,
    attr::ERROR_TYPE,
    attr::SERVER_ADDRESS,
    attr::SERVER_PORT,
];
/// The RPC keys of a server: all but `server.address` and `server.port`.
pub(super) const RPC_SERVER_KEYS: usize = 7;

impl Instruments {
    /// The metric attributes of this kind of call, in order.
    pub(super) fn keys(self) -> &'static [&'static str] {
        match self {
            Instruments::HttpServer => &HTTP_SERVER_KEYS,
            Instruments::HttpClient => &HTTP_CLIENT_KEYS,
            Instruments::RpcServer(_) => &RPC_KEYS[..RPC_SERVER_KEYS],
            Instruments::RpcClient(_) => &RPC_KEYS,
            Instruments::Messaging => &MESSAGING_KEYS,
        }
    }

    /// Where the span attribute `key` goes among this kind's metric attributes, if it is one.
    pub(super) fn slot(self, key: &str) -> Option<usize> {
        self.keys().iter().position(|k| *k == key)
    }

    /// Whether the span attribute `key` is a metric attribute of this kind of call.
    #[cfg(test)]
    pub(super) fn keeps(self, key: &opentelemetry::Key) -> bool {
        self.slot(key.as_str()).is_some()
    }

    /// Whether `key` is an attribute of `http.server.active_requests`.
    pub(super) fn keeps_active(key: &str) -> bool {
        matches!(key, attr::HTTP_REQUEST_METHOD | attr::URL_SCHEME)
    }
}
