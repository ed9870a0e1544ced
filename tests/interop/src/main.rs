//! lens-interop: the harness of `cargo xtask interop`, which checks lens against the real Python
//! NeMo Lens 0.1.0, live.
//!
//! ```sh
//! cargo xtask interop      # finds Python >= 3.13, caches the venv, builds and runs this
//! # or by hand, with a venv made from tests/interop/requirements.txt:
//! cargo run -p lens-interop -- --python target/interop-venv/<key>/bin/python \
//!     --scripts tests/interop/python --out target/interop
//! ```
//!
//! A test harness, not a library: an application like `lens-cli`, so it may depend on the
//! adapter crates (lens-axum, lens-reqwest, lens-nccl, lens-tonic, lens-nats); nothing depends on it.
//!
//! Scenarios (docs/interop-with-python.md lists every check):
//! * `nccl`: NeMo Lens `serialize_context()` bytes -> lens `extract_nccl_context`, and lens
//!   `serialize_context()` -> NeMo Lens `extract_nccl_context`; byte equality (docs/propagation-rules.md#json-byte-format).
//! * `ray`: NeMo Lens `inject_ray_context()` JSON -> lens `RemoteCall` / `extract_ray_context`,
//!   and lens `RemoteCall` JSON -> a NeMo Lens `traced_remote_call`-wrapped function.
//! * `http-python-first`, `http-rust-first`: FastAPI + aiohttp (NeMo Lens) and axum + reqwest
//!   (lens) calling each other in one trace; span parents and baggage checked across the
//!   boundary.
//! * `grpc-python-to-rust`, `grpc-rust-to-python`: a `grpcio` peer with NeMo Lens's
//!   `inject_context` / `extract_context` on the call's metadata, and a tonic server behind
//!   `ServerLayer` / a tonic client over `ClientLayer` or with `ClientInterceptor`; unary and
//!   server-streaming calls, span parents, baggage, tracestate and status checked across the
//!   boundary.
//! * `nats`: over a real nats-server the scenario starts (JetStream on), a nats-py publisher with
//!   NeMo Lens's `inject_context(headers)` into lens-nats's consumers, and lens-nats's producers
//!   into nats-py handlers that run `extract_context(msg.headers)` + `attach`; core publish,
//!   request/reply and JetStream, sampled and unsampled, tracestate and baggage, a pulled batch
//!   and a links-only consumer; both sides' spans checked (one trace, the CONSUMER span the child
//!   of the PRODUCER span, kinds and messaging attributes, links).
//! * `zeromq`: pyzmq + msgspec with NeMo Lens (the context as the last frame,
//!   `serialize_context()` after lens-zmq's marker, or as the `trace_headers` dict
//!   `inject_context` filled in a msgspec `array_like` struct) into lens-zmq, and back;
//!   PUSH/PULL and DEALER/ROUTER request-reply, sampled and unsampled, tracestate and baggage
//!   read back; the msgpack struct round-trips byte for byte through the Rust struct.
//! * `watch`: both HTTP scenarios again, every span of both languages also exported over OTLP
//!   (gRPC and HTTP, each SDK's own exporter) to a running `lens watch` (`--lens PATH`): one
//!   whole trace each in its `--json`, on its page, and from `lens check` on its `--save` file.
//! * `doctor`: eleven hops into one `lens watch --save`: over HTTP, healthy Python -> Rust and
//!   Rust -> Python, a Python client that sends no context to a lens server, a lens server whose
//!   policy links; over NATS (a nats-server of its own), healthy Python -> Rust and Rust ->
//!   Python, a Python publisher that does not inject, a lens consumer that links, fan-out (a
//!   lens consumer continuing, a Python subscriber ignoring the headers); behind Debian's nginx
//!   (skipped without it unless `LENS_NGINX=require`), a NeMo Lens Python client's 30 HTTP
//!   requests (`proxy_pass`) and 30 gRPC calls (`grpc_pass`) round robin over three lens
//!   replicas, the third behind a server block that drops the trace headers. `lens check --json`
//!   on the saved file finds the three `lost-context` (HTTP, queue, fan-out), the 10 + 10 behind
//!   nginx (paired by request, `instance relay-3`), the one `untrusted-linked`, and nothing else.
//! * `doctor-rabbitmq`: a RabbitMQ node of its own, pika and aio-pika with their OpenTelemetry
//!   instrumentations into `lens watch --save`, a healthy hop and one whose publisher drops the
//!   headers: `lens check` finds exactly that one (skipped without `rabbitmq-server` unless
//!   `LENS_RABBITMQ=require`).
//! * `probe`: `lens probe --watch` through FastAPI (NeMo Lens) -> aiohttp -> a proxy -> axum (lens)
//!   -> reqwest (lens) -> FastAPI, every span into one `lens watch`; the proxy healthy, dropping
//!   `tracestate`, re-parenting, or dropping every trace header: the probe names that hop and
//!   what broke, and nothing else.
//! * `probe-bleed`: `lens probe --repeat 20 --concurrency 4` through FastAPI (NeMo Lens) ->
//!   aiohttp -> axum (lens), the FastAPI handler keeping its request's context in a module-level
//!   variable for the aiohttp call: `context-bleed` on the Python -> Rust hop, exit 1; the same
//!   handler taking the context from the request: no bleed, exit 0.
//!
//! Where docs/propagation-rules.md#differences-from-nemo-lens says lens differs, the check expects lens's documented behaviour and the
//! scenario names the row. The last line is `interop: N passed, M failed`; the exit status is 1
//! when any check failed or a scenario could not run.
#![forbid(unsafe_code)]

