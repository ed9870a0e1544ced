//! The scenario: the Python peer, then every case in one direction.

use std::path::Path;

use serde_json::json;

use super::case::{Direction, cases};
use super::python_to_rust::python_to_rust;
use super::rust_to_python::rust_to_python;
use super::span_checks::check_spans;
use crate::check::Checks;
use crate::error::Result;
use crate::python::{PythonProcess, START_TIMEOUT};
use crate::spans::{self, SpanRecord};

pub(crate) async fn run(
    python: &Path,
    scripts: &Path,
    out: &Path,
    direction: Direction,
    checks: &mut Checks,
) -> Result<()> {
    let spans::Recording {
        exporter,
        provider,
        tracer,
    } = spans::Recording::new();

    let mut peer = PythonProcess::spawn(
        python,
        &scripts.join("grpc_peer.py"),
        std::iter::empty::<&str>(),
    )?;
    let port = tokio::task::block_in_place(|| peer.read_tagged("LISTENING", START_TIMEOUT))?;
    let cases = cases(direction);
    let observed = match direction {
        Direction::PythonToRust => python_to_rust(&mut peer, &tracer, &cases, checks).await?,
        Direction::RustToPython => rust_to_python(&port, &tracer, &cases, checks).await?,
    };

    let spans_path = out.join("python-spans.json");
    let mut all = tokio::task::block_in_place(|| -> Result<Vec<SpanRecord>> {
        let answer = peer.request(&json!({"op": "finish", "spans": spans_path}))?;
        peer.finish()?;
        let spans = spans::read_python(&spans_path)?;
        checks.eq(
            "python reports the spans it wrote",
            &answer["spans"].as_u64(),
            &u64::try_from(spans.len()).ok(),
        );
        Ok(spans)
    })?;
    let _ignored = provider.force_flush();
    all.extend(spans::take_rust(&exporter, &out.join("rust-spans.json"))?);

    for (case, seen) in cases.iter().zip(&observed) {
        check_spans(checks, direction, case, seen, &all);
    }
    Ok(())
}
