//! The `traceparent` header (W3C Trace Context, docs/propagation-rules.md#traceparent).
//!
//! ```
//! use lens_core::traceparent::TraceParent;
//!
//! let tp = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
//! assert!(tp.is_sampled());
//! assert_eq!(tp.trace_id.to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
//! assert_eq!(&tp.encode()[..], b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
//! ```

use std::fmt;

use opentelemetry::trace::{SpanContext, TraceFlags, TraceState};
use opentelemetry::{SpanId, TraceId};

use crate::lexical::{lower_hex_value, trim_ows};
use crate::limits::Limits;

/// Length of a version-00 traceparent.
pub const TRACEPARENT_LEN: usize = 55;

/// Trace flag bit: the caller may have recorded this trace.
pub const FLAG_SAMPLED: u8 = 0x01;
/// Trace flag bit (Trace Context Level 2): the trace-id's right-most 7 bytes are random.
pub const FLAG_RANDOM: u8 = 0x02;
/// The flag bits lens sends on; every other bit is 0 on outgoing headers (docs/propagation-rules.md#traceparent).
pub const KNOWN_FLAGS: u8 = FLAG_SAMPLED | FLAG_RANDOM;

/// The two lowercase hex digits of every byte.
const HEX_PAIRS: [[u8; 2]; 256] = {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut t = [[0u8; 2]; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = [HEX[i >> 4], HEX[i & 0x0f]];
        i += 1;
    }
    t
};

/// A parsed `traceparent` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TraceParent {
    /// Version as received (`0x00`..`0xfe`); lens always sends version `00`.
    pub version: u8,
    /// The trace id (never all zeros once parsed).
    pub trace_id: TraceId,
    /// The parent (span) id (never all zeros once parsed).
    pub parent_id: SpanId,
    /// Trace flags as received, unknown bits included.
    pub flags: u8,
}

/// Why a traceparent value was rejected. Each message names the rule of docs/propagation-rules.md#traceparent.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TraceParentError {
    /// Longer than the configured limit.
    #[error(
        "value is {len} bytes; at most {limit} bytes of a traceparent are examined (docs/propagation-rules.md#traceparent, docs/propagation-rules.md#limits)"
    )]
    TooLong {
        /// Length of the value.
        len: usize,
        /// The limit in force.
        limit: usize,
    },
    /// A control character other than leading/trailing space or tab.
    #[error(
        "control or non-ASCII character at byte {at}; only spaces and tabs around the value are ignored (docs/propagation-rules.md#traceparent)"
    )]
    InvalidCharacter {
        /// Byte offset in the trimmed value.
        at: usize,
    },
    /// The version field is not two lowercase hex digits.
    #[error("version must be two lowercase hex digits (docs/propagation-rules.md#traceparent)")]
    InvalidVersion,
    /// Version `ff` is forbidden.
    #[error("version ff is invalid (docs/propagation-rules.md#traceparent)")]
    ForbiddenVersion,
    /// Wrong length for the version.
    #[error(
        "a version-{version:02x} traceparent is exactly 55 characters (2HEX-32HEX-16HEX-2HEX); got {len} (docs/propagation-rules.md#traceparent)"
    )]
    WrongLength {
        /// Version of the value.
        version: u8,
        /// Length after trimming.
        len: usize,
    },
    /// A `-` is missing between fields.
    #[error(
        "fields must be separated by '-' at positions 2, 35 and 52 (docs/propagation-rules.md#traceparent)"
    )]
    MissingSeparator,
    /// The trace-id is not 32 lowercase hex digits.
    #[error("trace-id must be 32 lowercase hex digits (docs/propagation-rules.md#traceparent)")]
    InvalidTraceId,
    /// The trace-id is all zeros.
    #[error("trace-id is all zeros (docs/propagation-rules.md#traceparent)")]
    ZeroTraceId,
    /// The parent-id is not 16 lowercase hex digits.
    #[error("parent-id must be 16 lowercase hex digits (docs/propagation-rules.md#traceparent)")]
    InvalidParentId,
    /// The parent-id is all zeros.
    #[error("parent-id is all zeros (docs/propagation-rules.md#traceparent)")]
    ZeroParentId,
    /// The flags are not two lowercase hex digits.
    #[error("trace-flags must be two lowercase hex digits (docs/propagation-rules.md#traceparent)")]
    InvalidFlags,
    /// A higher version continues after the flags with something other than `-` and printable ASCII.
    #[error(
        "after the flags a version above 00 may continue only with '-' and printable ASCII (docs/propagation-rules.md#traceparent)"
    )]
    InvalidSuffix,
    /// Several traceparent lines with different values.
    #[error(
        "several traceparent lines with different values (docs/propagation-rules.md#traceparent)"
    )]
    ConflictingLines,
}

