//! `cargo xtask bench dist`: the median latency of `broadcast_trace_context` over MPI with 4
//! local ranks, against plain MPI broadcasts of the same bytes in the same run.
//!
//! Started by `cargo bench`, the binary re-runs itself under `mpirun -np 4 --oversubscribe`.
//! Rank 0 runs criterion; before each timed batch it broadcasts the benchmark and the iteration
//! count, so the other ranks run the same number of collectives; every batch ends with a
//! barrier, so its time includes the last receiver.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use criterion::Criterion;
use lens_core::{Carrier, extract_context};
use lens_dist::mpi::traits::CommunicatorCollectives;
use lens_dist::{Collective, MpiCollective, broadcast_trace_context};

const RANKS: &str = "4";
const STOP: i64 = 0;
const LENS: i64 = 1;
const BCAST_BYTES: i64 = 2;
const BCAST_LEN_AND_BYTES: i64 = 3;

fn main() -> ExitCode {
    if std::env::var_os("OMPI_COMM_WORLD_RANK").is_none() {
        let status = Command::new("mpirun")
            .args(["--oversubscribe", "-np", RANKS])
            .arg(std::env::current_exe().unwrap())
            .args(std::env::args_os().skip(1))
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .status();
        return match status {
            Ok(s) if s.success() => ExitCode::SUCCESS,
            Ok(s) => {
                eprintln!("mpirun failed: {s}");
                ExitCode::FAILURE
            }
            Err(e) => {
                eprintln!("cannot start mpirun (install openmpi-bin libopenmpi-dev): {e}");
                ExitCode::FAILURE
            }
        };
    }

    let universe = MpiCollective::initialize().unwrap();
    let comm = MpiCollective::world(&universe);

    // NeMo Lens's benchmark payload, with a tracestate.
    let mut incoming = Carrier::new();
    incoming.insert(
        "traceparent",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    );
    incoming.insert("tracestate", "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
    incoming.insert("baggage", "user.id=alice,job.name=pretrain+llama,rank=3");
    let cx = extract_context(&incoming);
    let payload = {
        let mut c = Carrier::new();
        lens_core::inject_context_from(&cx, &mut c);
        c.to_json_bytes()
    };
    let _guard = (comm.rank() == 0).then(|| cx.attach());

    if comm.rank() == 0 {
        lead(&comm, &payload);
    } else {
        follow(&comm);
    }
    ExitCode::SUCCESS
}

/// Runs `iters` iterations of benchmark `which` (on every rank alike).
fn run(comm: &MpiCollective, which: i64, iters: u64, buf: &mut [u8]) {
    let rank = comm.rank();
    for _ in 0..iters {
        match which {
            LENS => {
                let carrier = broadcast_trace_context(comm, rank, 0).unwrap();
                assert!(carrier.is_some());
            }
            BCAST_BYTES => comm.broadcast_bytes(buf, 0).unwrap(),
            BCAST_LEN_AND_BYTES => {
                let mut len = buf.len() as i64;
                comm.broadcast_i64(&mut len, 0).unwrap();
                comm.broadcast_bytes(buf, 0).unwrap();
            }
            _ => unreachable!(),
        }
    }
    comm.communicator().barrier();
}

/// Rank 0: criterion, announcing each batch.
fn lead(comm: &MpiCollective, payload: &[u8]) {
    let mut criterion = Criterion::default()
        .sample_size(25)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let mut group = criterion.benchmark_group("dist");
    let mut buf = payload.to_vec();
    for (name, which) in [
        ("mpi_bcast_bytes", BCAST_BYTES),
        ("mpi_bcast_len_and_bytes", BCAST_LEN_AND_BYTES),
        ("broadcast_trace_context", LENS),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut command = [which, iters as i64, payload.len() as i64];
                for v in &mut command {
                    comm.broadcast_i64(v, 0).unwrap();
                }
                let start = Instant::now();
                run(comm, which, iters, &mut buf);
                start.elapsed()
            })
        });
    }
    group.finish();
    let mut stop = STOP;
    comm.broadcast_i64(&mut stop, 0).unwrap();
    criterion.final_summary();
}

/// Other ranks: run what rank 0 announces until it says stop.
fn follow(comm: &MpiCollective) {
    let mut buf = Vec::new();
    loop {
        let mut which = 0;
        comm.broadcast_i64(&mut which, 0).unwrap();
        if which == STOP {
            return;
        }
        let (mut iters, mut len) = (0, 0);
        comm.broadcast_i64(&mut iters, 0).unwrap();
        comm.broadcast_i64(&mut len, 0).unwrap();
        buf.resize(len as usize, 0);
        run(comm, which, iters as u64, &mut buf);
    }
}
