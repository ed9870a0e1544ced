//! ThreadGroup semantics: broadcasts from any root reach every rank in order, mismatched calls
//! and departed peers are errors rather than hangs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::run_ranks;
use lens_dist::{Collective, DistError, ThreadGroup};

#[test]
fn ranks_and_size() {
    let comms = ThreadGroup::new(5);
    let ranks: Vec<(usize, usize)> = comms.iter().map(|c| (c.rank(), c.size())).collect();
    assert_eq!(ranks, [(0, 5), (1, 5), (2, 5), (3, 5), (4, 5)]);
    assert!(ThreadGroup::new(0).is_empty());
}

#[test]
fn broadcasts_from_changing_roots_arrive_in_order() {
    let results = run_ranks(4, |comm| {
        let rank = comm.rank();
        let mut seen = Vec::new();
        for round in 0..20usize {
            let root = (round * 7) % 4;
            let mut value = if rank == root {
                (round * 100 + root) as i64
            } else {
                -1
            };
            comm.broadcast_i64(&mut value, root).unwrap();
            let mut bytes = if rank == root {
                format!("round {round} from {root}").into_bytes()
            } else {
                vec![0; format!("round {round} from {root}").len()]
            };
            comm.broadcast_bytes(&mut bytes, root).unwrap();
            seen.push((value, String::from_utf8(bytes).unwrap()));
        }
        seen
    });
    for (rank, seen) in results.iter().enumerate() {
        for (round, (value, text)) in seen.iter().enumerate() {
            let root = (round * 7) % 4;
            assert_eq!(*value, (round * 100 + root) as i64, "rank {rank}");
            assert_eq!(text, &format!("round {round} from {root}"), "rank {rank}");
        }
    }
}

#[test]
fn a_root_outside_the_group_is_refused() {
    let comm = ThreadGroup::new(2).remove(0);
    let mut v = 0;
    assert!(matches!(
        comm.broadcast_i64(&mut v, 2),
        Err(DistError::InvalidRank {
            what: "root rank",
            rank: 2,
            size: 2,
            own: 0
        })
    ));
    assert!(matches!(
        comm.broadcast_bytes(&mut [0u8; 4], 7),
        Err(DistError::InvalidRank { rank: 7, .. })
    ));
}

#[test]
fn a_departed_peer_is_an_error() {
    let mut comms = ThreadGroup::new(2);
    let receiver = comms.remove(1);
    drop(comms); // rank 0 leaves without sending
    let mut v = 0;
    let err = receiver.broadcast_i64(&mut v, 0).unwrap_err();
    assert!(matches!(err, DistError::Collective { .. }), "{err:?}");
    assert!(err.to_string().contains("rank 0 has left"), "{err}");
}

#[test]
fn mismatched_operations_and_lengths_are_errors() {
    let results = run_ranks(2, |comm| {
        if comm.rank() == 0 {
            comm.broadcast_i64(&mut 1, 0).unwrap();
            comm.broadcast_bytes(&mut [1, 2, 3], 0).unwrap();
            (Ok(()), Ok(()))
        } else {
            let kind = comm.broadcast_bytes(&mut [0; 3], 0);
            let len = comm.broadcast_bytes(&mut [0; 2], 0);
            (kind, len)
        }
    });
    let (kind, len) = &results[1];
    assert!(
        kind.as_ref()
            .unwrap_err()
            .to_string()
            .contains("rank 0 called broadcast_i64"),
        "{kind:?}"
    );
    assert!(
        len.as_ref()
            .unwrap_err()
            .to_string()
            .contains("sent 3 bytes"),
        "{len:?}"
    );
}
