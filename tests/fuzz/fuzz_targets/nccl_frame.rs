//! The lens-nccl frame decoder on arbitrary bytes. The first byte picks the shape: raw bytes as
//! a frame, or a valid header (magic, version, length, checksum) around fuzzed JSON, so the
//! fuzzer also reaches the carrier behind the checksum. A rejected frame gives the caller's
//! current Context; an accepted one gives a Context that round-trips through a new frame.
#![no_main]

use lens_fuzz::{caller_context, check_roundtrip, observe, via_headers};
use lens_nccl::{FRAME_HEADER_LEN, FRAME_MAGIC, FRAME_VERSION, FrameCodec};
use libfuzzer_sys::fuzz_target;
use opentelemetry::Context;

fn fnv1a(bytes: &[u8]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for &b in bytes {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

fuzz_target!(|data: &[u8]| {
    let Some((&shape, rest)) = data.split_first() else {
        return;
    };
    let frame: Vec<u8> = if shape & 1 == 0 {
        rest.to_vec()
    } else {
        let mut f = Vec::with_capacity(FRAME_HEADER_LEN + rest.len());
        f.extend_from_slice(&FRAME_MAGIC);
        f.extend_from_slice(&FRAME_VERSION.to_le_bytes());
        f.extend_from_slice(&[0, 0]);
        f.extend_from_slice(&(rest.len() as u32).to_le_bytes());
        f.extend_from_slice(&fnv1a(rest).to_le_bytes());
        f.extend_from_slice(rest);
        f
    };
    let codec = FrameCodec::default();
    let caller = caller_context();
    let _guard = caller.clone().attach();
    let got = codec.extract(&frame);
    match codec.decode(&frame) {
        Err(_) => assert_eq!(
            observe(&got),
            observe(&caller),
            "rejected frame: caller's context"
        ),
        Ok(_) => {
            // The widest codec the receiver's limits allow, so that nothing has to be dropped.
            let wide = FrameCodec::with_capacity(FRAME_HEADER_LEN + codec.limits().carrier_bytes)
                .expect("capacity within limits");
            check_roundtrip(&got, |cx: &Context| {
                let mut buf = Vec::new();
                let encoding = wide.encode_into(cx, &mut buf).expect("fits");
                assert!(encoding.is_complete(), "{encoding:?}");
                assert_eq!(buf.len(), wide.capacity());
                wide.extract(&buf)
            });
            check_roundtrip(&got, via_headers);
        }
    }
});
