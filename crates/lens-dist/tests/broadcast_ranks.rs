//! Rank arguments are checked before any communication, alike on every rank.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{Recording, run_ranks};
use lens_dist::{Collective, DistError, broadcast_trace_context};

#[test]
fn a_source_rank_outside_the_group_fails_on_every_rank_without_communication() {
    let results = run_ranks(3, |comm| {
        let comm = Recording::new(comm);
        let rank = comm.inner.rank();
        (broadcast_trace_context(&comm, rank, 3), comm.calls())
    });
    for (rank, (result, calls)) in results.into_iter().enumerate() {
        match result {
            Err(DistError::InvalidRank {
                what,
                rank: 3,
                size: 3,
                own,
            }) => {
                assert_eq!(what, "source rank");
                assert_eq!(own, rank);
            }
            other => panic!("rank {rank}: {other:?}"),
        }
        assert!(calls.is_empty());
    }
}

#[test]
fn a_rank_that_is_not_the_callers_own_is_refused() {
    let results = run_ranks(1, |comm| broadcast_trace_context(&comm, 1, 0));
    assert!(matches!(
        results[0],
        Err(DistError::InvalidRank {
            what: "rank",
            rank: 1,
            size: 1,
            own: 0
        })
    ));
}
