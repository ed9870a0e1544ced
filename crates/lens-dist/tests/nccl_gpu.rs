//! GPU suite of lens-dist's NCCL backend (feature `nccl`; run by `cargo xtask gpu-test`).
//!
//! - World size 1 (`NcclCollective::single(0)`): rank 0 broadcasts a Context holding a sampled
//!   SDK span, a tracestate of 2 members and 3 baggage entries; the received carrier must equal
//!   what the source serialised (trace id, span id, tracestate, baggage in order), and a span
//!   made by `create_linked_span` over it must link to the source span. A source with no
//!   context must give `None` (and an unlinked span).
//! - With N >= 2 GPUs: N ranks, one thread and one GPU each, sharing one `NcclId` made on rank 0
//!   and passed to the others as its bytes; source rank 0, then rank N-1; every rank must agree
//!   with the source (non-source ranks run under another current Context, which must not leak).
//!   NCCL refuses two ranks on one GPU, so a single GPU runs world size 1 only.
//!
//! Without libcuda, libnccl or a GPU it prints why and exits 0 having run nothing. A failure is
//! reported (panics included) and the exit status is non-zero.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::ExitCode;
use std::sync::mpsc;

use lens_core::{Carrier, LensContextExt, extract_context, inject_context_from};
use lens_dist::{
    Collective, NcclCollective, NcclId, broadcast_trace_context, create_linked_span, nccl_available,
};
use lens_testkit::fixtures;
use opentelemetry::Context;
use opentelemetry::trace::{Span, SpanContext, TraceContextExt, Tracer, TracerProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};

const TRACESTATE: &[(&str, &str)] = &[("rojo", "00f067aa0ba902b7"), ("congo", "t61rcWkgMzE")];

fn baggage(stage: &str) -> [(&str, &str); 3] {
    [
        ("job.name", "pretrain llama"),
        ("stage", stage),
        ("user", "alice"),
    ]
}

/// A source rank's Context: a sampled SDK span `source` (child of a remote parent carrying the
/// tracestate, which the span inherits) and 3 baggage entries.
fn source_context(provider: &SdkTracerProvider, stage: &str) -> Context {
    let parent = fixtures::w3c_context(true, TRACESTATE, &baggage(stage));
    let span = provider.tracer("gpu").start_with_context("source", &parent);
    parent.with_span(span)
}

/// `got` must equal the carrier the source serialises for `source`, and describe it: its span
/// (trace id, span id, sampled), its 2-member tracestate and its baggage in order.
fn check_carrier(what: &str, got: &Option<Carrier>, source: &Context) -> Result<(), String> {
    let Some(got) = got else {
        return Err(format!("{what}: no carrier received"));
    };
    let mut sent = Carrier::new();
    inject_context_from(source, &mut sent);
    if *got != sent || got.to_json_bytes() != sent.to_json_bytes() {
        return Err(format!(
            "{what}: received {got:?}, the source serialised {sent:?}"
        ));
    }
    let received = extract_context(got);
    let (g, s) = (received.span(), source.span());
    let (g, s) = (g.span_context(), s.span_context());
    let tracestate_ok = TRACESTATE
        .iter()
        .all(|(k, v)| g.trace_state().get(k) == Some(*v))
        && g.trace_state().header() == s.trace_state().header();
    let span_ok = s.is_valid()
        && s.is_sampled()
        && g.trace_id() == s.trace_id()
        && g.span_id() == s.span_id()
        && g.is_sampled()
        && g.is_remote();
    let entries = |cx: &Context| -> Vec<(String, String)> {
        cx.lens_baggage()
            .iter()
            .map(|e| (e.key().to_owned(), e.value().to_owned()))
            .collect()
    };
    let baggage_ok = entries(&received) == entries(source) && entries(source).len() == 3;
    if span_ok && tracestate_ok && baggage_ok {
        Ok(())
    } else {
        Err(format!(
            "{what}: received context {received:?} differs from the source {source:?} \
             (span {span_ok}, tracestate {tracestate_ok}, baggage {baggage_ok})"
        ))
    }
}

/// A span made by `create_linked_span` over `carrier` links to `source` (or, for `None`, to
/// nothing).
fn check_link(
    what: &str,
    carrier: &Option<Carrier>,
    source: Option<&SpanContext>,
) -> Result<(), String> {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let mut span = create_linked_span(&provider.tracer("gpu"), "stage", carrier, []);
    span.end();
    let spans = exporter
        .get_finished_spans()
        .map_err(|e| format!("{what}: {e}"))?;
    let [stage] = spans.as_slice() else {
        return Err(format!(
            "{what}: {} spans exported, expected 1",
            spans.len()
        ));
    };
    let links = stage.links.links.as_slice();
    let ok = match (links, source) {
        ([], None) => true,
        ([link], Some(source)) => {
            link.span_context.trace_id() == source.trace_id()
                && link.span_context.span_id() == source.span_id()
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{what}: linked span has links {links:?}, expected a link to {source:?}"
        ))
    }
}

fn world_size_1() -> Result<(), String> {
    let comm = NcclCollective::single(0).map_err(|e| e.to_string())?;
    if (comm.rank(), comm.size()) != (0, 1) {
        return Err(format!("rank {} of {}", comm.rank(), comm.size()));
    }
    let provider = SdkTracerProvider::builder().build();
    let source = source_context(&provider, "1");
    let got = {
        let _guard = source.clone().attach();
        broadcast_trace_context(&comm, 0, 0).map_err(|e| e.to_string())?
    };
    check_carrier("world size 1", &got, &source)?;
    check_link("world size 1", &got, Some(source.span().span_context()))
}

