//! The context frame: the message's context as one frame of a multipart message.
//!
//! | position | the last frame of the message |
//! | --- | --- |
//! | bytes | [`CONTEXT_FRAME_MARKER`] (10 bytes: `\x00lens-ctx\x01`), then NeMo Lens's `serialize_context()` bytes |
//!
//! The last frame, not the first: a ROUTER socket puts the peer's routing id in front of what
//! it receives, a SUB socket matches its subscriptions against the first frame, and a REQ
//! envelope has its empty delimiter there; after the payload the context frame is out of
//! every envelope's way. The marker tells it from a payload frame: it starts with a NUL byte,
//! which no JSON text, no msgpack map or array and no text a peer is likely to send begins
//! with, then `lens-ctx`, then the format's version (1); a receiver compares all ten bytes.

use lens_core::carrier::{Carrier, CarrierField};
use lens_core::{CarrierError, Limits};

/// The first bytes of every context frame: `\x00lens-ctx` and the format version `\x01`.
pub const CONTEXT_FRAME_MARKER: &[u8; 10] = b"\x00lens-ctx\x01";

/// Whether `frame` is a context frame (starts with [`CONTEXT_FRAME_MARKER`]).
#[inline]
pub fn is_context_frame(frame: &[u8]) -> bool {
    frame.starts_with(CONTEXT_FRAME_MARKER)
}

/// The context frame of `carrier`: the marker, then the carrier's JSON bytes exactly as NeMo
/// Lens's `serialize_context()` (Python's `json.dumps`) writes them.
///
/// ```
/// use lens_core::Carrier;
/// use lens_zmq::frame::{context_frame, CONTEXT_FRAME_MARKER};
///
/// let mut carrier = Carrier::new();
/// carrier.insert("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
/// let frame = context_frame(&carrier);
/// assert_eq!(&frame[..10], CONTEXT_FRAME_MARKER);
/// assert_eq!(&frame[10..], br#"{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}"#);
/// ```
pub fn context_frame(carrier: &Carrier) -> Vec<u8> {
    // Sized for the JSON without escapes (`{}`, per key `"k": "v", `): one allocation, usually.
    let json: usize = carrier
        .iter()
        .map(|(k, lines)| k.len() + 8 + lines.iter().map(|l| l.len() + 4).sum::<usize>())
        .sum();
    let mut frame = Vec::with_capacity(CONTEXT_FRAME_MARKER.len() + 2 + json);
    frame.extend_from_slice(CONTEXT_FRAME_MARKER);
    carrier.write_json(&mut frame);
    frame
}

/// Reads a context frame within `limits`: `None` when `frame` is not one (a payload frame),
/// else the carrier its JSON bytes hold or why they were rejected (not UTF-8, not JSON, not an
/// object, over the limits: docs/propagation-rules.md#json-carrier-rejected).
///
/// ```
/// use lens_zmq::frame::read_context_frame;
///
/// assert!(read_context_frame(b"payload", &lens_core::Limits::DEFAULT).is_none());
/// let field = read_context_frame(b"\x00lens-ctx\x01[1]", &lens_core::Limits::DEFAULT).unwrap();
/// assert!(field.rejection().is_some_and(|e| e.is_not_an_object()));
/// ```
pub fn read_context_frame(frame: &[u8], limits: &Limits) -> Option<CarrierField> {
    let json = frame.strip_prefix(CONTEXT_FRAME_MARKER.as_slice())?;
    Some(match Carrier::from_json_bytes_with_limits(json, limits) {
        Ok(carrier) => CarrierField::Carrier(carrier),
        Err(error) => CarrierField::Rejected(error),
    })
}

/// Takes the context frame off the end of `frames` when the last frame is one, and reads it
/// ([`read_context_frame`]); a message without one is left as it is and gives
/// [`CarrierField::Absent`]. Only the last frame is looked at: a payload frame that happens to
/// start with the marker elsewhere in the message stays a payload frame.
///
/// ```
/// use lens_zmq::frame::take_context_frame;
///
/// let mut frames = vec![b"topic".to_vec(), b"payload".to_vec()];
/// assert!(take_context_frame(&mut frames, &lens_core::Limits::DEFAULT).is_absent());
/// assert_eq!(frames.len(), 2); // delivered as sent
///
/// frames.push(b"\x00lens-ctx\x01{\"traceparent\": \"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\"}".to_vec());
/// let field = take_context_frame(&mut frames, &lens_core::Limits::DEFAULT);
/// assert!(field.carrier().is_some_and(|c| c.get("traceparent").is_some()));
/// assert_eq!(frames, [b"topic".to_vec(), b"payload".to_vec()]);
/// ```
pub fn take_context_frame<F: AsRef<[u8]>>(frames: &mut Vec<F>, limits: &Limits) -> CarrierField {
    let Some(last) = frames.last() else {
        return CarrierField::Absent;
    };
    let Some(field) = read_context_frame(last.as_ref(), limits) else {
        return CarrierField::Absent;
    };
    frames.pop();
    field
}

/// The `lens.trace.new_root` anchor of a rejected carrier (docs/propagation-rules.md): the
/// top level was not an object (`json-carrier`), or it was rejected whole for another reason
/// (`json-carrier-rejected`).
pub(crate) fn rejection_anchor(error: &CarrierError) -> &'static str {
    if error.is_not_an_object() {
        "json-carrier"
    } else {
        "json-carrier-rejected"
    }
}
