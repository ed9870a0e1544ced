//! What a rank gets from a source that is not lens (a foreign or broken implementation): bytes
//! that are not a carrier are `DistError::Carrier` on every receiver, per the recorded
//! `extract_nccl_bytes` cases; a length that is negative or over the carrier limit is
//! `DistError::InvalidLength` on every rank, without a byte broadcast.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::run_ranks;
use lens_dist::{Collective, DistError, broadcast_trace_context};
use lens_testkit::cases_of;

/// Rank 2 plays a foreign source: it sends `len`, then `bytes` when given.
fn foreign_source(
    len: i64,
    bytes: Option<&[u8]>,
) -> Vec<Result<Option<lens_core::Carrier>, DistError>> {
    let results = run_ranks(4, |comm| {
        let rank = comm.rank();
        if rank == 2 {
            let mut len = len;
            comm.broadcast_i64(&mut len, 2).unwrap();
            if let Some(bytes) = bytes {
                comm.broadcast_bytes(&mut bytes.to_vec(), 2).unwrap();
            }
            return None;
        }
        Some(broadcast_trace_context(&comm, rank, 2))
    });
    results.into_iter().flatten().collect()
}

#[test]
fn received_bytes_follow_the_carrier_rules() {
    let mut rejected = 0;
    let mut accepted = 0;
    for case in cases_of("extract_nccl_bytes") {
        let id = case.id.as_str();
        let lens = &case.expected;
        let bytes = case.input_bytes();
        if bytes.is_empty() {
            continue; // length 0 is "no context", covered by broadcast_no_context
        }
        let deserialized = &lens["lens_expected"]["deserialize_context"];
        match deserialized["outcome"].as_str().unwrap() {
            "none" => rejected += 1,
            _ => accepted += 1,
        }
        for result in foreign_source(bytes.len() as i64, Some(&bytes)) {
            match deserialized["outcome"].as_str().unwrap() {
                "none" => {
                    assert!(
                        matches!(result, Err(DistError::Carrier(_))),
                        "{id}: {result:?}"
                    );
                }
                "value" => {
                    let carrier = result.unwrap_or_else(|e| panic!("{id}: {e}"));
                    let json = deserialized["json"].as_str().unwrap();
                    match carrier {
                        Some(carrier) => {
                            assert_eq!(carrier.to_json_bytes(), json.as_bytes(), "{id}")
                        }
                        None => assert_eq!(json, "{}", "{id}"),
                    }
                }
                other => panic!("{id}: unexpected outcome {other}"),
            }
        }
    }
    assert!(
        rejected >= 15 && accepted >= 5,
        "{rejected} rejected, {accepted} accepted"
    );
}

#[test]
fn a_negative_length_is_an_error_on_every_rank() {
    for result in foreign_source(-5, None) {
        assert!(
            matches!(
                result,
                Err(DistError::InvalidLength {
                    len: -5,
                    limit: 65536
                })
            ),
            "{result:?}"
        );
    }
}

#[test]
fn a_length_over_the_limit_skips_the_byte_broadcast() {
    // The source sends no bytes: a receiver waiting for them would see the source leave
    // (DistError::Collective) instead of InvalidLength.
    for result in foreign_source(65537, None) {
        assert!(
            matches!(result, Err(DistError::InvalidLength { len: 65537, .. })),
            "{result:?}"
        );
    }
}

#[test]
fn a_length_at_the_limit_is_received() {
    let prefix =
        br#"{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "pad": ""#;
    let mut bytes = prefix.to_vec();
    bytes.resize(65536 - 2, b'x');
    bytes.extend_from_slice(b"\"}");
    for result in foreign_source(65536, Some(&bytes)) {
        let carrier = result.unwrap().unwrap();
        assert_eq!(
            carrier.get("pad").map(str::len),
            Some(65536 - 2 - prefix.len())
        );
    }
}