fn world_size_1_no_context() -> Result<(), String> {
    let comm = NcclCollective::single(0).map_err(|e| e.to_string())?;
    let got = {
        let _guard = Context::new().attach();
        broadcast_trace_context(&comm, 0, 0).map_err(|e| e.to_string())?
    };
    if let Some(carrier) = &got {
        return Err(format!("no context: received {carrier:?}, expected None"));
    }
    check_link("no context", &got, None)
}

/// One rank of the N-rank case: joins the communicator (rank 0 makes the id and sends its bytes
/// to the others), then takes part in one broadcast per source; its result per source.
fn rank_main(
    rank: usize,
    world: usize,
    id_in: Option<mpsc::Receiver<[u8; 128]>>,
    id_out: Vec<mpsc::Sender<[u8; 128]>>,
    sources: &[(usize, Context)],
) -> Result<Vec<Result<(), String>>, String> {
    let id = match id_in {
        None => {
            let id = NcclId::new().map_err(|e| format!("rank {rank}: {e}"))?;
            for tx in &id_out {
                tx.send(id.to_bytes())
                    .map_err(|_| format!("rank {rank}: a rank left before the id came"))?;
            }
            id
        }
        Some(rx) => NcclId::from_bytes(
            rx.recv()
                .map_err(|_| format!("rank {rank}: rank 0 made no id"))?,
        ),
    };
    let comm = NcclCollective::from_rank(rank, rank, world, id)
        .map_err(|e| format!("rank {rank}: {e}"))?;
    let results = sources
        .iter()
        .map(|(src, source)| {
            let what = format!("rank {rank}, source {src}");
            // Non-source ranks run under a Context of their own, which must not be sent.
            let current = if rank == *src {
                source.clone()
            } else {
                fixtures::caller_context()
            };
            let got = {
                let _guard = current.attach();
                broadcast_trace_context(&comm, rank, *src).map_err(|e| format!("{what}: {e}"))?
            };
            check_carrier(&what, &got, source)?;
            check_link(&what, &got, Some(source.span().span_context()))
        })
        .collect();
    Ok(results)
}

/// N ranks on N GPUs; one summary per source.
fn n_ranks(world: usize) -> Vec<(String, Result<(), String>)> {
    let provider = SdkTracerProvider::builder().build();
    let sources = vec![
        (0, source_context(&provider, "first")),
        (world - 1, source_context(&provider, "last")),
    ];
    let (senders, receivers): (Vec<_>, Vec<_>) = (1..world).map(|_| mpsc::channel()).unzip();
    let mut id_out = Some(senders);
    let mut per_rank = Vec::with_capacity(world);
    std::thread::scope(|s| {
        let handles: Vec<_> = std::iter::once(None)
            .chain(receivers.into_iter().map(Some))
            .enumerate()
            .map(|(rank, id_in)| {
                let id_out = if rank == 0 {
                    id_out.take().unwrap_or_default()
                } else {
                    Vec::new()
                };
                let sources = &sources;
                s.spawn(move || rank_main(rank, world, id_in, id_out, sources))
            })
            .collect();
        for (rank, handle) in handles.into_iter().enumerate() {
            per_rank.push(
                handle
                    .join()
                    .unwrap_or_else(|_| Err(format!("rank {rank} panicked"))),
            );
        }
    });
    sources
        .iter()
        .enumerate()
        .map(|(i, (src, _))| {
            let result = per_rank.iter().try_for_each(|rank| match rank {
                Err(e) => Err(e.clone()),
                Ok(results) => results
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| Err("no result".to_owned())),
            });
            (format!("{world} ranks, source rank {src}"), result)
        })
        .collect()
}

/// Runs `f`, turning a panic into an error.
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        p.downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .map_or_else(|| "panicked".to_owned(), |s| format!("panicked: {s}"))
    })
}

fn main() -> ExitCode {
    if let Err(e) = nccl_available() {
        println!("lens-dist gpu tests: skipped, nothing run: {e}");
        return ExitCode::SUCCESS;
    }
    // nccl_available() (lens-nccl's probe) has found at least one device.
    let devices = match lens_nccl::nccl::device_count() {
        Ok(n) => n,
        Err(e) => {
            println!("lens-dist gpu tests: skipped, nothing run: {e}");
            return ExitCode::SUCCESS;
        }
    };
    println!("lens-dist gpu tests: {devices} device(s)");

    let mut results: Vec<(String, Result<(), String>)> = vec![
        (
            "world size 1, broadcast and linked span".to_owned(),
            guarded(world_size_1).and_then(|r| r),
        ),
        (
            "world size 1, source with no context".to_owned(),
            guarded(world_size_1_no_context).and_then(|r| r),
        ),
    ];
    if devices >= 2 {
        match guarded(|| n_ranks(devices)) {
            Ok(cases) => results.extend(cases),
            Err(e) => results.push((format!("{devices} ranks"), Err(e))),
        }
    } else {
        println!(
            "lens-dist gpu tests: one GPU: the N-rank case needs two or more (NCCL refuses two ranks on one GPU)"
        );
    }
    let mut failed = 0;
    for (name, result) in &results {
        match result {
            Ok(()) => println!("test {name} ... ok"),
            Err(why) => {
                println!("test {name} ... FAILED: {why}");
                failed += 1;
            }
        }
    }
    println!(
        "lens-dist gpu tests: {} passed, {failed} failed",
        results.len() - failed
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
