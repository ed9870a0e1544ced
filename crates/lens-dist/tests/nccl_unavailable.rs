//! Without the CUDA driver or NCCL, every entry point of the NCCL backend returns
//! `DistError::Unavailable` instead of panicking in cudarc's loader; with them, none does.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lens_dist::{DistError, NcclCollective, NcclId, nccl_available};

#[test]
fn constructors_agree_with_nccl_available() {
    match nccl_available() {
        Err(DistError::Unavailable { backend, reason }) => {
            assert_eq!(backend, "NCCL");
            assert!(reason.contains("cannot be loaded"), "{reason}");
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
