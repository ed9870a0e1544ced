//! Frame decoding: a truncated, corrupt or foreign frame gives the caller's current Context and
//! the reason, never a panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lens_core::LensContextExt;
use lens_nccl::{FRAME_HEADER_LEN, FrameCodec, FrameDecodeError};
use lens_testkit::fixtures;
use opentelemetry::Context;
use opentelemetry::trace::TraceContextExt;

fn sent() -> Context {
    fixtures::w3c_context(false, &[("congo", "t61rcWkgMzE")], &[("user", "alice")])
}

fn caller() -> Context {
    fixtures::caller_context()
}

fn is_caller(cx: &Context) -> bool {
    let caller = caller();
    cx.span().span_context() == caller.span().span_context()
        && cx.baggage_value("caller").as_deref() == Some("yes")
}

fn is_sent(cx: &Context) -> bool {
    let sent = sent();
    cx.span().span_context().trace_id() == sent.span().span_context().trace_id()
        && cx.span().span_context().is_remote()
        && cx.baggage_value("user").as_deref() == Some("alice")
}

/// Rewrites the checksum of a frame after its JSON bytes were changed on purpose.
fn fix_checksum(frame: &mut [u8]) {
    let len = u32::from_le_bytes(frame[8..12].try_into().unwrap()) as usize;
    let mut h: u32 = 0x811c_9dc5;
    for &b in &frame[FRAME_HEADER_LEN..FRAME_HEADER_LEN + len] {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    frame[12..16].copy_from_slice(&h.to_le_bytes());
}

#[test]
fn a_good_frame_gives_the_sent_context() {
    let codec = FrameCodec::default();
    let frame = codec.encode(&sent()).unwrap();
    let _guard = caller().attach();
    assert!(is_sent(&codec.extract(&frame)));
    // A receive buffer larger than the frame is fine.
    let mut bigger = frame.clone();
    bigger.extend_from_slice(&[0xaa; 100]);
    assert!(is_sent(&codec.extract(&bigger)));
}

#[test]
fn truncated_frames() {
    let codec = FrameCodec::default();
    let frame = codec.encode(&sent()).unwrap();
    let json_len = u32::from_le_bytes(frame[8..12].try_into().unwrap()) as usize;
    let _guard = caller().attach();
    for cut in 0..FRAME_HEADER_LEN + json_len {
        let part = &frame[..cut];
        assert!(
            matches!(codec.decode(part), Err(FrameDecodeError::Truncated { len, .. }) if len == cut),
            "cut at {cut}: {:?}",
            codec.decode(part)
        );
        assert!(is_caller(&codec.extract(part)), "cut at {cut}");
    }
    // Cut in the zero padding: still whole.
    assert!(is_sent(
        &codec.extract(&frame[..FRAME_HEADER_LEN + json_len])
    ));
}

#[test]
fn foreign_bytes() {
    let codec = FrameCodec::default();
    let _guard = caller().attach();
    // The bare JSON bytes of NeMo Lens are not a frame.
    let json = lens_nccl::serialize_context_from(&sent());
    let mut padded = json.clone();
    padded.resize(4096, 0);
    assert!(
        matches!(codec.decode(&padded), Err(FrameDecodeError::Foreign { found }) if found == *b"{\"tr")
    );
    assert!(is_caller(&codec.extract(&padded)));
    // Uninitialised memory, all zeros, all ones.
    for fill in [0x00u8, 0xff, 0xcd] {
        let junk = vec![fill; 4096];
        assert!(matches!(
            codec.decode(&junk),
            Err(FrameDecodeError::Foreign { .. })
        ));
        assert!(is_caller(&codec.extract(&junk)));
    }
}

#[test]
fn other_versions_and_reserved_bits() {
    let codec = FrameCodec::default();
    let _guard = caller().attach();
    let mut frame = codec.encode(&sent()).unwrap();
    frame[4] = 2;
    assert_eq!(
        codec.decode(&frame),
        Err(FrameDecodeError::UnsupportedVersion(2))
    );
    assert!(is_caller(&codec.extract(&frame)));
    frame[4] = 1;
    frame[7] = 1;
    assert!(matches!(
        codec.decode(&frame),
        Err(FrameDecodeError::Corrupt(_))
    ));
    assert!(is_caller(&codec.extract(&frame)));
}

#[test]
fn a_length_beyond_the_frame() {
    let codec = FrameCodec::default();
    let _guard = caller().attach();
    let mut frame = codec.encode(&sent()).unwrap();
    frame[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(
        codec.decode(&frame),
        Err(FrameDecodeError::Truncated { .. })
    ));
    assert!(is_caller(&codec.extract(&frame)));
}

#[test]
fn every_single_bit_flip_is_caught() {
    let codec = FrameCodec::with_capacity(256).unwrap();
    let frame = codec.encode(&sent()).unwrap();
    let json_len = u32::from_le_bytes(frame[8..12].try_into().unwrap()) as usize;
    let _guard = caller().attach();
    for byte in 0..FRAME_HEADER_LEN + json_len {
        for bit in 0..8 {
            let mut bad = frame.clone();
            bad[byte] ^= 1 << bit;
            assert!(codec.decode(&bad).is_err(), "flip byte {byte} bit {bit}");
            assert!(
                is_caller(&codec.extract(&bad)),
                "flip byte {byte} bit {bit}"
            );
        }
    }
}

#[test]
fn a_well_formed_frame_around_bad_json() {
    let codec = FrameCodec::with_capacity(128).unwrap();
    let _guard = caller().attach();
    for json in [&b"{"[..], b"null", b"[1]", b"{\"a\": NaN}", b"\xff\xfe"] {
        let mut frame = codec.encode(&Context::new()).unwrap();
        frame[8..12].copy_from_slice(&(json.len() as u32).to_le_bytes());
        frame[FRAME_HEADER_LEN..FRAME_HEADER_LEN + json.len()].copy_from_slice(json);
        fix_checksum(&mut frame);
        assert!(
            matches!(codec.decode(&frame), Err(FrameDecodeError::Carrier(_))),
            "{json:?}"
        );
        assert!(is_caller(&codec.extract(&frame)), "{json:?}");
    }
    // `{}` inside a frame is an empty context, not the caller's.
    let frame = codec.encode(&Context::new()).unwrap();
    let cx = codec.extract(&frame);
    assert!(!cx.span().span_context().is_valid());
    assert!(cx.lens_baggage().is_empty());
}

#[test]
fn pseudo_random_garbage_never_panics() {
    let codec = FrameCodec::with_capacity(256).unwrap();
    let good = codec.encode(&sent()).unwrap();
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut decoded_ok = 0;
    for _ in 0..20_000 {
        let mut frame = good.clone();
        // Keep the header valid half of the time so that the JSON parser sees garbage too.
        let from = if next() % 2 == 0 { FRAME_HEADER_LEN } else { 0 };
        for _ in 0..(next() % 8 + 1) {
            let i = from + (next() as usize) % (frame.len() - from);
            frame[i] = next() as u8;
        }
        if from == FRAME_HEADER_LEN {
            fix_checksum(&mut frame);
        }
        let len = (next() as usize) % (frame.len() + 1);
        if codec.decode(&frame[..len]).is_ok() {
            decoded_ok += 1;
        }
        let _ = codec.extract(&frame[..len]);
    }
    // Some mutations land in the padding and leave a valid frame: the loop exercised both paths.
    assert!(decoded_ok > 0);
}
