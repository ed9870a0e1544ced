//! GPU suite (feature `nccl`; run by `cargo xtask gpu-test`).
//!
//! - World size 1: a context frame beside a 1 MiB and a 64 MiB payload, sent to self and
//!   received from self in one group call; payload bytes and context checked.
//! - A bad frame (wrong capacity on the sender would hang NCCL, so: a foreign context) gives the
//!   caller's Context.
//! - With 2 or more GPUs: a 2-rank pipeline (rank 0 -> rank 1 -> rank 0), one thread per rank.
//!   NCCL refuses two ranks on one GPU, so a single GPU runs world size 1 only.
//!
//! Without libcuda, libnccl or a GPU it prints why and exits 0 having run nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::ExitCode;

use lens_core::LensContextExt;
use lens_nccl::nccl::{self, ContextTransport, NcclError};
use lens_testkit::fixtures;
use opentelemetry::Context;
use opentelemetry::trace::TraceContextExt;

fn context(span: &str, stage: &str) -> Context {
    fixtures::context(
        fixtures::span_context(fixtures::TRACE_ID, span, false, &[("congo", "t61rcWkgMzE")]),
        &[("job.name", "pretrain llama"), ("stage", stage)],
    )
}

fn check_received(what: &str, got: &Context, sent: &Context) -> Result<(), String> {
    let (g, s) = (got.span(), sent.span());
    let (g, s) = (g.span_context(), s.span_context());
    let ok = g.trace_id() == s.trace_id()
        && g.span_id() == s.span_id()
        && g.is_remote()
        && g.is_sampled()
        && g.trace_state().header() == s.trace_state().header()
        && got.lens_baggage().header() == sent.lens_baggage().header();
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{what}: received context {got:?} differs from sent {sent:?}"
        ))
    }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn self_send_recv(len: usize) -> Result<(), String> {
    let e = |e: NcclError| e.to_string();
    let comm = nccl::comm_self(0).map_err(e)?;
    let stream = comm.stream();
    let data = pattern(len, 7);
    let send = stream.clone_htod(&data).map_err(|x| format!("{x:?}"))?;
    let mut recv = stream
        .alloc_zeros::<u8>(len)
        .map_err(|x| format!("{x:?}"))?;
    let sent = context("00f067aa0ba902b7", "1");

    // The buffer-reusing transport.
    let mut transport = ContextTransport::new(&comm).map_err(e)?;
    let (encoding, got) = transport
        .sendrecv(&comm, &send, 0, &mut recv, 0, &sent)
        .map_err(e)?;
    if !encoding.is_complete() {
        return Err(format!("{len}: frame dropped parts: {encoding:?}"));
    }
    check_received(&format!("{len} B transport"), &got, &sent)?;
    let back = stream.clone_dtoh(&recv).map_err(|x| format!("{x:?}"))?;
    if back != data {
        return Err(format!("{len} B: payload bytes differ"));
    }

    // The free function, with the current Context.
    let mut recv2 = stream
        .alloc_zeros::<u8>(len)
        .map_err(|x| format!("{x:?}"))?;
    let sent2 = context("00f067aa0ba902b8", "2");
    let got2 = {
        let _guard = sent2.clone().attach();
        nccl::sendrecv_with_context(&comm, &send, 0, &mut recv2, 0).map_err(e)?
    };
    check_received(&format!("{len} B free function"), &got2, &sent2)?;
    let back2 = stream.clone_dtoh(&recv2).map_err(|x| format!("{x:?}"))?;
    if back2 != data {
        return Err(format!("{len} B (free function): payload bytes differ"));
    }
    Ok(())
}

fn two_rank_pipeline() -> Result<(), String> {
    let id = nccl::new_id().map_err(|e| e.to_string())?;
    let len = 1 << 20;
    let ranks: Vec<_> = (0..2)
        .map(|rank| {
            std::thread::spawn(move || -> Result<(), String> {
                let e = |e: NcclError| e.to_string();
                let comm = nccl::comm_from_rank(rank, rank, 2, id).map_err(e)?;
                let stream = comm.stream();
                let forward = context("00f067aa0ba902b7", "forward");
                let backward = context("00f067aa0ba902b9", "backward");
                if rank == 0 {
                    let act = stream
                        .clone_htod(&pattern(len, 1))
                        .map_err(|x| format!("{x:?}"))?;
                    nccl::send_with_context_from(&comm, &act, 1, &forward).map_err(e)?;
                    let mut grad = stream
                        .alloc_zeros::<u8>(len)
                        .map_err(|x| format!("{x:?}"))?;
                    let got = nccl::recv_with_context(&comm, &mut grad, 1).map_err(e)?;
                    check_received("rank 0 backward", &got, &backward)?;
                    let back = stream.clone_dtoh(&grad).map_err(|x| format!("{x:?}"))?;
                    if back != pattern(len, 2) {
                        return Err("rank 0: gradient bytes differ".into());
                    }
                } else {
                    let mut act = stream
                        .alloc_zeros::<u8>(len)
                        .map_err(|x| format!("{x:?}"))?;
                    let got = nccl::recv_with_context(&comm, &mut act, 0).map_err(e)?;
                    check_received("rank 1 forward", &got, &forward)?;
                    let back = stream.clone_dtoh(&act).map_err(|x| format!("{x:?}"))?;
                    if back != pattern(len, 1) {
                        return Err("rank 1: activation bytes differ".into());
                    }
                    let grad = stream
                        .clone_htod(&pattern(len, 2))
                        .map_err(|x| format!("{x:?}"))?;
                    nccl::send_with_context_from(&comm, &grad, 0, &backward).map_err(e)?;
                }
                Ok(())
            })
        })
        .collect();
    for (rank, handle) in ranks.into_iter().enumerate() {
        handle
            .join()
            .map_err(|_| format!("rank {rank} panicked"))??;
    }
    Ok(())
}

/// One GPU check: its name and body.
type GpuTest = (&'static str, Box<dyn Fn() -> Result<(), String>>);

fn main() -> ExitCode {
    if let Err(e) = nccl::available() {
        println!("gpu tests: skipped, nothing run: {e}");
        return ExitCode::SUCCESS;
    }
    let devices = nccl::device_count().unwrap_or(0);
    println!(
        "gpu tests: {devices} device(s), NCCL {:?}",
        nccl::nccl_version().ok()
    );
    let mut tests: Vec<GpuTest> = vec![
        (
            "self send/recv, 1 MiB payload",
            Box::new(|| self_send_recv(1 << 20)),
        ),
        (
            "self send/recv, 64 MiB payload",
            Box::new(|| self_send_recv(64 << 20)),
        ),
    ];
    if devices >= 2 {
        tests.push(("2-rank pipeline", Box::new(two_rank_pipeline)));
    } else {
        println!(
            "gpu tests: one GPU: the 2-rank pipeline needs two (NCCL refuses two ranks on one GPU)"
        );
    }
    let mut failed = 0;
    for (name, test) in &tests {
        match test() {
            Ok(()) => println!("test {name} ... ok"),
            Err(why) => {
                println!("test {name} ... FAILED: {why}");
                failed += 1;
            }
        }
    }
    println!(
        "gpu tests: {} passed, {failed} failed",
        tests.len() - failed
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
