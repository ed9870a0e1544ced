//! MPI-style broadcast faults, on lens-dist's in-process `ThreadGroup` (the same protocol code as
//! the MPI backend): a source rank with no context, and a foreign source rank that sends garbage
//! bytes (random, truncated and bit-flipped carriers) round after round. Every rank gets the same
//! answer, nobody panics or hangs, each receiver keeps its own Context when nothing valid
//! arrives, and the group stays in step: a good broadcast after the garbage still arrives.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lens_core::{Carrier, LensContextExt, extract_context};
use lens_dist::{Collective, DistError, ThreadComm, ThreadGroup, broadcast_trace_context};
use opentelemetry::Context;
use opentelemetry::trace::TraceContextExt;

const RANKS: usize = 4;
const FOREIGN: usize = 2;
const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const CALLER: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

/// xorshift64*: deterministic garbage.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// What the foreign source sends in round `round`: garbage of several kinds.
fn garbage(rng: &mut Rng, round: usize) -> Vec<u8> {
    let mut good = Carrier::new();
    good.insert("traceparent", GOOD);
    good.insert("baggage", "user=alice,tier=gold");
    let valid = good.to_json_bytes();
    match round % 4 {
        0 => (0..1 + rng.next() % 4096)
            .map(|_| rng.next() as u8)
            .collect(),
        // Truncated (never to nothing: length 0 is "no context", with no byte broadcast).
        1 => valid[..1 + (rng.next() as usize % (valid.len() - 1))].to_vec(),
        2 => {
            let mut flipped = valid.clone();
            let at = rng.next() as usize % flipped.len();
            flipped[at] ^= 1 << (rng.next() % 8);
            flipped
        }
        _ => {
            let alphabet = b"{}[]\",:\\u0 tnf";
            (0..1 + rng.next() % 256)
                .map(|_| alphabet[rng.next() as usize % alphabet.len()])
                .collect()
        }
    }
}

/// The caller's Context each receiver runs in.
fn caller_context() -> Context {
    let mut carrier = Carrier::new();
    carrier.insert("traceparent", CALLER);
    carrier.insert("baggage", "caller=yes");
    extract_context(&carrier)
}

/// What a receiving application does: the received Context if there is one, else its own.
fn received_or_own(result: &Result<Option<Carrier>, DistError>) -> Context {
    match result {
        Ok(Some(carrier)) => extract_context(carrier),
        Ok(None) | Err(_) => Context::current(),
    }
}

fn trace_of(cx: &Context) -> String {
    cx.span().span_context().trace_id().to_string()
}

/// One result, comparable across ranks.
fn summary(result: &Result<Option<Carrier>, DistError>) -> String {
    match result {
        Ok(Some(c)) => format!("carrier {}", String::from_utf8_lossy(&c.to_json_bytes())),
        Ok(None) => "none".to_owned(),
        Err(DistError::Carrier(_)) => "carrier error".to_owned(),
        Err(e) => format!("error {e}"),
    }
}

fn run_rank(comm: &ThreadComm, rounds: usize) -> Vec<String> {
    let rank = comm.rank();
    let _caller = caller_context().attach();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut seen = Vec::new();
    for round in 0..rounds {
        // The foreign source: a length and bytes, like a broken or hostile peer.
        let bytes = garbage(&mut rng, round);
        let result = if rank == FOREIGN {
            let mut len = bytes.len() as i64;
            comm.broadcast_i64(&mut len, FOREIGN).unwrap();
            comm.broadcast_bytes(&mut bytes.clone(), FOREIGN).unwrap();
            None
        } else {
            Some(broadcast_trace_context(comm, rank, FOREIGN))
        };
        if let Some(result) = result {
            let cx = received_or_own(&result);
            if !matches!(result, Ok(Some(_))) {
                assert_eq!(trace_of(&cx), &CALLER[3..35], "rank {rank} round {round}");
                assert_eq!(cx.baggage_value("caller").as_deref(), Some("yes"));
            }
            seen.push(summary(&result));
        }
        // Rank 0 then broadcasts with no context: every rank gets None, keeps its own.
        let none = {
            let _empty = (rank == 0).then(|| Context::new().attach());
            broadcast_trace_context(comm, rank, 0)
        };
        assert!(
            matches!(none, Ok(None)),
            "rank {rank} round {round}: {none:?}"
        );
        assert_eq!(trace_of(&Context::current()), &CALLER[3..35]);
        // And a good broadcast from rank 1 still arrives everywhere: the group is in step.
        let good = {
            let mut carrier = Carrier::new();
            carrier.insert("traceparent", GOOD);
            let _source = (rank == 1).then(|| extract_context(&carrier).attach());
            broadcast_trace_context(comm, rank, 1)
        };
        let got = good.unwrap_or_else(|e| panic!("rank {rank} round {round}: {e}"));
        assert_eq!(
            got.and_then(|c| c.get("traceparent").map(str::to_owned))
                .as_deref(),
            Some(GOOD)
        );
    }
    seen
}

#[test]
fn garbage_from_a_rank_and_a_source_without_context() {
    let rounds = 200;
    let comms = ThreadGroup::new(RANKS);
    let results: Vec<Vec<String>> = std::thread::scope(|s| {
        let handles: Vec<_> = comms
            .into_iter()
            .map(|comm| s.spawn(move || run_rank(&comm, rounds)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let receivers: Vec<&Vec<String>> = results.iter().filter(|r| !r.is_empty()).collect();
    assert_eq!(receivers.len(), RANKS - 1);
    for other in &receivers[1..] {
        let differ = other.iter().zip(receivers[0]).position(|(a, b)| a != b);
        assert_eq!(differ, None, "every rank gets the same answer");
    }
    let rejected = receivers[0]
        .iter()
        .filter(|s| *s == "carrier error")
        .count();
    let accepted = receivers[0]
        .iter()
        .filter(|s| s.starts_with("carrier {"))
        .count();
    // Random bytes are almost never a carrier; some truncations and bit flips still are.
    assert!(rejected > rounds / 2, "{rejected} rejected of {rounds}");
    println!("{rejected} rejected, {accepted} accepted, of {rounds} garbage rounds");
}
