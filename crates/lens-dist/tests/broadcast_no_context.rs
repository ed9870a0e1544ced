//! A source with no context: length 0, no byte broadcast, `None` on every rank; and the `{}` a
//! Python source sends for no context is `None` too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{Call, Recording, run_ranks};
use lens_dist::{Collective, broadcast_trace_context};

#[test]
fn a_source_without_context_sends_length_zero_only() {
    for src_rank in [0, 3] {
        let results = run_ranks(4, |comm| {
            let comm = Recording::new(comm);
            let rank = comm.inner.rank();
            let result = broadcast_trace_context(&comm, rank, src_rank).unwrap();
            (result, comm.calls())
        });
        for (rank, (result, calls)) in results.iter().enumerate() {
            assert_eq!(result, &None, "rank {rank}");
            assert_eq!(
                calls,
                &[Call::I64 {
                    root: src_rank,
                    value: 0
                }],
                "rank {rank}"
            );
        }
    }
}

#[test]
fn a_python_source_sending_an_empty_object_gives_none() {
    // What NeMo Lens 0.1.0 sends with no context: json.dumps({}) = b"{}", length 2.
    let results = run_ranks(4, |comm| {
        let rank = comm.rank();
        if rank == 1 {
            let mut len = 2;
            comm.broadcast_i64(&mut len, 1).unwrap();
            comm.broadcast_bytes(&mut b"{}".to_vec(), 1).unwrap();
            return None;
        }
        Some(broadcast_trace_context(&comm, rank, 1))
    });
    for (rank, result) in results.into_iter().enumerate() {
        if rank != 1 {
            assert_eq!(result.unwrap().unwrap(), None, "rank {rank}");
        }
    }
}
