//! The fixed-size context frame that travels beside a tensor.
//!
//! Layout (little-endian):
//!
//! | bytes | field |
//! | --- | --- |
//! | 0..4 | magic `LNCF` |
//! | 4..6 | version (1) |
//! | 6..8 | reserved, 0 |
//! | 8..12 | length of the JSON bytes |
//! | 12..16 | FNV-1a (32-bit) checksum of the JSON bytes |
//! | 16..16+length | the JSON bytes of [`crate::serialize_context_from`] |
//! | rest | zeros, up to the frame capacity |

use lens_core::{Carrier, Limits};
use opentelemetry::Context;

use crate::context_bytes::context_carrier;
use crate::error::{FrameDecodeError, FrameError};

/// Default frame capacity, header included: 4 KiB.
pub const DEFAULT_FRAME_CAPACITY: usize = 4096;
/// Length of the frame header.
pub const FRAME_HEADER_LEN: usize = 16;
/// The first four bytes of every frame.
pub const FRAME_MAGIC: [u8; 4] = *b"LNCF";
/// The frame version this build writes and reads.
pub const FRAME_VERSION: u16 = 1;

const BAGGAGE: &str = "baggage";
const TRACESTATE: &str = "tracestate";

/// What [`FrameCodec::encode_into`] put in the frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FrameEncoding {
    /// Length of the JSON bytes in the frame.
    pub json_len: usize,
    /// Baggage members left out (from the end of the list) so that the frame fits.
    pub baggage_members_dropped: usize,
    /// Whether the tracestate was left out so that the frame fits.
    pub tracestate_dropped: bool,
}

impl FrameEncoding {
    /// Whether the whole context fit.
    pub fn is_complete(&self) -> bool {
        self.baggage_members_dropped == 0 && !self.tracestate_dropped
    }
}

/// Encodes and decodes fixed-size context frames.
///
/// ```
/// use lens_nccl::{FrameCodec, FRAME_HEADER_LEN};
/// use opentelemetry::Context;
///
/// let codec = FrameCodec::with_capacity(256)?;
/// let mut frame = Vec::new();
/// let encoding = codec.encode_into(&Context::new(), &mut frame)?;
/// assert_eq!(frame.len(), 256);
/// assert_eq!(codec.payload(&frame).unwrap(), b"{}");
/// assert_eq!(encoding.json_len, 2);
///
/// // A frame cut short, or bytes that are not a frame, give the caller's current Context.
/// let _ = codec.extract(&frame[..FRAME_HEADER_LEN]);
/// # Ok::<(), lens_nccl::FrameError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameCodec {
    capacity: usize,
    limits: Limits,
}

impl Default for FrameCodec {
    fn default() -> Self {
        Self::new()
    }
}

impl FrameCodec {
    /// Frames of [`DEFAULT_FRAME_CAPACITY`] bytes, decoded within the default [`Limits`].
    pub const fn new() -> Self {
        FrameCodec {
            capacity: DEFAULT_FRAME_CAPACITY,
            limits: Limits::DEFAULT,
        }
    }

    /// Frames of `capacity` bytes, header included: at least [`FRAME_HEADER_LEN`] + 2, at most
    /// [`FRAME_HEADER_LEN`] + the JSON carrier limit (64 KiB by default).
    pub fn with_capacity(capacity: usize) -> Result<Self, FrameError> {
        Self::new().and_capacity(capacity)
    }

    /// Sets the limits used to decode the JSON bytes; the capacity must stay within them.
    pub fn with_limits(self, limits: Limits) -> Result<Self, FrameError> {
        FrameCodec {
            capacity: self.capacity,
            limits,
        }
        .and_capacity(self.capacity)
    }

    fn and_capacity(mut self, capacity: usize) -> Result<Self, FrameError> {
        let min = FRAME_HEADER_LEN + 2;
        let max = FRAME_HEADER_LEN + self.limits.carrier_bytes.min(u32::MAX as usize);
        if !(min..=max).contains(&capacity) {
            return Err(FrameError::CapacityOutOfRange { capacity, min, max });
        }
        self.capacity = capacity;
        Ok(self)
    }

    /// The frame size, header included.
    pub const fn capacity(&self) -> usize {
        self.capacity
    }

    /// The most JSON bytes a frame holds.
    pub const fn payload_capacity(&self) -> usize {
        self.capacity - FRAME_HEADER_LEN
    }

    /// The limits used to decode.
    pub const fn limits(&self) -> &Limits {
        &self.limits
    }

    /// A frame of [`FrameCodec::capacity`] bytes for `cx`.
    pub fn encode(&self, cx: &Context) -> Result<Vec<u8>, FrameError> {
        let mut frame = Vec::new();
        self.encode_into(cx, &mut frame)?;
        Ok(frame)
    }

