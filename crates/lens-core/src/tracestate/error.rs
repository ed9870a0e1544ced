//! Why a tracestate was dropped.

/// Why a tracestate was dropped. Each message names the rule of docs/propagation-rules.md#tracestate.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TraceStateError {
    /// More bytes than the limit.
    #[error(
        "tracestate is {len} bytes; more than {limit} drops the whole tracestate (docs/propagation-rules.md#tracestate, docs/propagation-rules.md#limits)"
    )]
    TooLong {
        /// Bytes seen (all lines joined by ',').
        len: usize,
        /// The limit in force.
        limit: usize,
    },
    /// More members than the limit.
    #[error(
        "more than {limit} list members drops the whole tracestate (docs/propagation-rules.md#tracestate, docs/propagation-rules.md#limits)"
    )]
    TooManyMembers {
        /// The limit in force.
        limit: usize,
    },
    /// A member without `=`.
    #[error("member {member:?} has no '=' (docs/propagation-rules.md#tracestate)")]
    MissingEquals {
        /// The member as received.
        member: String,
    },
    /// A key outside the grammar.
    #[error(
        "key {key:?} is invalid: a lowercase letter or digit, then up to 255 of a-z 0-9 _ - * / @ (docs/propagation-rules.md#tracestate)"
    )]
    InvalidKey {
        /// The key as received.
        key: String,
    },
    /// A value outside the grammar.
    #[error(
        "value {value:?} is invalid: 1 to 256 printable ASCII characters except ',' and '=', ending in a non-space (docs/propagation-rules.md#tracestate)"
    )]
    InvalidValue {
        /// The value as received.
        value: String,
    },
}