impl TraceParentError {
    /// The anchor of the rule it breaks in docs/propagation-rules.md (`traceparent-versions`,
    /// `traceparent-zero-ids`, ...), e.g. for a span attribute that says why a request started
    /// a new trace.
    ///
    /// ```
    /// use lens_core::traceparent::TraceParent;
    /// let e = TraceParent::parse("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap_err();
    /// assert_eq!(e.anchor(), "traceparent-versions");
    /// ```
    pub fn anchor(&self) -> &'static str {
        match self {
            TraceParentError::TooLong { .. } | TraceParentError::WrongLength { .. } => {
                "traceparent-length"
            }
            TraceParentError::InvalidCharacter { .. } => "traceparent-whitespace",
            TraceParentError::InvalidVersion | TraceParentError::ForbiddenVersion => {
                "traceparent-versions"
            }
            TraceParentError::ZeroTraceId | TraceParentError::ZeroParentId => {
                "traceparent-zero-ids"
            }
            TraceParentError::ConflictingLines => "traceparent-repeated",
            TraceParentError::MissingSeparator
            | TraceParentError::InvalidTraceId
            | TraceParentError::InvalidParentId
            | TraceParentError::InvalidFlags
            | TraceParentError::InvalidSuffix => "traceparent-format",
        }
    }
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// Decodes 8 lowercase hex digits into 4 bytes (little-endian in the result) eight digits at a
/// time; `None` when any byte is not a lowercase hex digit.
#[inline]
fn hex8(chunk: &[u8]) -> Option<u32> {
    let x = u64::from_le_bytes(chunk.try_into().ok()?);
    if x & HIGH_BITS != 0 {
        return None;
    }
    // Every byte is below 0x80, so adding at most 0x50 never carries into the next byte; the
    // high bit of each byte then says whether it reached the bound.
    let digit = (x + ONES * 0x50) & !(x + ONES * 0x46) & HIGH_BITS; // 0x30..=0x39
    let lower = (x + ONES * 0x1f) & !(x + ONES * 0x19) & HIGH_BITS; // 0x61..=0x66
    if digit | lower != HIGH_BITS {
        return None;
    }
    // '0'..'9' -> 0..9, 'a'..'f' -> 1..6 + 9.
    let nibbles = (x & (ONES * 0x0f)) + ((x >> 6) & ONES) * 9;
    // Byte 2j becomes (digit 2j << 4) | digit 2j+1; then the even bytes are packed together.
    let pairs = ((nibbles << 4) | (nibbles >> 8)) & 0x00ff_00ff_00ff_00ff;
    let packed = (pairs | (pairs >> 8)) & 0x0000_ffff_0000_ffff;
    // Only the low 32 bits are kept, on purpose.
    Some(((packed | (packed >> 16)) & 0xffff_ffff) as u32)
}

/// Decodes `8 * N` lowercase hex digits into `4 * N` bytes.
#[inline]
fn decode_hex<const N: usize, const B: usize>(s: &[u8]) -> Option<[u8; B]> {
    let mut out = [0u8; B];
    for (i, bytes) in out.chunks_exact_mut(4).enumerate().take(N) {
        bytes.copy_from_slice(&hex8(s.get(8 * i..8 * i + 8)?)?.to_le_bytes());
    }
    Some(out)
}

/// The common case: a version-00 value of exactly 55 valid bytes. `None` sends the value to the
/// full parser, which also says what is wrong.
#[inline]
fn parse_fast(v: &[u8]) -> Option<TraceParent> {
    if v.len() != TRACEPARENT_LEN
        || v[0] != b'0'
        || v[1] != b'0'
        || v[2] != b'-'
        || v[35] != b'-'
        || v[52] != b'-'
    {
        return None;
    }
    let trace_id = decode_hex::<4, 16>(&v[3..35])?;
    let parent_id = decode_hex::<2, 8>(&v[36..52])?;
    let flags = (lower_hex_value(v[53])? << 4) | lower_hex_value(v[54])?;
    if u128::from_ne_bytes(trace_id) == 0 || u64::from_ne_bytes(parent_id) == 0 {
        return None;
    }
    Some(TraceParent {
        version: 0,
        trace_id: TraceId::from_bytes(trace_id),
        parent_id: SpanId::from_bytes(parent_id),
        flags,
    })
}