    /// Replaces the contents of `frame` with a frame for `cx` ([`FrameCodec::capacity`] bytes;
    /// reuse the buffer across calls).
    ///
    /// When the context does not fit: baggage members are left out from the end of the list until
    /// it fits; if none fits, all baggage and then the tracestate are left out; the traceparent
    /// never is. If even the traceparent alone does not fit: [`FrameError::TooLarge`] (and
    /// `frame` holds no valid frame).
    pub fn encode_into(
        &self,
        cx: &Context,
        frame: &mut Vec<u8>,
    ) -> Result<FrameEncoding, FrameError> {
        let carrier = context_carrier(cx);
        frame.clear();
        frame.reserve(self.capacity);
        let mut encoding = FrameEncoding::default();
        if !self.write_carrier(&carrier, frame) {
            self.fit(carrier, frame, &mut encoding)?;
        }
        let json_len = frame.len() - FRAME_HEADER_LEN;
        encoding.json_len = json_len;
        let checksum = fnv1a(&frame[FRAME_HEADER_LEN..]);
        frame[0..4].copy_from_slice(&FRAME_MAGIC);
        frame[4..6].copy_from_slice(&FRAME_VERSION.to_le_bytes());
        frame[6..8].copy_from_slice(&[0, 0]);
        // `json_len` <= capacity <= u32::MAX (checked when the capacity was set).
        frame[8..12].copy_from_slice(&(json_len as u32).to_le_bytes());
        frame[12..16].copy_from_slice(&checksum.to_le_bytes());
        frame.resize(self.capacity, 0);
        Ok(encoding)
    }

    /// Writes the header placeholder and `carrier`'s JSON into `frame`; whether it fits.
    fn write_carrier(&self, carrier: &Carrier, frame: &mut Vec<u8>) -> bool {
        frame.clear();
        frame.extend_from_slice(&[0; FRAME_HEADER_LEN]);
        carrier.write_json(frame);
        frame.len() <= self.capacity
    }

    /// Leaves out baggage members from the end, then the tracestate, until the carrier fits.
    fn fit(
        &self,
        mut carrier: Carrier,
        frame: &mut Vec<u8>,
        encoding: &mut FrameEncoding,
    ) -> Result<(), FrameError> {
        if let Some(lines) = carrier.remove(BAGGAGE) {
            let header = lines.join(",");
            let members: Vec<&str> = header.split(',').collect();
            // The longest prefix of members that fits (binary search: fits(0) is checked below).
            let (mut lo, mut hi) = (0, members.len());
            let mut trial = carrier.clone();
            while lo < hi {
                let mid = (lo + hi).div_ceil(2);
                trial.insert(BAGGAGE, members[..mid].join(","));
                if self.write_carrier(&trial, frame) {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            encoding.baggage_members_dropped = members.len() - lo;
            if lo > 0 {
                carrier.insert(BAGGAGE, members[..lo].join(","));
            }
            if self.write_carrier(&carrier, frame) {
                return Ok(());
            }
        }
        if carrier.remove(TRACESTATE).is_some() {
            encoding.tracestate_dropped = true;
            if self.write_carrier(&carrier, frame) {
                return Ok(());
            }
        }
        Err(FrameError::TooLarge {
            needed: frame.len(),
            capacity: self.capacity,
        })
    }

    /// The JSON bytes in `frame`, after checking its header and checksum.
    ///
    /// A frame longer than its header says (a receive buffer larger than the sender's frame) is
    /// fine; one shorter is [`FrameDecodeError::Truncated`].
    pub fn payload<'a>(&self, frame: &'a [u8]) -> Result<&'a [u8], FrameDecodeError> {
        let Some(header) = frame.first_chunk::<FRAME_HEADER_LEN>() else {
            return Err(FrameDecodeError::Truncated {
                len: frame.len(),
                needed: FRAME_HEADER_LEN,
            });
        };
        let [
            m0,
            m1,
            m2,
            m3,
            v0,
            v1,
            r0,
            r1,
            l0,
            l1,
            l2,
            l3,
            c0,
            c1,
            c2,
            c3,
        ] = *header;
        if [m0, m1, m2, m3] != FRAME_MAGIC {
            return Err(FrameDecodeError::Foreign {
                found: [m0, m1, m2, m3],
            });
        }
        let version = u16::from_le_bytes([v0, v1]);
        if version != FRAME_VERSION {
            return Err(FrameDecodeError::UnsupportedVersion(version));
        }
        if [r0, r1] != [0, 0] {
            return Err(FrameDecodeError::Corrupt(
                "reserved header bytes are not zero",
            ));
        }
        let len = u32::from_le_bytes([l0, l1, l2, l3]) as usize;
        let needed = FRAME_HEADER_LEN.saturating_add(len);
        let Some(json) = frame.get(FRAME_HEADER_LEN..needed) else {
            return Err(FrameDecodeError::Truncated {
                len: frame.len(),
                needed,
            });
        };
        if fnv1a(json) != u32::from_le_bytes([c0, c1, c2, c3]) {
            return Err(FrameDecodeError::Corrupt("checksum mismatch"));
        }
        Ok(json)
    }

    /// The carrier in `frame` ([`FrameCodec::payload`], then the JSON carrier within the limits).
    pub fn decode(&self, frame: &[u8]) -> Result<Carrier, FrameDecodeError> {
        let json = self.payload(frame)?;
        Ok(Carrier::from_json_bytes_with_limits(json, &self.limits)?)
    }

    /// The Context in `frame`, extracted from an empty Context; the caller's current Context
    /// when the frame is truncated, corrupt, foreign or holds no valid carrier (as Python's
    /// `extract_nccl_context` does for bad bytes).
    pub fn extract(&self, frame: &[u8]) -> Context {
        lens_core::extract_carrier_context(self.decode(frame).ok().as_ref())
    }
}

/// 32-bit FNV-1a.
fn fnv1a(bytes: &[u8]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for &b in bytes {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}
