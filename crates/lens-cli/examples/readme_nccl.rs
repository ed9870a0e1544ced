//! lens-nccl: context as NCCL bytes and frames, byte-compatible with NeMo Lens.
use lens_core::LensContextExt;
use lens_nccl::{FrameCodec, extract_nccl_context, serialize_context_from};
use opentelemetry::Context;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cx = Context::new().with_baggage_entry("rank", "3")?;
    let bytes = serialize_context_from(&cx); // byte for byte Python's json.dumps(carrier)
    assert_eq!(bytes, br#"{"baggage": "rank=3"}"#);
    assert_eq!(
        extract_nccl_context(&bytes)
            .baggage_value("rank")
            .as_deref(),
        Some("3")
    );
    let frame = FrameCodec::default().encode(&cx)?; // 4 KiB, sent beside the tensor
    let received = FrameCodec::default().extract(&frame);
    assert_eq!(received.baggage_value("rank").as_deref(), Some("3"));
    Ok(())
}
