//! Frame encoding: layout, fixed size, and what is left out when the context does not fit
//! (baggage members from the end first, then the tracestate, never the traceparent).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lens_core::LensContextExt;
use lens_nccl::{
    DEFAULT_FRAME_CAPACITY, FRAME_HEADER_LEN, FRAME_MAGIC, FrameCodec, FrameError,
    serialize_context_from,
};
use lens_testkit::fixtures;
use opentelemetry::Context;
use opentelemetry::trace::TraceContextExt;

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn span_cx(tracestate: &[(&str, &str)]) -> Context {
    fixtures::w3c_context(false, tracestate, &[])
}

fn with_baggage(mut cx: Context, n: usize, value_len: usize) -> Context {
    for i in 0..n {
        cx = cx
            .with_baggage_entry(&format!("k{i}"), &"v".repeat(value_len))
            .unwrap();
    }
    cx
}

fn payload(codec: &FrameCodec, frame: &[u8]) -> String {
    String::from_utf8(codec.payload(frame).unwrap().to_vec()).unwrap()
}

#[test]
fn layout_of_a_frame() {
    let cx = with_baggage(span_cx(&[("congo", "t61rcWkgMzE")]), 2, 3);
    let codec = FrameCodec::default();
    assert_eq!(codec.capacity(), DEFAULT_FRAME_CAPACITY);
    let frame = codec.encode(&cx).unwrap();
    assert_eq!(frame.len(), 4096);
    let json = serialize_context_from(&cx);
    assert_eq!(&frame[0..4], &FRAME_MAGIC);
    assert_eq!(&frame[4..6], &1u16.to_le_bytes());
    assert_eq!(&frame[6..8], &[0, 0]);
    assert_eq!(&frame[8..12], &(json.len() as u32).to_le_bytes());
    assert_eq!(
        &frame[FRAME_HEADER_LEN..FRAME_HEADER_LEN + json.len()],
        json
    );
    assert!(
        frame[FRAME_HEADER_LEN + json.len()..]
            .iter()
            .all(|&b| b == 0)
    );
}

#[test]
fn reusing_a_buffer_gives_the_same_frame() {
    let codec = FrameCodec::with_capacity(512).unwrap();
    let big = with_baggage(span_cx(&[]), 5, 20);
    let small = span_cx(&[]);
    let mut buf = Vec::new();
    codec.encode_into(&big, &mut buf).unwrap();
    codec.encode_into(&small, &mut buf).unwrap();
    assert_eq!(buf, codec.encode(&small).unwrap());
}

#[test]
fn whole_context_fits() {
    let cx = with_baggage(span_cx(&[("a", "1")]), 3, 10);
    let codec = FrameCodec::with_capacity(1024).unwrap();
    let mut frame = Vec::new();
    let enc = codec.encode_into(&cx, &mut frame).unwrap();
    assert!(enc.is_complete());
    assert_eq!(
        payload(&codec, &frame).as_bytes(),
        serialize_context_from(&cx)
    );
}

#[test]
fn trailing_baggage_members_are_dropped_first() {
    // 10 members of `kN=` + 20 bytes: leave room for about half of them.
    let cx = with_baggage(span_cx(&[("congo", "t61rcWkgMzE")]), 10, 20);
    let full = serialize_context_from(&cx).len();
    let codec = FrameCodec::with_capacity(FRAME_HEADER_LEN + full - 5 * 24).unwrap();
    let mut frame = Vec::new();
    let enc = codec.encode_into(&cx, &mut frame).unwrap();
    assert!(!enc.tracestate_dropped);
    assert!(enc.baggage_members_dropped >= 5 && enc.baggage_members_dropped < 10);
    let kept = 10 - enc.baggage_members_dropped;

    // Exactly the leading members, the tracestate and the traceparent.
    let mut want = span_cx(&[("congo", "t61rcWkgMzE")]);
    want = with_baggage(want, kept, 20);
    assert_eq!(
        payload(&codec, &frame).as_bytes(),
        serialize_context_from(&want)
    );
    assert_eq!(enc.json_len, serialize_context_from(&want).len());
    // And one more member would not have fit.
    let one_more = serialize_context_from(&with_baggage(
        span_cx(&[("congo", "t61rcWkgMzE")]),
        kept + 1,
        20,
    ));
    assert!(FRAME_HEADER_LEN + one_more.len() > codec.capacity());

    let received = codec.extract(&frame);
    assert_eq!(received.lens_baggage().len(), kept);
    assert_eq!(
        received.baggage_value("k0").as_deref(),
        Some("v".repeat(20).as_str())
    );
}

