//! Errors of the frame codec.

use lens_core::CarrierError;

/// Why a context frame could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// Even the traceparent alone, with all baggage and the tracestate dropped, does not fit.
    #[error(
        "trace context does not fit in a {capacity}-byte frame: the traceparent alone needs {needed} bytes (header included)"
    )]
    TooLarge {
        /// Bytes the smallest encoding (traceparent only) needs, header included.
        needed: usize,
        /// The frame capacity, header included.
        capacity: usize,
    },
    /// A frame capacity outside what the format and the receiver's limits allow.
    #[error("frame capacity {capacity} is out of range ({min}..={max} bytes)")]
    CapacityOutOfRange {
        /// The capacity asked for.
        capacity: usize,
        /// Smallest capacity: the header and `{}`.
        min: usize,
        /// Largest capacity: the header and the JSON carrier limit of the receiver.
        max: usize,
    },
}

/// Why a received frame was not used (the caller's current Context is used instead).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameDecodeError {
    /// Shorter than its header, or than the length its header gives.
    #[error("truncated context frame: {len} bytes, {needed} needed")]
    Truncated {
        /// Bytes received.
        len: usize,
        /// Bytes the frame needs.
        needed: usize,
    },
    /// Not a lens context frame (wrong magic).
    #[error("not a lens context frame (magic {found:02x?})")]
    Foreign {
        /// The first four bytes found.
        found: [u8; 4],
    },
    /// A lens frame of a version this build does not read.
    #[error("unsupported context frame version {0}")]
    UnsupportedVersion(u16),
    /// The header or the checksum does not match the bytes.
    #[error("corrupt context frame: {0}")]
    Corrupt(&'static str),
    /// The bytes inside the frame are not a carrier (docs/propagation-rules.md#carriers).
    #[error("context frame holds no valid carrier: {0}")]
    Carrier(#[from] CarrierError),
}
