//! The doctor on what lens-nats writes against a real nats-server (started by the test; the
//! test skips without one unless `LENS_NATS=require`): a message that lost its context is
//! reported when lens-nats's `process` span links to the batch `receive` span (JetStream) or
//! to the span current where a core subscriber was polled, links that are not the producer's.
//! Each case sends a healthy message beside the lost one: exactly one finding.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Instant;

use async_nats::jetstream::{self, consumer, stream};
use futures_util::StreamExt;
use lens_testkit::nats::NatsServer;
use lens_testkit::recorder::Recorder;
use lens_watch::diagnose::{Finding, Rule};
use lens_watch::session::{Session, SessionConfig};
use opentelemetry::trace::{
    FutureExt as _, Span as _, SpanId, SpanKind, TraceContextExt as _, Tracer as _,
    TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider, SpanData};

/// One traced service: its spans recorded as its SDK ends them.
struct Service {
    resource: Resource,
    provider: SdkTracerProvider,
    recorder: Recorder,
}

impl Service {
    fn new(name: &str) -> Self {
        let resource = Resource::builder_empty()
            .with_service_name(name.to_owned())
            .build();
        let recorder = Recorder::default();
        let provider = SdkTracerProvider::builder()
            .with_resource(resource.clone())
            .with_span_processor(recorder.clone())
            .build();
        Service {
            resource,
            provider,
            recorder,
        }
    }

    fn tracer(&self) -> SdkTracer {
        self.provider.tracer("test")
    }

    /// Its spans as the OTLP exporter sends them.
    async fn export(&self, spans: usize) -> ExportTraceServiceRequest {
        let spans: Vec<SpanData> = self.recorder.wait_for(spans).await;
        ExportTraceServiceRequest {
            resource_spans: group_spans_by_resource_and_scope(
                spans,
                &ResourceAttributesWithSchema::from(&self.resource),
            ),
        }
    }
}

/// The findings of `lens check` on these export requests.
fn check(requests: Vec<ExportTraceServiceRequest>) -> Vec<Finding> {
    let mut session = Session::new(SessionConfig::default());
    for request in requests {
        session.ingest(lens_watch::decode::from_request(request), Instant::now());
    }
    session
        .flush()
        .into_iter()
        .flat_map(|done| done.findings)
        .collect()
}

/// A PRODUCER span of trainer for `subject`, recorded as a publisher that does not inject
/// writes it (the message goes out without its context).
fn uninjected_send(trainer: &Service, subject: &str) -> opentelemetry_sdk::trace::Span {
    trainer
        .tracer()
        .span_builder(format!("send {subject}"))
        .with_kind(SpanKind::Producer)
        .with_attributes([
            KeyValue::new("messaging.system", "nats"),
            KeyValue::new("messaging.destination.name", subject.to_owned()),
            KeyValue::new("messaging.operation.type", "send"),
        ])
        .start(&trainer.tracer())
}

/// Exactly one `lost-context`, from trainer's span `lost` to rollout-worker.
fn one_lost_hop(findings: &[Finding], lost: SpanId) {
    assert_eq!(findings.len(), 1, "{findings:#?}");
    let f = &findings[0];
    assert_eq!(f.rule, Rule::LostContext, "{f}");
    assert_eq!(f.services, ["trainer", "rollout-worker"]);
    assert_eq!(f.span_ids[0].0, lost.to_bytes());
}