#[test]
fn then_the_tracestate() {
    let members: Vec<(String, String)> = (0..20)
        .map(|i| (format!("vendor{i}"), "x".repeat(30)))
        .collect();
    let ts: Vec<(&str, &str)> = members
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let cx = with_baggage(span_cx(&ts), 3, 40);
    let codec = FrameCodec::with_capacity(256).unwrap();
    let mut frame = Vec::new();
    let enc = codec.encode_into(&cx, &mut frame).unwrap();
    assert_eq!(enc.baggage_members_dropped, 3);
    assert!(enc.tracestate_dropped);
    assert_eq!(
        payload(&codec, &frame),
        format!(r#"{{"traceparent": "{TRACEPARENT}"}}"#)
    );
    let received = codec.extract(&frame);
    assert_eq!(
        received.span().span_context().trace_id(),
        cx.span().span_context().trace_id()
    );
}

#[test]
fn baggage_only_context_drops_to_empty() {
    let cx = with_baggage(Context::new(), 4, 100);
    let codec = FrameCodec::with_capacity(64).unwrap();
    let mut frame = Vec::new();
    let enc = codec.encode_into(&cx, &mut frame).unwrap();
    assert_eq!(enc.baggage_members_dropped, 4);
    assert_eq!(payload(&codec, &frame), "{}");
}

#[test]
fn never_the_traceparent() {
    let cx = with_baggage(span_cx(&[("a", "1")]), 1, 1);
    // `{"traceparent": "<55>"}` is 74 bytes: a 16 + 73 byte frame cannot hold it.
    let codec = FrameCodec::with_capacity(FRAME_HEADER_LEN + 73).unwrap();
    let err = codec.encode(&cx).unwrap_err();
    assert_eq!(
        err,
        FrameError::TooLarge {
            needed: FRAME_HEADER_LEN + 74,
            capacity: FRAME_HEADER_LEN + 73
        }
    );
    assert!(err.to_string().contains("does not fit"));
    // One byte more, and it fits with only the traceparent.
    let codec = FrameCodec::with_capacity(FRAME_HEADER_LEN + 74).unwrap();
    let enc = codec.encode_into(&cx, &mut Vec::new()).unwrap();
    assert!(enc.tracestate_dropped);
    assert_eq!(enc.baggage_members_dropped, 1);
}

#[test]
fn capacity_bounds() {
    assert!(matches!(
        FrameCodec::with_capacity(FRAME_HEADER_LEN + 1),
        Err(FrameError::CapacityOutOfRange { min: 18, .. })
    ));
    assert!(FrameCodec::with_capacity(FRAME_HEADER_LEN + 2).is_ok());
    assert!(FrameCodec::with_capacity(FRAME_HEADER_LEN + 64 * 1024).is_ok());
    assert!(matches!(
        FrameCodec::with_capacity(FRAME_HEADER_LEN + 64 * 1024 + 1),
        Err(FrameError::CapacityOutOfRange { .. })
    ));
    // A smaller carrier limit lowers the largest capacity.
    let limits = lens_core::Limits::default().with_carrier_bytes(1000);
    assert!(
        FrameCodec::with_capacity(2048)
            .unwrap()
            .with_limits(limits)
            .is_err()
    );
    assert!(
        FrameCodec::with_capacity(1016)
            .unwrap()
            .with_limits(limits)
            .is_ok()
    );
}
