//! The multi-process run (`cargo xtask mpi-test`): 4 MPI ranks under `mpirun`, sources 0 and 3
//! with a context holding tracestate and baggage, then a source with no context. Every rank
//! writes what it received and the linked span it exported (in memory) to a file; this program,
//! run without MPI, starts `mpirun` on itself, collects the files and asserts that all ranks
//! agree with the source and that every linked span references the source span.
//!
//! A test without the libtest harness: `main` is the launcher, or one rank when started by
//! `mpirun` (`OMPI_COMM_WORLD_RANK` set).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use lens_core::{Carrier, extract_context};
use lens_dist::{
    Collective, DistError, MpiCollective, broadcast_trace_context, create_linked_span,
};
use opentelemetry::trace::{Span, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};

const RANKS: usize = 4;
const OUT_ENV: &str = "LENS_DIST_MPI_OUT";

/// The scenarios: name, source rank, the source's incoming context (`None`: no context).
const SCENARIOS: [(&str, usize, Option<[&str; 3]>); 3] = [
    (
        "source-0",
        0,
        Some([
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
            "user.id=alice,job.name=pretrain%20llama,stage=source",
        ]),
    ),
    (
        "source-3",
        3,
        Some([
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "vendor@tenant=x,a=1",
            "k=v;prop,tenant=acme",
        ]),
    ),
    ("no-context", 0, None),
];

fn main() -> ExitCode {
    if std::env::var_os("OMPI_COMM_WORLD_RANK").is_some() {
        return match rank_main() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("rank failed: {e}");
                ExitCode::FAILURE
            }
        };
    }
    launch_and_check();
    println!(
        "mpi: {RANKS} ranks agree with the source in all {} scenarios",
        SCENARIOS.len()
    );
    ExitCode::SUCCESS
}

// ---------------------------------------------------------------------------------------------
// One rank

