//! The rows of docs/propagation-rules.md#differences-from-nemo-lens (where lens knowingly differs from NeMo Lens 0.1.0) that the scenarios
//! show, named by their first column.

pub(crate) const FLAG_BITS: &str = "unknown trace-flag bits";
pub(crate) const ZERO_IDS: &str =
    "a span context with an all-zero trace-id or span-id, flags `01` or remote";
pub(crate) const TRACESTATE_KEYS: &str =
    "tracestate keys `1abc`, `t@1v`, `foo@@bar`, 14+ chars after `@`";
pub(crate) const SPACE_ON_INJECT: &str = "baggage space on inject";
pub(crate) const PLUS_INCOMING: &str = "`+` in an incoming baggage value";
pub(crate) const PADDED_VALUE: &str = "percent-encoded spaces at the ends of a baggage value";
pub(crate) const PROPERTIES: &str = "baggage properties `k=v;p`";