#[inline]
fn parse_hex<const N: usize>(s: &[u8]) -> Option<[u8; N]> {
    let mut out = [0u8; N];
    if s.len() != N * 2 {
        return None;
    }
    for (i, byte) in out.iter_mut().enumerate() {
        let hi = lower_hex_value(s[2 * i])?;
        let lo = lower_hex_value(s[2 * i + 1])?;
        *byte = (hi << 4) | lo;
    }
    Some(out)
}

#[inline]
fn write_hex(out: &mut [u8], bytes: &[u8]) {
    for (pair, &b) in out.chunks_exact_mut(2).zip(bytes) {
        pair.copy_from_slice(&HEX_PAIRS[b as usize]);
    }
}

impl TraceParent {
    /// Parses one traceparent value with the default limit (512 bytes).
    pub fn parse(value: &str) -> Result<TraceParent, TraceParentError> {
        Self::parse_with_limit(value, Limits::DEFAULT.traceparent_bytes)
    }

    /// Parses one traceparent value, examining at most `limit` bytes.
    pub fn parse_with_limit(value: &str, limit: usize) -> Result<TraceParent, TraceParentError> {
        if value.len() > limit {
            return Err(TraceParentError::TooLong {
                len: value.len(),
                limit,
            });
        }
        let v = trim_ows(value).as_bytes();
        if let Some(tp) = parse_fast(v) {
            return Ok(tp);
        }
        if let Some(at) = v.iter().position(|&b| !(0x20..0x7f).contains(&b)) {
            return Err(TraceParentError::InvalidCharacter { at });
        }
        if v.len() < 2 {
            return Err(TraceParentError::InvalidVersion);
        }
        let version = match (lower_hex_value(v[0]), lower_hex_value(v[1])) {
            (Some(hi), Some(lo)) => (hi << 4) | lo,
            _ => return Err(TraceParentError::InvalidVersion),
        };
        if version == 0xff {
            return Err(TraceParentError::ForbiddenVersion);
        }
        if v.len() < TRACEPARENT_LEN || (version == 0 && v.len() != TRACEPARENT_LEN) {
            return Err(TraceParentError::WrongLength {
                version,
                len: v.len(),
            });
        }
        if v[2] != b'-' || v[35] != b'-' || v[52] != b'-' {
            return Err(TraceParentError::MissingSeparator);
        }
        let trace_id = parse_hex::<16>(&v[3..35]).ok_or(TraceParentError::InvalidTraceId)?;
        let parent_id = parse_hex::<8>(&v[36..52]).ok_or(TraceParentError::InvalidParentId)?;
        let flags = parse_hex::<1>(&v[53..55]).ok_or(TraceParentError::InvalidFlags)?[0];
        if v.len() > TRACEPARENT_LEN && v[TRACEPARENT_LEN] != b'-' {
            // Printable ASCII after the '-' was already checked above.
            return Err(TraceParentError::InvalidSuffix);
        }
        if trace_id == [0; 16] {
            return Err(TraceParentError::ZeroTraceId);
        }
        if parent_id == [0; 8] {
            return Err(TraceParentError::ZeroParentId);
        }
        Ok(TraceParent {
            version,
            trace_id: TraceId::from_bytes(trace_id),
            parent_id: SpanId::from_bytes(parent_id),
            flags,
        })
    }

    /// Parses all lines of a traceparent header: identical repeats count as one, lines that
    /// differ make the header invalid (docs/propagation-rules.md#traceparent).
    pub fn parse_lines<'a, I>(lines: I, limit: usize) -> Result<TraceParent, TraceParentError>
    where
        I: IntoIterator<Item = &'a str>,
    {
        let mut lines = lines.into_iter();
        let first = lines
            .next()
            .ok_or(TraceParentError::WrongLength { version: 0, len: 0 })?;
        for other in lines {
            if trim_ows(other) != trim_ows(first) {
                return Err(TraceParentError::ConflictingLines);
            }
        }
        Self::parse_with_limit(first, limit)
    }

