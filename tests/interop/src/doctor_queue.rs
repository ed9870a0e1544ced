//! The queue hops of scenario doctor, over a nats-server of their own, every span of both sides
//! into the same `lens watch` as the HTTP hops (Python by its SDK's OTLP exporter as each span
//! ends, Rust by opentelemetry-otlp at the end):
//!
//! 5. healthy Python -> Rust: `nats_peer.py` publishes as the NeMo Lens page says (a PRODUCER
//!    span, `inject_context(headers)`, `nc.publish`) into a lens-nats consumer, whose `process`
//!    span is the child of the PRODUCER span;
//! 6. healthy Rust -> Python: a lens-nats `TracedClient` publishes into `nats_peer.py`'s
//!    handler (`extract_context(msg.headers)` + `attach` + a CONSUMER span);
//! 7. a publisher that does not inject: `nats_peer.py` records its PRODUCER span but sends the
//!    message with a header of its own and no trace context; the lens-nats consumer starts a new
//!    trace (`lens.trace.new_root` = `none`): the doctor's `lost-context` over a queue;
//! 8. a consumer that links: `nats_peer.py` injects, and a lens-nats consumer with
//!    `ConsumerParent::Links` starts a new trace linked to the PRODUCER span
//!    (`lens.trace.new_root` = `linked`): continued by link, no finding;
//! 9. fan-out: `nats_peer.py` injects and publishes to a subject with two subscribers, a
//!    lens-nats consumer that continues the trace and a Python audit subscriber that ignores the
//!    headers (its CONSUMER span a root of its own): the doctor's `lost-context` for the audit
//!    subscriber alone.

use std::path::Path;
use std::time::Duration;

use async_nats::jetstream::{self, stream};
use futures_util::StreamExt;
use lens_nats::{ConsumerParent, TracedSubscriber};
use lens_testkit::nats::NatsServer;
use serde_json::json;

use crate::check::Checks;
use crate::error::{Error, Result};
use crate::http::{self, OtlpTargets};
use crate::python::{PythonProcess, START_TIMEOUT};
use crate::spans::{self, Side, SpanRecord};

/// The Python peer's service name (tests/interop/python/nats_peer.py).
pub(crate) const PYTHON_NATS_SERVICE: &str = "lens-interop-nats";

/// How long the Rust side waits for a message the Python side sent.
const RECEIVE_TIMEOUT: Duration = Duration::from_secs(30);

/// Subjects of hops 5, 7 and 8 (consumed by Rust), and of hop 6 (consumed by Python).
const HEALTHY: &str = "rs.doctor.healthy";
const BLIND: &str = "rs.doctor.blind";
const LINKED: &str = "rs.linked.doctor";
const TO_PYTHON: &str = "py.core.doctor";
/// Hop 9's subject: a lens-nats consumer and nats_peer.py's audit subscriber (`fan.>`).
const FANOUT: &str = "fan.doctor.jobs";

/// A hop's sending span (PRODUCER) and receiving span (CONSUMER).
pub(crate) type Hop = (Option<SpanRecord>, Option<SpanRecord>);

/// The spans of hops 5 to 8.
pub(crate) struct QueueHops {
    pub(crate) healthy_to_rust: Hop,
    pub(crate) healthy_to_python: Hop,
    pub(crate) blind: Hop,
    pub(crate) linked: Hop,
    /// Hop 9: the Python producer and the Rust consumer that continued it, then the Python
    /// audit subscriber's CONSUMER span (a root).
    pub(crate) fanout: Hop,
    pub(crate) fanout_ignored: Option<SpanRecord>,
    /// Every span of both sides.
    pub(crate) all: Vec<SpanRecord>,
}

/// The next message of `subscriber`, processed (its `process` span ended).
async fn process_next(subscriber: &mut TracedSubscriber, what: &str) -> Result<()> {
    let message = tokio::time::timeout(RECEIVE_TIMEOUT, subscriber.next())
        .await
        .map_err(|_| Error::Timeout {
            what: format!("the rust consumer: {what}"),
            after: RECEIVE_TIMEOUT,
        })?
        .ok_or_else(|| Error::Nats {
            what: format!("the rust consumer: {what}"),
            message: "the subscription ended".into(),
        })?;
    message.in_span(async {}).await;
    Ok(())
}

