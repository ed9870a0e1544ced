//! The context frame holds exactly NeMo Lens's `serialize_context()` bytes (the recorded
//! vectors, the bytes lens-nccl writes), after the marker; and reads back what it wrote.
#![allow(clippy::unwrap_used)]

use lens_testkit::{active_context, b64, cases_of};
use lens_zmq::frame::{CONTEXT_FRAME_MARKER, read_context_frame};
use lens_zmq::{FilterDecision, Producer};

#[test]
fn context_frame_is_the_marker_then_serialize_context_bytes() {
    // No span of its own: the frame carries the current Context, as serialize_context() does.
    let producer =
        Producer::new().with_filter(|_: &lens_zmq::MessageInfo<'_>| FilterDecision::PROPAGATE_ONLY);
    let mut checked = 0;
    for case in cases_of("serialize_context") {
        let (cx, _provider) = active_context(&case.public["input"]["active"]);
        let want = b64(case.lens()["bytes_b64"].as_str().unwrap());
        let frame = {
            let _guard = cx.clone().attach();
            producer.start_send("d", None).context_frame()
        };
        assert_eq!(
            &frame[..CONTEXT_FRAME_MARKER.len()],
            CONTEXT_FRAME_MARKER,
            "{}",
            case.id
        );
        assert_eq!(
            String::from_utf8_lossy(&frame[CONTEXT_FRAME_MARKER.len()..]),
            String::from_utf8_lossy(&want),
            "{}",
            case.id
        );
        assert_eq!(frame[CONTEXT_FRAME_MARKER.len()..], want, "{}", case.id);
        // The same bytes as lens-nccl's: one format for every byte carrier.
        assert_eq!(lens_nccl::serialize_context_from(&cx), want, "{}", case.id);
        // And it reads back to the same carrier.
        let field = read_context_frame(&frame, &lens_core::Limits::DEFAULT).unwrap();
        assert_eq!(
            field.carrier().unwrap().to_json_bytes(),
            want,
            "{}: read back",
            case.id
        );
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} serialize_context vectors");
}

#[test]
fn only_the_last_frame_is_taken_and_only_with_the_whole_marker() {
    let limits = lens_core::Limits::DEFAULT;
    let ctx = [CONTEXT_FRAME_MARKER.as_slice(), b"{}"].concat();
    // A context frame elsewhere than last is payload.
    let mut frames = vec![ctx.clone(), b"payload".to_vec()];
    assert!(lens_zmq::frame::take_context_frame(&mut frames, &limits).is_absent());
    assert_eq!(frames.len(), 2);
    // Part of the marker is not the marker.
    let mut frames = vec![b"payload".to_vec(), CONTEXT_FRAME_MARKER[..9].to_vec()];
    assert!(lens_zmq::frame::take_context_frame(&mut frames, &limits).is_absent());
    assert_eq!(frames.len(), 2);
    // No frames at all.
    let mut frames: Vec<Vec<u8>> = Vec::new();
    assert!(lens_zmq::frame::take_context_frame(&mut frames, &limits).is_absent());
    // A message that is only a context frame: no payload frames left.
    let mut frames = vec![ctx];
    let field = lens_zmq::frame::take_context_frame(&mut frames, &limits);
    assert!(field.carrier().unwrap().is_empty());
    assert!(frames.is_empty());
    // Borrowed frames work the same (any `AsRef<[u8]>`).
    let mut borrowed: Vec<&[u8]> = vec![b"a", b"\x00lens-ctx\x01{}"];
    assert!(
        lens_zmq::frame::take_context_frame(&mut borrowed, &limits)
            .carrier()
            .is_some()
    );
    assert_eq!(borrowed, [b"a".as_slice()]);
}
