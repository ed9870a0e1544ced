//! Without libcuda, libnccl or a GPU, every entry point of the `nccl` feature returns
//! `NcclError::Unavailable` with the same reason, and nothing panics. On a machine that has
//! them, the same entry points work instead.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lens_nccl::nccl::{self, NcclError};

#[test]
fn entry_points_agree_with_availability() {
    match nccl::available() {
        Err(NcclError::Unavailable(reason)) => {
            assert!(!reason.is_empty());
            println!("NCCL unavailable here: {reason}");
            let same = |r: Result<(), NcclError>| match r {
                Err(NcclError::Unavailable(other)) => assert_eq!(other, reason),
                other => panic!("expected Unavailable, got {other:?}"),
            };
            same(nccl::device_count().map(|_| ()));
            same(nccl::nccl_version().map(|_| ()));
            same(nccl::new_id().map(|_| ()));
            same(nccl::comm_self(0).map(|_| ()));
            same(nccl::comm_from_rank(0, 0, 2, unreachable_id()).map(|_| ()));
            // Asked again: the same answer (checked once, cached).
            assert!(matches!(nccl::available(), Err(NcclError::Unavailable(r)) if r == reason));
            let shown = NcclError::Unavailable(reason.clone()).to_string();
            assert!(shown.starts_with("NCCL is unavailable: "));
        }
        Err(other) => panic!("available() gave {other:?}, not Unavailable"),
        Ok(()) => {
            assert!(nccl::device_count().unwrap() >= 1);
            assert!(nccl::nccl_version().unwrap() >= 2_00_00);
            let comm = nccl::comm_self(0).unwrap();
            assert_eq!(comm.world_size(), 1);
        }
    }
}

/// An id for the unavailable path (never used to build a communicator there).
fn unreachable_id() -> nccl::Id {
    nccl::Id::uninit([0; 128])
}

/// Where the libraries are missing, the reason names the library and how to fix it.
#[test]
fn reason_names_the_missing_piece() {
    if let Err(NcclError::Unavailable(reason)) = nccl::available() {
        assert!(
            reason.contains("libcuda")
                || reason.contains("libnccl.so.2")
                || reason.contains("device"),
            "{reason}"
        );
    }
}
