//! The scenario, case by case, then the batch and the links-only consumer.

use std::path::Path;

use lens_testkit::nats::NatsServer;
use serde_json::json;

use super::batch::{batch_label, linked_label, python_batch_to_rust, python_to_rust_linked};
use super::batch_checks::{check_batch, check_linked};
use super::case::{Direction, cases};
use super::context_checks::check_context;
use super::exchange::{python_to_rust, rust_to_python};
use super::rust_side::start_rust;
use super::span_checks::check_spans;
use crate::check::Checks;
use crate::error::{Error, Result};
use crate::python::{PythonProcess, START_TIMEOUT};
use crate::spans::{self, SpanRecord};

pub(crate) async fn run(
    python: &Path,
    scripts: &Path,
    out: &Path,
    checks: &mut Checks,
) -> Result<()> {
    let server = NatsServer::try_start().map_err(Error::nats("starting nats-server"))?;
    let spans::Recording {
        exporter,
        provider,
        tracer,
    } = spans::Recording::new();
    let mut rust = start_rust(&server, &tracer).await?;

    let mut peer = PythonProcess::spawn(python, &scripts.join("nats_peer.py"), [server.url()])?;
    tokio::task::block_in_place(|| peer.read_tagged("READY", START_TIMEOUT))?;

    let cases = cases();
    let mut observed = Vec::new();
    for case in &cases {
        let seen = match case.direction {
            Direction::PythonToRust => python_to_rust(&mut peer, &mut rust, case).await,
            Direction::RustToPython => rust_to_python(&mut peer, &rust, &tracer, case).await,
        };
        match seen {
            Ok(seen) => observed.push(Some(seen)),
            Err(e) => {
                checks.fail(&case.label("message could not go"), e);
                observed.push(None);
            }
        }
    }

    let batch = python_batch_to_rust(&mut peer, &rust).await;
    let linked = python_to_rust_linked(&mut peer, &mut rust).await;

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
    rust.responder.abort();
    drop(rust.client);
    let _ignored = provider.force_flush();
    all.extend(spans::take_rust(&exporter, &out.join("rust-spans.json"))?);

    for (case, seen) in cases.iter().zip(&observed) {
        if let Some(seen) = seen {
            check_context(checks, case, seen);
            check_spans(checks, case, seen, &all, server.port());
        }
    }
    match batch {
        Ok(batch) => check_batch(checks, &batch, &all),
        Err(e) => checks.fail(&batch_label("the batch could not go"), e),
    }
    match linked {
        Ok(linked) => check_linked(checks, &linked, &all),
        Err(e) => checks.fail(&linked_label("the message could not go"), e),
    }
    Ok(())
}
