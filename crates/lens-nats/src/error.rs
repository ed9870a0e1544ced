//! Errors of lens-nats's own operations.

/// Why [`Consumer::receive`](crate::Consumer::receive) returned no batch.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReceiveError {
    /// The pull request failed (async-nats's error, unchanged).
    #[error("pulling the batch failed: {0}")]
    Pull(#[from] async_nats::jetstream::consumer::pull::BatchError),
    /// The batch failed before any message arrived.
    #[error("the batch failed before any message arrived: {0}")]
    Message(#[source] async_nats::Error),
}