mod check;
mod describe;
mod doctor;
mod doctor_nginx;
mod doctor_queue;
mod doctor_rabbitmq;
mod error;
mod grpc;
mod http;
mod nats;
mod nccl;
mod probe;
mod probe_bleed;
mod python;
mod ray;
mod rows;
mod spans;
mod stream;
mod watch;
mod zeromq;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use check::Checks;
use error::{Error, Result};
use python::{PythonProcess, START_TIMEOUT};

const USAGE: &str =
    "usage: lens-interop --python PYTHON --scripts DIR --out DIR [--lens LENS] [--only SCENARIO]
scenarios: nccl, ray, http-python-first, http-rust-first, grpc-python-to-rust, grpc-rust-to-python,
nats, zeromq, watch, doctor, doctor-rabbitmq, probe, probe-bleed, http-stream (default: all; watch, doctor, doctor-rabbitmq,
probe and probe-bleed need --lens)";

const SCENARIOS: &[&str] = &[
    "nccl",
    "ray",
    "http-python-first",
    "http-rust-first",
    "grpc-python-to-rust",
    "grpc-rust-to-python",
    "nats",
    "zeromq",
    "watch",
    "doctor",
    "doctor-rabbitmq",
    "probe",
    "probe-bleed",
    "http-stream",
];

struct Options {
    python: PathBuf,
    scripts: PathBuf,
    out: PathBuf,
    only: Option<String>,
    /// The `lens` binary, for the `watch` scenario.
    lens: Option<PathBuf>,
}