    /// The traceparent of a span context, flags restricted to the bits lens sends on.
    /// `None` when the trace-id or span-id is all zeros (docs/propagation-rules.md#extract-and-inject).
    pub fn from_span_context(sc: &SpanContext) -> Option<TraceParent> {
        if sc.trace_id() == TraceId::INVALID || sc.span_id() == SpanId::INVALID {
            return None;
        }
        Some(TraceParent {
            version: 0,
            trace_id: sc.trace_id(),
            parent_id: sc.span_id(),
            flags: sc.trace_flags().to_u8() & KNOWN_FLAGS,
        })
    }

    /// A remote span context with these ids and flags (as received) and the given trace state.
    pub fn to_remote_span_context(&self, trace_state: TraceState) -> SpanContext {
        SpanContext::new(
            self.trace_id,
            self.parent_id,
            TraceFlags::new(self.flags),
            true,
            trace_state,
        )
    }

    /// Whether the sampled flag is set.
    pub fn is_sampled(&self) -> bool {
        self.flags & FLAG_SAMPLED != 0
    }

    /// Whether the random flag (Trace Context Level 2) is set.
    pub fn is_random(&self) -> bool {
        self.flags & FLAG_RANDOM != 0
    }

    /// Encodes as a version-00 value: `00-{trace_id}-{parent_id}-{flags}`, flags restricted to
    /// sampled and random (docs/propagation-rules.md#traceparent).
    pub fn encode(&self) -> [u8; TRACEPARENT_LEN] {
        let mut out = *b"00-00000000000000000000000000000000-0000000000000000-00";
        write_hex(&mut out[3..35], &self.trace_id.to_bytes());
        write_hex(&mut out[36..52], &self.parent_id.to_bytes());
        write_hex(&mut out[53..55], &[self.flags & KNOWN_FLAGS]);
        out
    }

    /// [`TraceParent::encode`] as a `String`.
    pub fn to_header_string(&self) -> String {
        let buf = self.encode();
        // `encode` writes ASCII only, so this never takes the empty fallback.
        std::str::from_utf8(&buf)
            .map(str::to_owned)
            .unwrap_or_default()
    }
}

impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_header_string())
    }
}

impl std::str::FromStr for TraceParent {
    type Err = TraceParentError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TraceParent::parse(s)
    }
}

#[cfg(test)]
mod tests {
    //! The fast path on its own: where it gives up, the full parser gives the same result, so
    //! only a direct look shows that it is taken and decodes right.
    #![allow(clippy::panic)]
    use super::{hex8, parse_fast};
    use crate::lexical::lower_hex_value;

    /// The lowercase hex of `bytes`.
    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn hex8_takes_exactly_lowercase_hex_digits_in_every_position() {
        for position in 0..8 {
            for b in 0..=255u8 {
                let mut chunk = *b"0f1e2d3c";
                chunk[position] = b;
                let expected = (|| {
                    let mut v = 0u32;
                    // Little-endian: the first two digits are the lowest byte.
                    for (i, pair) in chunk.chunks(2).enumerate() {
                        let byte = (lower_hex_value(pair[0])? << 4) | lower_hex_value(pair[1])?;
                        v |= u32::from(byte) << (8 * i);
                    }
                    Some(v)
                })();
                assert_eq!(hex8(&chunk), expected, "byte {b:#04x} at {position}");
            }
        }
    }

    #[test]
    fn the_fast_path_takes_every_valid_version_00_value_of_55_bytes() {
        // Ids from a simple generator: every hex digit turns up in every position.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            state
        };
        for round in 0..512 {
            let trace_id: u128 = (u128::from(next()) << 64) | u128::from(next());
            let parent_id = next() | 1;
            let flags = (round % 256) as u8;
            let value = format!(
                "00-{}-{}-{flags:02x}",
                hex(&trace_id.to_be_bytes()),
                hex(&parent_id.to_be_bytes())
            );
            let parsed = parse_fast(value.as_bytes());
            let parsed = parsed.unwrap_or_else(|| panic!("declined {value}"));
            assert_eq!(
                parsed.trace_id.to_bytes(),
                trace_id.to_be_bytes(),
                "{value}"
            );
            assert_eq!(
                parsed.parent_id.to_bytes(),
                parent_id.to_be_bytes(),
                "{value}"
            );
            assert_eq!((parsed.version, parsed.flags), (0, flags), "{value}");
        }
    }

    #[test]
    fn the_fast_path_declines_what_the_full_parser_must_judge() {
        let valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert!(parse_fast(valid.as_bytes()).is_some());
        for value in [
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            " 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert!(parse_fast(value.as_bytes()).is_none(), "{value}");
        }
    }
}
