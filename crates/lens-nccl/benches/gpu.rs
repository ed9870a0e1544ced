//! GPU (feature `nccl`; `cargo xtask gpu-bench`): the latency a context frame adds to a 1 MiB
//! send to self + receive from self (world size 1, one group call), against the same transfer
//! without the frame, in the same run. Target: at most 5% added.
//!
//! Both variants end when the received bytes are usable on the host side: the baseline waits for
//! the stream, the framed one for its frame's copy to the host (ordered after the transfer).
//! Without libcuda, libnccl or a GPU it prints why and runs nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use lens_nccl::nccl::{self, ContextTransport, cudarc::nccl::group_end, cudarc::nccl::group_start};
use lens_testkit::fixtures;

fn bench(c: &mut Criterion) {
    if let Err(e) = nccl::available() {
        println!("gpu bench: skipped, nothing run: {e}");
        return;
    }
    let len = 1 << 20;
    let comm = nccl::comm_self(0).unwrap();
    let stream = comm.stream();
    let send = stream.clone_htod(&vec![7u8; len]).unwrap();
    let mut recv = stream.alloc_zeros::<u8>(len).unwrap();
    let cx = fixtures::w3c_context(false, &[], &[("job.name", "pretrain llama")]);
    let mut transport = ContextTransport::new(&comm).unwrap();

    let mut g = c.benchmark_group("nccl_gpu_1MiB_self");
    g.bench_function("send+recv without frame", |b| {
        b.iter(|| {
            group_start().unwrap();
            comm.send(&send, 0).unwrap();
            comm.recv(&mut recv, 0).unwrap();
            group_end().unwrap();
            stream.synchronize().unwrap();
        })
    });
    g.bench_function("send+recv with context frame", |b| {
        b.iter(|| {
            black_box(
                transport
                    .sendrecv(&comm, &send, 0, &mut recv, 0, black_box(&cx))
                    .unwrap(),
            )
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30);
    targets = bench
}
criterion_main!(benches);
