//! [`DistError`]: what can go wrong in a collective or a trace-context broadcast.

use std::borrow::Cow;

use lens_core::CarrierError;

/// Why a collective operation or [`broadcast_trace_context`](crate::broadcast_trace_context)
/// failed.
///
/// Errors that every rank detects alike (an invalid source rank, a length over the limit, bytes
/// that are not a carrier) are returned on every rank after the collective calls they depend on
/// have completed, so no rank is left waiting in a collective the others skipped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DistError {
    /// The collective engine cannot be used here: its library is missing at run time, it is
    /// already initialised, or there is no device. Nothing was sent.
    #[error("{backend} is unavailable: {reason}")]
    Unavailable {
        /// The backend: `"MPI"` or `"NCCL"`.
        backend: &'static str,
        /// What is missing, and what to install or check.
        reason: Cow<'static, str>,
    },
    /// A rank argument is out of range for the communicator, or `rank` is not the caller's rank.
    #[error("invalid {what} {rank} for a communicator of {size} ranks (this rank is {own})")]
    InvalidRank {
        /// Which argument: `"source rank"`, `"root rank"` or `"rank"`.
        what: &'static str,
        /// The value given.
        rank: usize,
        /// The communicator's size.
        size: usize,
        /// The caller's own rank in the communicator.
        own: usize,
    },
    /// The broadcast length is negative or larger than the JSON carrier limit
    /// ([`lens_core::Limits::carrier_bytes`]); every rank skipped the byte broadcast.
    #[error("broadcast trace context length {len} is outside 0..={limit} bytes")]
    InvalidLength {
        /// The length that was broadcast.
        len: i64,
        /// The carrier limit that applied.
        limit: usize,
    },
    /// The bytes broadcast from the source are not a JSON carrier (docs/propagation-rules.md#carriers). Every rank but
    /// the source received the same bytes and returns the same error.
    #[error("broadcast trace context is not a valid carrier: {0}")]
    Carrier(#[from] CarrierError),
    /// The collective engine reported an error, or the ranks disagree about the operation.
    #[error("{backend} {operation} failed: {message}")]
    Collective {
        /// The backend: `"MPI"`, `"NCCL"` or `"thread group"`.
        backend: &'static str,
        /// The operation: `"broadcast_i64"`, `"broadcast_bytes"`, `"init"`.
        operation: &'static str,
        /// What went wrong.
        message: Cow<'static, str>,
    },
}

impl DistError {
    /// Whether the backend is unavailable on this machine (nothing was sent).
    pub fn is_unavailable(&self) -> bool {
        matches!(self, DistError::Unavailable { .. })
    }
}