/// Runs hops 5 to 8; `out` gets both sides' span files.
pub(crate) async fn run(
    python: &Path,
    scripts: &Path,
    out: &Path,
    otlp: &OtlpTargets,
    checks: &mut Checks,
) -> Result<QueueHops> {
    let server = NatsServer::try_start().map_err(Error::nats("starting nats-server"))?;
    let client = async_nats::connect(server.url())
        .await
        .map_err(Error::nats("connecting to nats-server"))?;
    // nats_peer.py pulls from this stream when it starts.
    jetstream::new(client.clone())
        .create_stream(stream::Config {
            name: "PYJOBS".into(),
            subjects: vec!["py.js.>".into()],
            ..Default::default()
        })
        .await
        .map_err(Error::nats("creating stream PYJOBS"))?;
    let spans::Recording {
        exporter,
        provider,
        tracer,
    } = spans::Recording::new();
    let subscribe = |subject: &'static str, parent: ConsumerParent| {
        let client = client.clone();
        let consumer = lens_nats::Consumer::new()
            .with_tracer(tracer.clone())
            .with_consumer_parent(parent);
        async move {
            let subscriber = client
                .subscribe(subject)
                .await
                .map_err(Error::nats(format!("subscribing to {subject}")))?;
            Ok::<_, Error>(consumer.subscriber(&client, subscriber))
        }
    };
    let mut healthy = subscribe(HEALTHY, ConsumerParent::Message).await?;
    let mut blind = subscribe(BLIND, ConsumerParent::Message).await?;
    let mut linked = subscribe(LINKED, ConsumerParent::Links).await?;
    let mut fanout = subscribe(FANOUT, ConsumerParent::Message).await?;
    client
        .flush()
        .await
        .map_err(Error::nats("flushing the subscriptions"))?;

    let mut peer = PythonProcess::spawn(
        python,
        &scripts.join("nats_peer.py"),
        [
            server.url(),
            "--otlp-protocol".into(),
            otlp.python.0.into(),
            "--otlp-endpoint".into(),
            otlp.python.1.clone(),
        ],
    )?;
    tokio::task::block_in_place(|| peer.read_tagged("READY", START_TIMEOUT))?;

    // Hops 5, 7, 8 and 9: Python publishes (a root PRODUCER span each), Rust consumes.
    for (subject, inject, subscriber) in [
        (HEALTHY, true, &mut healthy),
        (BLIND, false, &mut blind),
        (LINKED, true, &mut linked),
        (FANOUT, true, &mut fanout),
    ] {
        let answer = tokio::task::block_in_place(|| {
            peer.request(&json!({
                "op": "publish",
                "mode": "core",
                "subject": subject,
                "parent": {"span": null, "baggage": []},
                "payload": "rollout job",
                "inject": inject,
            }))
        })?;
        if let Some(e) = answer.get("error") {
            return Err(Error::Nats {
                what: format!("nats_peer.py publishing to {subject}"),
                message: e.to_string(),
            });
        }
        process_next(subscriber, subject).await?;
    }

    // Hop 9's other subscriber: the Python audit handler.
    let answer =
        tokio::task::block_in_place(|| peer.request(&json!({"op": "next", "queue": "fan"})))?;
    checks.eq(
        "queue hop 9: the python audit subscriber got the message",
        &answer["subject"].as_str(),
        &Some(FANOUT),
    );

    // Hop 6: Rust publishes from no context (a root PRODUCER span), Python consumes.
    lens_nats::Producer::new()
        .with_tracer(tracer.clone())
        .client(client.clone())
        .publish(TO_PYTHON, "rollout job".into())
        .await
        .map_err(Error::nats(format!("publishing to {TO_PYTHON}")))?;
    let answer =
        tokio::task::block_in_place(|| peer.request(&json!({"op": "next", "queue": "core"})))?;
    checks.eq(
        "queue hop 6: python consumed the rust message",
        &answer["subject"].as_str(),
        &Some(TO_PYTHON),
    );

    let spans_path = out.join("python-spans.json");
    let mut all = tokio::task::block_in_place(|| -> Result<Vec<SpanRecord>> {
        peer.request(&json!({"op": "finish", "spans": spans_path}))?;
        peer.finish()?;
        spans::read_python(&spans_path)
    })?;
    drop((healthy, blind, linked, fanout));
    all.extend(http::finish_rust(&provider, &exporter, Some(otlp), out).await?);

    let hop = |checks: &mut Checks, subject: &str, from: Side, to: Side| -> Hop {
        let on =
            |s: &SpanRecord| s.attribute("messaging.destination.name").as_deref() == Some(subject);
        let producer = spans::one(checks, &all, from, "PRODUCER", subject, on).cloned();
        let consumer = spans::one(checks, &all, to, "CONSUMER", subject, on).cloned();
        (producer, consumer)
    };
    let hops = QueueHops {
        healthy_to_rust: hop(checks, HEALTHY, Side::Python, Side::Rust),
        healthy_to_python: hop(checks, TO_PYTHON, Side::Rust, Side::Python),
        blind: hop(checks, BLIND, Side::Python, Side::Rust),
        linked: hop(checks, LINKED, Side::Python, Side::Rust),
        fanout: hop(checks, FANOUT, Side::Python, Side::Rust),
        fanout_ignored: hop(checks, FANOUT, Side::Python, Side::Python).1,
        all: Vec::new(),
    };
    for (producer, consumer) in [&hops.healthy_to_rust, &hops.healthy_to_python, &hops.fanout] {
        spans::parent_is(checks, consumer.as_ref(), producer.as_ref(), true);
    }
    for ((producer, consumer), cause, linked) in
        [(&hops.blind, "none", false), (&hops.linked, "linked", true)]
    {
        let (Some(producer), Some(consumer)) = (producer, consumer) else {
            continue;
        };
        checks.eq(
            &format!(
                "rust {}: a new root, lens.trace.new_root = {cause}",
                consumer.name
            ),
            &(
                consumer.parent_span_id.as_deref(),
                consumer.attribute("lens.trace.new_root"),
            ),
            &(None, Some(cause.to_owned())),
        );
        let links: Vec<(&str, &str)> = consumer
            .links
            .iter()
            .map(|l| (l.trace_id.as_str(), l.span_id.as_str()))
            .collect();
        let expected: Vec<(&str, &str)> = if linked {
            vec![(producer.trace_id.as_str(), producer.span_id.as_str())]
        } else {
            Vec::new()
        };
        checks.eq(
            &format!(
                "rust {}: links to the producer span only when it asked for links",
                consumer.name
            ),
            &links,
            &expected,
        );
    }
    if let Some(ignored) = &hops.fanout_ignored {
        checks.eq(
            "python audit subscriber (hop 9): a root of its own",
            &ignored.parent_span_id.as_deref(),
            &None,
        );
    }
    Ok(QueueHops { all, ..hops })
}
