//! The demo's queue hop, with `--nats URL`: after each training step the trainer publishes a
//! rollout job through lens-nats (a PRODUCER `send` span, the context in the message's
//! headers); the rollout worker consumes it through lens-nats (a CONSUMER `process` span, the
//! child of the trainer's `send` span) and collects the rollout under it.
//!
//! Each run publishes to a subject of its own, `rollout.jobs.<run>`, so that demos sharing one
//! nats-server never consume each other's jobs; both sides declare the template
//! `rollout.jobs.*`, which names the spans and the metrics (no new span name or series per run).

use std::hash::{BuildHasher as _, Hasher as _, RandomState};
use std::time::Duration;

use futures_util::StreamExt as _;
use lens_nats::{Consumer, FilterDecision, Producer, TracedClient};
use opentelemetry::context::FutureExt as _;
use opentelemetry::trace::{SpanKind, TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::SdkTracer;

use super::collect::Service;
use super::error::DemoError;
use super::hop::{Hop, ROLLOUT_JOBS};

/// lens-nats's instrumentation scope (its default tracer's name).
const NATS_SCOPE: &str = "lens-nats";

/// How long connecting to the nats-server may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Connects to the nats-server at `url` (`nats://host:port`, `host:port` or `host`), once:
/// an unreachable server is an error now, not a retry loop.
pub(crate) async fn connect(url: &str) -> Result<async_nats::Client, DemoError> {
    async_nats::ConnectOptions::new()
        .name("lens-demo")
        .connection_timeout(CONNECT_TIMEOUT)
        .connect(url)
        .await
        .map_err(|e| {
            DemoError::Nats(format!(
                "cannot connect to the nats-server at {url} ({e}); start one (`nats-server`) or \
                 leave out --nats"
            ))
        })
}

/// The trainer's side of the queue: its traced client and the run's subject.
#[derive(Clone, Debug)]
pub(super) struct RolloutJobs {
    client: TracedClient,
    subject: String,
}

impl RolloutJobs {
    /// Starts the rollout worker's consumer on `client` and returns the trainer's publisher;
    /// when the queue hop is `broken`, the trainer records its `send` spans but injects nothing.
    pub(super) async fn start(
        client: &async_nats::Client,
        trainer: &Service,
        worker: &Service,
        broken: Option<Hop>,
    ) -> Result<RolloutJobs, DemoError> {
        let run = RandomState::new().build_hasher().finish() as u32;
        let subject = format!("{ROLLOUT_JOBS}.{run:08x}");
        let subscriber = client
            .subscribe(subject.clone())
            .await
            .map_err(|e| DemoError::Nats(format!("cannot subscribe to {subject}: {e}")))?;
        let mut jobs = Consumer::new()
            .with_tracer(worker.tracer(NATS_SCOPE))
            .with_meter(worker.meter(NATS_SCOPE))
            .with_destination_template(format!("{ROLLOUT_JOBS}.*"))
            .subscriber(client, subscriber);
        let rollout = worker.tracer("rollout-worker");
        tokio::spawn(async move {
            while let Some(job) = jobs.next().await {
                // The `process` span is current inside and ends as `job` is dropped.
                job.in_span(collect_rollout(&rollout, job.payload.len()))
                    .await;
            }
        });
        let inject = broken != Some(Hop::TrainerToRolloutJobs);
        let client = Producer::new()
            .with_tracer(trainer.tracer(NATS_SCOPE))
            .with_meter(trainer.meter(NATS_SCOPE))
            .with_destination_template(format!("{ROLLOUT_JOBS}.*"))
            .with_filter(move |_: &lens_nats::MessageInfo<'_>| FilterDecision {
                span: true,
                inject,
            })
            .client(client.clone());
        Ok(RolloutJobs { client, subject })
    }

    /// Publishes the job for `prompt` from the trainer's context `cx`.
    pub(super) async fn publish(&self, cx: &Context, prompt: &str) -> Result<(), DemoError> {
        self.client
            .publish(self.subject.clone(), prompt.to_owned().into())
            .with_context(cx.clone())
            .await
            .map_err(|e| DemoError::Nats(format!("cannot publish to {}: {e}", self.subject)))
    }
}

/// The worker's work on one job: a span under the job's `process` span.
async fn collect_rollout(tracer: &SdkTracer, bytes: usize) {
    let cx = Context::current();
    let span = tracer
        .span_builder("collect rollout")
        .with_kind(SpanKind::Internal)
        .with_attributes([KeyValue::new("rollout.job.bytes", bytes as i64)])
        .start_with_context(tracer, &cx);
    cx.with_span(span).span().end();
}
