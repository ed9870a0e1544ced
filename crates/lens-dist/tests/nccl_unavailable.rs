//! Without the CUDA driver, NCCL or a GPU, every entry point of the NCCL backend returns
//! `DistError::Unavailable` with lens-nccl's reason instead of panicking in cudarc's loader;
//! with them, none does.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lens_dist::{DistError, NcclCollective, NcclId, nccl_available};

#[test]
fn constructors_agree_with_nccl_available() {
    match nccl_available() {
        Err(DistError::Unavailable { backend, reason }) => {
            assert_eq!(backend, "NCCL");
            // One probe, one reason: lens-nccl's.
            match lens_nccl::nccl::available() {
                Err(lens_nccl::nccl::NcclError::Unavailable(nccl_reason)) => {
                    assert_eq!(reason, nccl_reason);
                }
                other => panic!("lens-nccl says {other:?}, lens-dist says {reason}"),
            }
            let id = NcclId::new().unwrap_err();
            assert!(id.is_unavailable(), "{id}");
            let single = NcclCollective::single(0).unwrap_err();
            assert!(single.is_unavailable(), "{single}");
            let ranked =
                NcclCollective::from_rank(0, 0, 2, NcclId::from_bytes([0; 128])).unwrap_err();
            assert!(ranked.is_unavailable(), "{ranked}");
            assert_eq!(ranked.to_string(), format!("NCCL is unavailable: {reason}"));
        }
        Err(other) => panic!("unexpected error {other}"),
        Ok(()) => {
            // Libraries present (a GPU machine): making an id needs no device.
            let id = NcclId::new().unwrap();
            assert_eq!(NcclId::from_bytes(id.to_bytes()).to_bytes(), id.to_bytes());
        }
    }
}
