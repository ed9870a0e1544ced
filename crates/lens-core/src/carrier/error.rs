//! [`CarrierError`]: why a JSON carrier was rejected.

#[cfg(doc)]
use crate::limits::Limits;

/// Why a JSON carrier was rejected (docs/propagation-rules.md#carriers). A rejected carrier is rejected whole.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CarrierError {
    /// The input is longer than [`Limits::carrier_bytes`]; nothing of it was parsed.
    #[error("JSON carrier of {len} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// Length of the input, in bytes.
        len: usize,
        /// The limit that applied, in bytes.
        limit: usize,
    },
    /// Some value is nested deeper than [`Limits::carrier_depth`] (the top-level object is level 1).
    #[error("JSON carrier nested deeper than {limit} levels")]
    TooDeep {
        /// The depth limit that applied.
        limit: usize,
    },
    /// The input is not valid UTF-8.
    #[error("JSON carrier is not valid UTF-8 (at byte {offset})")]
    NotUtf8 {
        /// Offset of the first byte that is not part of valid UTF-8.
        offset: usize,
    },
    /// The input is not strict JSON (RFC 8259).
    #[error("JSON carrier is not valid JSON at byte {offset}: {reason}")]
    InvalidJson {
        /// Byte offset at which the problem was found.
        offset: usize,
        /// What is wrong there.
        reason: &'static str,
    },
    /// The input is valid JSON, but its top-level value is not an object.
    #[error("JSON carrier is not a JSON object")]
    NotAnObject,
}

impl CarrierError {
    /// Whether the input was rejected for its size alone.
    pub fn is_too_large(&self) -> bool {
        matches!(self, CarrierError::TooLarge { .. })
    }

    /// Whether the input was rejected for its nesting depth.
    pub fn is_too_deep(&self) -> bool {
        matches!(self, CarrierError::TooDeep { .. })
    }

    /// Whether the input was rejected because it is not UTF-8.
    pub fn is_not_utf8(&self) -> bool {
        matches!(self, CarrierError::NotUtf8 { .. })
    }

    /// Whether the input was rejected because it is not strict JSON.
    pub fn is_invalid_json(&self) -> bool {
        matches!(self, CarrierError::InvalidJson { .. })
    }

    /// Whether the input was valid JSON whose top-level value is not an object.
    pub fn is_not_an_object(&self) -> bool {
        matches!(self, CarrierError::NotAnObject)
    }
}