fn options() -> std::result::Result<Options, String> {
    let mut args = std::env::args_os().skip(1);
    let (mut python, mut scripts, mut out, mut only, mut lens) = (None, None, None, None, None);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg:?} needs a value"));
        match arg.to_str() {
            Some("--python") => python = Some(PathBuf::from(value()?)),
            Some("--scripts") => scripts = Some(PathBuf::from(value()?)),
            Some("--out") => out = Some(PathBuf::from(value()?)),
            Some("--lens") => lens = Some(PathBuf::from(value()?)),
            Some("--only") => {
                let name = value()?.to_string_lossy().into_owned();
                if !SCENARIOS.contains(&name.as_str()) {
                    return Err(format!("unknown scenario {name:?}"));
                }
                only = Some(name);
            }
            _ => return Err(format!("unexpected argument {arg:?}")),
        }
    }
    Ok(Options {
        python: python.ok_or("--python is required")?,
        scripts: scripts.ok_or("--scripts is required")?,
        out: out.ok_or("--out is required")?,
        only,
        lens,
    })
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let options = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let started = Instant::now();
    let wanted = |name: &str| options.only.as_deref().is_none_or(|o| o == name);
    let mut results: Vec<Checks> = Vec::new();

    // One NeMo Lens "oracle" process serves the NCCL and Ray scenarios.
    let mut oracle = None;
    if wanted("nccl") || wanted("ray") {
        let mut nccl = Checks::new("nccl");
        match start_oracle(&options) {
            Ok(o) => oracle = Some(o),
            Err(e) => nccl.fail("start oracle.py", e),
        }
        if let (true, Some(o)) = (wanted("nccl"), oracle.as_mut()) {
            scenario(&mut nccl, |c| nccl::run(o, c));
        }
        if wanted("nccl") || oracle.is_none() {
            results.push(nccl);
        }
    }
    if wanted("ray")
        && let Some(mut o) = oracle.take()
    {
        let mut checks = Checks::new("ray");
        let out = scenario_dir(&options.out, "ray");
        let run = match out {
            Ok(out) => ray::run(&mut o, &mut checks, &out).await,
            Err(e) => Err(e),
        };
        if let Err(e) = run {
            checks.fail("scenario could not finish", e);
        }
        results.push(checks);
    }
    /// The scenarios that run a Python service or peer of their own.
    enum Live {
        Http(http::Direction),
        Grpc(grpc::Direction),
    }
    for (name, live) in [
        (
            "http-python-first",
            Live::Http(http::Direction::PythonFirst),
        ),
        ("http-rust-first", Live::Http(http::Direction::RustFirst)),
        (
            "grpc-python-to-rust",
            Live::Grpc(grpc::Direction::PythonToRust),
        ),
        (
            "grpc-rust-to-python",
            Live::Grpc(grpc::Direction::RustToPython),
        ),
    ] {
        if !wanted(name) {
            continue;
        }
        let mut checks = Checks::new(name);
        let (python, scripts) = (&options.python, &options.scripts);
        let run = match (scenario_dir(&options.out, name), live) {
            (Ok(out), Live::Http(d)) => http::run(python, scripts, &out, d, None, &mut checks)
                .await
                .map(drop),
            (Ok(out), Live::Grpc(d)) => grpc::run(python, scripts, &out, d, &mut checks).await,
            (Err(e), _) => Err(e),
        };
        if let Err(e) = run {
            checks.fail("scenario could not finish", e);
        }
        results.push(checks);
    }
    // NATS both ways, over a nats-server of the scenario's own.
    if wanted("nats") {
        let mut checks = Checks::new("nats");
        let run = match scenario_dir(&options.out, "nats") {
            Ok(out) => nats::run(&options.python, &options.scripts, &out, &mut checks).await,
            Err(e) => Err(e),
        };
        if let Err(e) = run {
            checks.fail("scenario could not finish", e);
        }
        results.push(checks);
    }
    // ZeroMQ both ways: pyzmq + msgspec with NeMo Lens, lens-zmq on libzmq.
    if wanted("zeromq") {
        let mut checks = Checks::new("zeromq");
        let run = match scenario_dir(&options.out, "zeromq") {
            Ok(out) => zeromq::run(&options.python, &options.scripts, &out, &mut checks),
            Err(e) => Err(e),
        };
        if let Err(e) = run {
            checks.fail("scenario could not finish", e);
        }
        results.push(checks);
    }
    // Streamed responses both ways (docs/streaming.md).
    if wanted("http-stream") {
        let mut checks = Checks::new("http-stream");
        let run = match scenario_dir(&options.out, "http-stream") {
            Ok(out) => stream::run(&options.python, &options.scripts, &out, &mut checks)
                .await
                .map(drop),
            Err(e) => Err(e),
        };
        if let Err(e) = run {
            checks.fail("scenario could not finish", e);
        }
        results.push(checks);
    }
    // The scenarios that run `lens watch` and `lens check`.
    for name in ["watch", "doctor", "doctor-rabbitmq", "probe", "probe-bleed"] {
        if !wanted(name) {
            continue;
        }
        let mut checks = Checks::new(name);
        let (python, scripts) = (&options.python, &options.scripts);
        let run = match (&options.lens, scenario_dir(&options.out, name)) {
            (None, _) => Err(Error::Http {
                what: format!("the {name} scenario"),
                message: "needs --lens PATH (the lens binary)".into(),
            }),
            (_, Err(e)) => Err(e),
            (Some(lens), Ok(out)) if name == "watch" => {
                watch::run(lens, python, scripts, &out, &mut checks).await
            }
            (Some(lens), Ok(out)) if name == "doctor" => {
                doctor::run(lens, python, scripts, &out, &mut checks).await
            }
            (Some(lens), Ok(out)) if name == "doctor-rabbitmq" => {
                doctor_rabbitmq::run(lens, python, scripts, &out, &mut checks).await
            }
            (Some(lens), Ok(out)) if name == "probe-bleed" => {
                probe_bleed::run(lens, python, scripts, &out, &mut checks).await
            }
            (Some(lens), Ok(out)) => probe::run(lens, python, scripts, &out, &mut checks).await,
        };
        if let Err(e) = run {
            checks.fail("scenario could not finish", e);
        }
        results.push(checks);
    }

    report(&results, started)
}

fn start_oracle(options: &Options) -> Result<PythonProcess> {
    let mut oracle = PythonProcess::spawn(
        &options.python,
        &options.scripts.join("oracle.py"),
        std::iter::empty::<&str>(),
    )?;
    let line = oracle.read_line(START_TIMEOUT)?;
    if line.trim() != r#"{"ready": true}"# {
        return Err(Error::Python {
            process: oracle.name().to_owned(),
            message: format!("expected the ready line, got {line:?}"),
        });
    }
    Ok(oracle)
}

fn scenario(checks: &mut Checks, run: impl FnOnce(&mut Checks) -> Result<()>) {
    if let Err(e) = run(checks) {
        checks.fail("scenario could not finish", e);
    }
}

fn scenario_dir(out: &Path, name: &str) -> Result<PathBuf> {
    let dir = out.join(name);
    std::fs::create_dir_all(&dir).map_err(Error::io(format!("creating {}", dir.display())))?;
    Ok(dir)
}

fn report(results: &[Checks], started: Instant) -> ExitCode {
    println!(
        "\ninterop scenarios ({:.1} s):",
        started.elapsed().as_secs_f64()
    );
    println!(
        "  {:<20} {:>6} {:>6} {:>6} {:>8}",
        "scenario", "passed", "failed", "spans", "contexts"
    );
    let (mut passed, mut failed) = (0, 0);
    for r in results {
        println!(
            "  {:<20} {:>6} {:>6} {:>6} {:>8}",
            r.scenario(),
            r.passed(),
            r.failures().len(),
            r.spans,
            r.contexts
        );
        passed += r.passed();
        failed += r.failures().len();
    }
    for r in results {
        for row in &r.rows {
            println!(
                "  {}: docs/propagation-rules.md#differences-from-nemo-lens row \"{row}\"",
                r.scenario()
            );
        }
    }
    for r in results {
        for f in r.failures() {
            println!("  FAILED {f}");
        }
    }
    println!("interop: {passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
