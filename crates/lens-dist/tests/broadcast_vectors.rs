//! The bytes `broadcast_trace_context` puts on the wire are NeMo Lens's `serialize_context()`
//! bytes (docs/propagation-rules.md#json-byte-format), and every rank gets the same carrier: for every recorded extract case,
//! the source rank runs in the extracted context and the four ranks' wire and results are
//! compared with what docs/propagation-rules.md expects (`lens-expected-public.json`, `reserialized`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{Call, Recording, run_ranks};
use lens_core::{Carrier, extract_context};
use lens_dist::{Collective, broadcast_trace_context};
use lens_testkit::cases;
use lens_testkit::vectors::is_carrier_extract_group;

#[test]
fn every_rank_receives_the_reference_bytes() {
    let mut checked = 0;
    for case in cases() {
        if !is_carrier_extract_group(&case.group) {
            continue;
        }
        let extract = &case.lens()["extract"];
        if extract["outcome"] != "context" {
            continue;
        }
        let id = case.id.as_str();
        // vectors/README.md: "whitespace inside properties, which is not significant
        // (ext-baggage-016)": lens-core trims it, the reference string keeps it.
        if id == "ext-baggage-016" {
            continue;
        }
        let bytes = case.input_bytes();
        let reserialized = extract["reserialized"]
            .as_str()
            .unwrap()
            .as_bytes()
            .to_vec();
        let src_rank = checked % 4;

        let results = run_ranks(4, |comm| {
            let comm = Recording::new(comm);
            let rank = comm.inner.rank();
            let _guard = (rank == src_rank).then(|| {
                let carrier = Carrier::from_json_bytes(&bytes).unwrap();
                extract_context(&carrier).attach()
            });
            let result = broadcast_trace_context(&comm, rank, src_rank).unwrap();
            (result, comm.calls())
        });

        let (first, _) = &results[0];
        for (rank, (result, calls)) in results.iter().enumerate() {
            assert_eq!(result, first, "{id}: rank {rank} disagrees with rank 0");
            if reserialized == b"{}" {
                assert_eq!(result, &None, "{id}");
                assert_eq!(
                    calls,
                    &[Call::I64 {
                        root: src_rank,
                        value: 0
                    }],
                    "{id}"
                );
            } else {
                assert_eq!(
                    calls,
                    &[
                        Call::I64 {
                            root: src_rank,
                            value: reserialized.len() as i64
                        },
                        Call::Bytes {
                            root: src_rank,
                            bytes: reserialized.clone()
                        },
                    ],
                    "{id}: rank {rank}"
                );
                let carrier = result.as_ref().expect("a context was sent");
                assert_eq!(carrier.to_json_bytes(), reserialized, "{id}: rank {rank}");
            }
        }
        checked += 1;
    }
    assert!(checked >= 100, "only {checked} cases checked");
}