#[tokio::test]
async fn a_message_that_lost_its_context_in_a_jetstream_batch_is_reported() {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let client = async_nats::connect(server.url()).await.unwrap();
    let js = jetstream::new(client.clone());
    let pull = js
        .create_stream(stream::Config {
            name: "JOBS".into(),
            subjects: vec!["jobs.>".into()],
            ..Default::default()
        })
        .await
        .unwrap()
        .create_consumer(consumer::pull::Config {
            durable_name: Some("workers".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let (trainer, worker) = (Service::new("trainer"), Service::new("rollout-worker"));
    // One message with its context (lens-nats), one without (a PRODUCER span, a plain publish).
    lens_nats::Producer::new()
        .with_tracer(trainer.tracer())
        .jetstream(js.clone())
        .publish("jobs.new", "kept".into())
        .await
        .unwrap();
    let mut send = uninjected_send(&trainer, "jobs.new");
    let lost = send.span_context().span_id();
    js.publish("jobs.new", "lost".into())
        .await
        .unwrap()
        .await
        .unwrap();
    send.end();
    // Both in one batch: a `receive` span, a `process` span per message.
    let batch = lens_nats::Consumer::new()
        .with_tracer(worker.tracer())
        .receive(&client, "JOBS", pull.fetch().max_messages(2).messages())
        .await
        .unwrap();
    assert_eq!(batch.len(), 2);
    let receive = batch.receive_span_context().unwrap();
    for message in batch {
        message.ack().await.unwrap();
    }
    let trainer_spans = trainer.export(2).await;
    // receive, two process, two settle.
    let worker_spans = worker.export(5).await;
    // The premise: the lost message's `process` span is a root that links to the `receive`
    // span, a span of another trace.
    let process_roots: Vec<SpanData> = worker
        .recorder
        .ended()
        .into_iter()
        .filter(|s| s.span_kind == SpanKind::Consumer && s.parent_span_id == SpanId::INVALID)
        .collect();
    assert_eq!(process_roots.len(), 1);
    assert!(
        process_roots[0]
            .links
            .iter()
            .any(|l| l.span_context.span_id() == receive.span_id())
    );
    one_lost_hop(&check(vec![trainer_spans, worker_spans]), lost);
}

/// A worker polls its subscriber inside a span of its own (its loop's) and processes two
/// messages, one sent with its context and one without; lens-nats's consumer parents the
/// `process` spans as `parent` says. The doctor reports exactly the message that lost its
/// context.
async fn polled_under_a_span(parent: lens_nats::ConsumerParent) {
    let Some(server) = NatsServer::start() else {
        return;
    };
    let client = async_nats::connect(server.url()).await.unwrap();
    let (trainer, worker) = (Service::new("trainer"), Service::new("rollout-worker"));
    let mut jobs = lens_nats::Consumer::new()
        .with_tracer(worker.tracer())
        .with_consumer_parent(parent)
        .subscriber(&client, client.subscribe("jobs.core").await.unwrap());
    lens_nats::Producer::new()
        .with_tracer(trainer.tracer())
        .client(client.clone())
        .publish("jobs.core", "kept".into())
        .await
        .unwrap();
    let mut send = uninjected_send(&trainer, "jobs.core");
    let lost = send.span_context().span_id();
    client.publish("jobs.core", "lost".into()).await.unwrap();
    client.flush().await.unwrap();
    send.end();
    let poll = worker.tracer().start("poll jobs");
    let ambient = Context::current_with_span(poll);
    async {
        for _ in 0..2 {
            let message = jobs.next().await.unwrap();
            message.in_span(async {}).await;
        }
    }
    .with_context(ambient.clone())
    .await;
    ambient.span().end();
    let poll_id = ambient.span().span_context().span_id();
    let trainer_spans = trainer.export(2).await;
    // poll jobs, two process.
    let worker_spans = worker.export(3).await;
    let process: Vec<SpanData> = worker
        .recorder
        .ended()
        .into_iter()
        .filter(|s| s.span_kind == SpanKind::Consumer)
        .collect();
    assert_eq!(process.len(), 2);
    // The premise, per mode: where the message without context's `process` span sits.
    let unlinked_to_a_send = |s: &SpanData| {
        !s.links
            .iter()
            .any(|l| l.span_context.trace_id() != poll_trace(&ambient))
    };
    match parent {
        // The conventions' default: both are children of the poll span; the one whose message
        // carried a context links to its send, the other links to nothing.
        lens_nats::ConsumerParent::Ambient => {
            assert!(process.iter().all(|s| s.parent_span_id == poll_id));
            assert_eq!(process.iter().filter(|s| unlinked_to_a_send(s)).count(), 1);
        }
        // The message as parent: the lost one is a root of its own that links to the poll
        // span, a span of another trace.
        _ => {
            let roots: Vec<&SpanData> = process
                .iter()
                .filter(|s| s.parent_span_id == SpanId::INVALID)
                .collect();
            assert_eq!(roots.len(), 1);
            assert!(
                roots[0]
                    .links
                    .iter()
                    .any(|l| l.span_context.span_id() == poll_id)
            );
        }
    }
    one_lost_hop(&check(vec![trainer_spans, worker_spans]), lost);
}

fn poll_trace(ambient: &Context) -> opentelemetry::trace::TraceId {
    ambient.span().span_context().trace_id()
}

#[tokio::test]
async fn a_message_that_lost_its_context_on_a_subscriber_polled_under_a_span_is_reported() {
    // lens-nats's default: the poll span is the parent, the message's context a link.
    polled_under_a_span(lens_nats::ConsumerParent::Ambient).await;
}

#[tokio::test]
async fn the_same_with_the_message_as_parent() {
    polled_under_a_span(lens_nats::ConsumerParent::Message).await;
}
