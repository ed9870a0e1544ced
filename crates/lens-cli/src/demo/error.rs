//! What can go wrong while the demo runs.

use lens_dist::DistError;

/// What can go wrong while the demo runs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum DemoError {
    /// A demo server could not listen on 127.0.0.1.
    #[error("cannot listen on 127.0.0.1: {0}")]
    Bind(#[from] std::io::Error),
    /// An HTTP call failed.
    #[error("HTTP call to {service} failed: {message}")]
    Http {
        /// The called service.
        service: &'static str,
        /// What failed.
        message: String,
    },
    /// The gRPC call to the trainer failed.
    #[error("gRPC call to the trainer failed: {0}")]
    Grpc(#[from] tonic::Status),
    /// The trace-context broadcast between ranks failed.
    #[error("broadcast between ranks failed: {0}")]
    Dist(#[from] DistError),
    /// The gRPC channel to the trainer could not be set up.
    #[error("gRPC channel: {0}")]
    Channel(String),
    /// The trainer could not publish its rollout job, or the worker could not subscribe.
    #[error("NATS: {0}")]
    Nats(String),
    /// A pipeline rank failed.
    #[error("pipeline rank {rank}: {message}")]
    Rank {
        /// The rank.
        rank: usize,
        /// What failed.
        message: String,
    },
}
