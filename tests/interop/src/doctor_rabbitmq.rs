//! Scenario doctor-rabbitmq: the propagation doctor on RabbitMQ as the Python instrumentations
//! users run write it. A RabbitMQ node of its own (lens-testkit's `rabbitmq`, on free ports;
//! without `rabbitmq-server` the scenario is skipped with a note, unless
//! `LENS_RABBITMQ=require`), `python/rabbitmq_peer.py` with `opentelemetry-instrumentation-pika`
//! and `-aio-pika` exporting every span to one `lens watch --save FILE`:
//!
//! 1. healthy: aio-pika publishes (`{exchange},{routing key}`), pika consumes (the exchange), its
//!    CONSUMER span the child of the PRODUCER span;
//! 2. a publisher that does not propagate: pika publishes (two PRODUCER spans, one in the other)
//!    and drops the headers; aio-pika's CONSUMER span starts a trace of its own.
//!
//! `lens check --json` on the saved file: exactly one finding, the `lost-context` of hop 2
//! (pika's inner PRODUCER span and aio-pika's CONSUMER span), exit 1.

use std::path::Path;
use std::time::Duration;

use lens_testkit::rabbitmq::{REQUIRE_ENV, RabbitMq, RabbitMqStartError};
use serde_json::json;

use crate::check::Checks;
use crate::error::{Error, Result};
use crate::python::PythonProcess;
use crate::spans::{self, Side, SpanRecord};
use crate::watch::{self, lens_check};

/// rabbitmq_peer.py's service name.
const SERVICE: &str = "lens-interop-rabbitmq";

/// How long the peer may take for both hops.
const PEER_TIMEOUT: Duration = Duration::from_secs(120);

/// Trace ids and the span count of each, in order of first appearance.
fn trace_counts(all: &[SpanRecord]) -> Vec<(String, usize)> {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for span in all {
        match counts.iter_mut().find(|(id, _)| *id == span.trace_id) {
            Some((_, n)) => *n += 1,
            None => counts.push((span.trace_id.clone(), 1)),
        }
    }
    counts
}

pub(crate) async fn run(
    lens: &Path,
    python: &Path,
    scripts: &Path,
    out: &Path,
    checks: &mut Checks,
) -> Result<()> {
    let node = match RabbitMq::try_start() {
        Ok(node) => node,
        Err(RabbitMqStartError::NotInstalled)
            if !std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "require") =>
        {
            println!(
                "  doctor-rabbitmq skipped: rabbitmq-server is not installed (apt-get install \
                 rabbitmq-server; {REQUIRE_ENV}=require makes this a failure)"
            );
            return Ok(());
        }
        Err(e) => {
            return Err(Error::Context {
                what: "starting rabbitmq-server".into(),
                message: e.to_string(),
            });
        }
    };
    let save = out.join("doctor-rabbitmq.jsonl");
    let watch = watch::start(lens, &save)?;
    let spans_path = out.join("python-spans.json");
    let mut peer = PythonProcess::spawn(
        python,
        &scripts.join("rabbitmq_peer.py"),
        [
            node.url(),
            "--otlp-protocol".into(),
            "grpc".into(),
            "--otlp-endpoint".into(),
            watch.grpc_url(),
            "--spans".into(),
            spans_path.display().to_string(),
        ],
    )?;
    tokio::task::block_in_place(|| -> Result<()> {
        peer.read_tagged("{\"done\"", PEER_TIMEOUT)?;
        peer.finish()
    })?;
    drop(node);
    let all = spans::read_python(&spans_path)?;
    checks.spans += all.len();

    // Hop 1: aio-pika's PRODUCER span, pika's CONSUMER span under it.
    let healthy_producer = spans::one(checks, &all, Side::Python, "PRODUCER", "aio-pika", |s| {
        s.attribute("messaging.destination").as_deref() == Some("lens.jobs,healthy")
    })
    .cloned();
    let healthy_consumer = spans::one(checks, &all, Side::Python, "CONSUMER", "pika", |s| {
        s.parent_span_id.is_some()
    })
    .cloned();
    spans::parent_is(
        checks,
        healthy_consumer.as_ref(),
        healthy_producer.as_ref(),
        true,
    );
    // Hop 2: pika's inner PRODUCER span (under its outer one), aio-pika's CONSUMER root.
    let outer = spans::one(checks, &all, Side::Python, "PRODUCER", "pika, outer", |s| {
        s.parent_span_id.is_none()
            && s.attribute("messaging.destination").as_deref() == Some("lens.jobs")
    })
    .cloned();
    let blind_producer = spans::one(checks, &all, Side::Python, "PRODUCER", "pika, inner", |s| {
        s.parent_span_id.is_some()
    })
    .cloned();
    spans::parent_is(checks, blind_producer.as_ref(), outer.as_ref(), false);
    let blind_consumer = spans::one(checks, &all, Side::Python, "CONSUMER", "aio-pika", |s| {
        s.parent_span_id.is_none()
    })
    .cloned();

    let expected = trace_counts(&all);
    let mut lines = tokio::task::block_in_place(|| watch.read_until(&expected))?;
    lines.extend(watch.finish()?);
    checks.eq(
        "lens watch shows every trace of both hops",
        &expected.len(),
        &expected
            .iter()
            .filter(|(id, _)| watch::last_trace(&lines, id).is_some())
            .count(),
    );

    let checked = lens_check(lens, &["--json"], &save)?;
    checks.eq(
        "lens check exits 1 (an error finding)",
        &checked.code,
        &Some(1),
    );
    let found: Vec<&serde_json::Value> = checked
        .lines
        .iter()
        .filter(|l| l.get("finding").is_some())
        .collect();
    let (Some(producer), Some(consumer)) = (&blind_producer, &blind_consumer) else {
        return Ok(());
    };
    let want = json!({
        "finding": "lost-context",
        "severity": "error",
        "trace_ids": [producer.trace_id, consumer.trace_id],
        "span_ids": [producer.span_id, consumer.span_id],
        "services": [SERVICE, SERVICE],
    });
    let got: Vec<serde_json::Value> = found
        .iter()
        .map(|f| {
            json!({
                "finding": f["finding"],
                "severity": f["severity"],
                "trace_ids": f["trace_ids"],
                "span_ids": f["span_ids"],
                "services": f["services"],
            })
        })
        .collect();
    checks.eq(
        "lens check: exactly the lost-context of hop 2 (pika publishing without context -> aio-pika)",
        &got,
        &vec![want],
    );
    Ok(())
}