fn rank_main() -> Result<(), DistError> {
    let out = PathBuf::from(std::env::var_os(OUT_ENV).expect("LENS_DIST_MPI_OUT is set"));
    let universe = MpiCollective::initialize()?;
    let comm = MpiCollective::world(&universe);
    let rank = comm.rank();
    assert_eq!(comm.size(), RANKS, "run with -np {RANKS}");

    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let tracer = provider.tracer("lens-dist-mpi-test");

    let mut report = String::new();
    // A second initialisation is an error, not a panic.
    let again = MpiCollective::initialize().map(drop).unwrap_err();
    report += &format!("init\tagain\t{}\n", again.is_unavailable());
    for (name, src_rank, incoming) in SCENARIOS {
        // The source runs inside a span whose parent came from `incoming`.
        let cx = match incoming {
            Some([traceparent, tracestate, baggage]) if rank == src_rank => {
                let mut carrier = Carrier::new();
                carrier.insert("traceparent", traceparent);
                carrier.insert("tracestate", tracestate);
                carrier.insert("baggage", baggage);
                let parent = extract_context(&carrier);
                let span = tracer.start_with_context("source", &parent);
                let sc = span.span_context().clone();
                report += &format!("{name}\tsource_span\t{}-{}\n", sc.trace_id(), sc.span_id());
                parent.with_span(span)
            }
            _ => Context::new(),
        };
        let received = {
            let _guard = cx.attach();
            broadcast_trace_context(&comm, rank, src_rank)?
        };
        let json = received.as_ref().map_or_else(
            || "none".to_owned(),
            |c| String::from_utf8(c.to_json_bytes()).unwrap(),
        );
        report += &format!("{name}\treceived\t{json}\n");

        let mut stage = create_linked_span(
            &tracer,
            format!("{name} stage"),
            &received,
            [
                KeyValue::new("rank", rank as i64),
                KeyValue::new("prompt", "hidden"),
            ],
        );
        stage.end();
        let spans = exporter.get_finished_spans().expect("in-memory spans");
        exporter.reset();
        let stage = spans
            .iter()
            .find(|s| s.name.ends_with(" stage"))
            .expect("the stage span was exported");
        let links: Vec<String> = stage
            .links
            .links
            .iter()
            .map(|l| format!("{}-{}", l.span_context.trace_id(), l.span_context.span_id()))
            .collect();
        report += &format!("{name}\tlinks\t{}\n", links.join(","));
        let redacted = stage
            .attributes
            .contains(&KeyValue::new("prompt", "[REDACTED]"));
        report += &format!("{name}\tredacted\t{redacted}\n");
    }
    std::fs::write(out.join(format!("rank-{rank}.txt")), report).expect("write the rank report");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The launcher

fn launch_and_check() {
    let mpirun = find_on_path("mpirun").unwrap_or_else(|| {
        panic!("`mpirun` is not on PATH: install openmpi-bin libopenmpi-dev (this suite was built with --features mpi)")
    });
    let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("lens-dist-mpi-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();

    let exe = std::env::current_exe().unwrap();
    let status = Command::new(mpirun)
        .args([
            "--oversubscribe",
            "--timeout",
            "120",
            "-np",
            &RANKS.to_string(),
        ])
        .arg(&exe)
        .env(OUT_ENV, &out)
        // Containers and CI run as root; OpenMPI refuses that without both settings.
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .status()
        .expect("start mpirun");
    assert!(status.success(), "mpirun failed: {status}");

    // reports[rank][(scenario, field)] = value
    let reports: Vec<BTreeMap<(String, String), String>> = (0..RANKS)
        .map(|rank| {
            let text = std::fs::read_to_string(out.join(format!("rank-{rank}.txt")))
                .unwrap_or_else(|e| panic!("rank {rank} wrote no report: {e}"));
            text.lines()
                .map(|line| {
                    let mut parts = line.splitn(3, '\t');
                    let (s, f, v) = (parts.next(), parts.next(), parts.next());
                    (
                        (s.unwrap().to_owned(), f.unwrap().to_owned()),
                        v.unwrap_or("").to_owned(),
                    )
                })
                .collect()
        })
        .collect();
    let get = |rank: usize, scenario: &str, field: &str| -> &str {
        reports[rank]
            .get(&(scenario.to_owned(), field.to_owned()))
            .unwrap_or_else(|| panic!("rank {rank} has no {field} for {scenario}"))
    };

    for rank in 0..RANKS {
        assert_eq!(get(rank, "init", "again"), "true", "rank {rank}");
    }
    for (name, src_rank, incoming) in SCENARIOS {
        for rank in 0..RANKS {
            assert_eq!(get(rank, name, "redacted"), "true", "{name}: rank {rank}");
        }
        let Some([traceparent, tracestate, baggage]) = incoming else {
            for rank in 0..RANKS {
                assert_eq!(get(rank, name, "received"), "none", "{name}: rank {rank}");
                assert_eq!(get(rank, name, "links"), "", "{name}: rank {rank}");
            }
            continue;
        };
        let source_span = get(src_rank, name, "source_span");
        let (trace_id, span_id) = source_span.split_once('-').unwrap();
        // The incoming trace continues: the source span is a child in the same trace.
        assert_eq!(trace_id, &traceparent[3..35], "{name}");
        let expected = {
            let mut c = Carrier::new();
            c.insert("traceparent", format!("00-{trace_id}-{span_id}-01"));
            c.insert("tracestate", tracestate);
            c.insert("baggage", baggage);
            String::from_utf8(c.to_json_bytes()).unwrap()
        };
        for (rank, report) in reports.iter().enumerate() {
            assert_eq!(get(rank, name, "received"), expected, "{name}: rank {rank}");
            assert_eq!(get(rank, name, "links"), source_span, "{name}: rank {rank}");
            let key = (name.to_owned(), "source_span".to_owned());
            assert_eq!(
                report.contains_key(&key),
                rank == src_rank,
                "{name}: rank {rank}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}

fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}
