//! The Rust side: lens-nats over one client, its streams, consumers and responder.

use async_nats::jetstream::{self, consumer, stream};
use futures_util::StreamExt;
use lens_core::W3cPropagator;
use lens_nats::ConsumerParent;
use lens_testkit::nats::NatsServer;
use opentelemetry::Context;
use serde_json::json;

use super::observed::Handled;
use crate::describe::seen;
use crate::error::{Error, Result};

/// The Rust side: lens-nats over one client.
pub(super) struct Rust {
    pub(super) client: async_nats::Client,
    pub(super) producer: lens_nats::TracedClient,
    pub(super) jetstream: lens_nats::TracedJetStream,
    pub(super) core: lens_nats::TracedSubscriber,
    pub(super) pulled: lens_nats::TracedMessages,
    /// `rs.linked.>`: a consumer that asks for links only (`ConsumerParent::Links`).
    pub(super) linked: lens_nats::TracedSubscriber,
    /// The lens consumer, for a pulled batch (`Consumer::receive`).
    pub(super) consumer: lens_nats::Consumer,
    /// The pull consumer `rs-batch` on the stream `RSBATCH` (`rs.batch.>`).
    pub(super) batch: consumer::PullConsumer,
    /// What the responder task's handler saw of each request, in order.
    pub(super) requests: tokio::sync::mpsc::UnboundedReceiver<Result<Handled, String>>,
    pub(super) responder: tokio::task::JoinHandle<()>,
}

/// Streams `PYJOBS` (`py.js.>`) and `RSJOBS` (`rs.js.>`), lens-nats's wrappers on the Rust
/// side (its consumer reading Python's `+` for a space in baggage, as the gRPC server does), the
/// responder task on `rs.svc`; flushed, so that the server knows every subscription.
pub(super) async fn start_rust(
    server: &NatsServer,
    tracer: &opentelemetry_sdk::trace::SdkTracer,
) -> Result<Rust> {
    let client = async_nats::connect(server.url())
        .await
        .map_err(Error::nats("connecting to nats-server"))?;
    let js = jetstream::new(client.clone());
    let mut streams = Vec::new();
    for (name, subjects) in [
        ("PYJOBS", "py.js.>"),
        ("RSJOBS", "rs.js.>"),
        ("RSBATCH", "rs.batch.>"),
    ] {
        let stream = js
            .create_stream(stream::Config {
                name: name.into(),
                subjects: vec![subjects.into()],
                ..Default::default()
            })
            .await
            .map_err(Error::nats(format!("creating stream {name}")))?;
        streams.push(stream);
    }
    let pull = streams[1]
        .create_consumer(consumer::pull::Config {
            durable_name: Some("rs-worker".into()),
            ..Default::default()
        })
        .await
        .map_err(Error::nats("creating consumer rs-worker"))?;
    let batch = streams[2]
        .create_consumer(consumer::pull::Config {
            durable_name: Some("rs-batch".into()),
            ..Default::default()
        })
        .await
        .map_err(Error::nats("creating consumer rs-batch"))?;

    let consumer = lens_nats::Consumer::new()
        .with_tracer(tracer.clone())
        .with_propagator(W3cPropagator::new().with_plus_as_space(true));
    let producer = || lens_nats::Producer::new().with_tracer(tracer.clone());
    let subscribe = |subject: &'static str| {
        let client = client.clone();
        async move {
            client
                .subscribe(subject)
                .await
                .map_err(Error::nats(format!("subscribing to {subject}")))
        }
    };
    let core = consumer.subscriber(&client, subscribe("rs.core.>").await?);
    let linked = lens_nats::Consumer::new()
        .with_tracer(tracer.clone())
        .with_propagator(W3cPropagator::new().with_plus_as_space(true))
        .with_consumer_parent(ConsumerParent::Links)
        .subscriber(&client, subscribe("rs.linked.>").await?);
    let mut requests = consumer.subscriber(&client, subscribe("rs.svc").await?);
    let pulled = consumer.messages(
        &client,
        pull.messages()
            .await
            .map_err(Error::nats("pulling from rs-worker"))?,
    );
    let responder_client = producer().client(client.clone());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let responder = tokio::spawn(async move {
        while let Some(request) = requests.next().await {
            let consumer = request.in_span(async { seen(&Context::current()) }).await;
            let handled = Handled::rust(&request, consumer.clone(), None);
            // The reply says what the handler saw, published inside the `process` span.
            let answer = match request.reply.clone() {
                Some(reply) => {
                    let body = json!({"rust_consumer": consumer}).to_string();
                    request
                        .in_span(responder_client.publish(reply, body.into()))
                        .await
                        .map(|()| handled)
                        .map_err(|e| format!("publishing the reply: {e}"))
                }
                None => Err("the request has no reply subject".to_owned()),
            };
            drop(request);
            if tx.send(answer).is_err() {
                break;
            }
        }
    });
    client
        .flush()
        .await
        .map_err(Error::nats("flushing the subscriptions"))?;
    Ok(Rust {
        producer: producer().client(client.clone()),
        jetstream: producer().jetstream(js),
        client,
        core,
        pulled,
        linked,
        consumer,
        batch,
        requests: rx,
        responder,
    })
}
