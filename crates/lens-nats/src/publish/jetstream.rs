//! [`TracedJetStream`]: a JetStream context whose publishes are traced up to the stream's ack.

use std::sync::Arc;

use async_nats::Subject;
use async_nats::header::HeaderMap;
use async_nats::jetstream::message::PublishMessage;
use async_nats::subject::ToSubject;
use bytes::Bytes;
use lens_span::messaging::OperationStatus;

use super::publish_ack::TracedPublishAck;
use super::shared::Shared;
use super::status::{failed_status, jetstream_error_type};

/// An async-nats JetStream context whose publishes are traced: the PRODUCER span lasts until
/// the stream acknowledges the message, records the ack's stream and sequence
/// (`messaging.nats.stream`, `messaging.nats.stream_sequence`), and classifies a failed publish
/// (`error.type` = `stream_not_found`, `timed_out`, ...).
#[derive(Clone, Debug)]
pub struct TracedJetStream {
    pub(super) jetstream: async_nats::jetstream::Context,
    pub(super) shared: Arc<Shared>,
}

impl TracedJetStream {
    /// The wrapped context.
    pub fn inner(&self) -> &async_nats::jetstream::Context {
        &self.jetstream
    }

    /// Publishes `payload` to `subject`: the `send` span ends when the message is handed
    /// over; the returned future resolves to the stream's ack (as async-nats's does: publish
    /// many, then await their acks), which is recorded by a CLIENT `publish_ack` span.
    pub async fn publish<S: ToSubject>(
        &self,
        subject: S,
        payload: Bytes,
    ) -> Result<TracedPublishAck, async_nats::jetstream::context::PublishError> {
        self.publish_with_headers(subject, HeaderMap::new(), payload)
            .await
    }

    /// [`TracedJetStream::publish`] with the caller's `headers` (a `Nats-Msg-Id` among them is
    /// recorded as `messaging.message.id`).
    pub async fn publish_with_headers<S: ToSubject>(
        &self,
        subject: S,
        headers: HeaderMap,
        payload: Bytes,
    ) -> Result<TracedPublishAck, async_nats::jetstream::context::PublishError> {
        self.publish_message(
            subject.to_subject(),
            headers,
            PublishMessage::build(),
            payload,
        )
        .await
    }

    /// Publishes `publish` (async-nats's builder: `message_id`, `expected_last_sequence`, ...)
    /// to `subject`, trace context added to its headers, as [`TracedJetStream::publish`] does.
    /// The builder's own headers are not readable from outside async-nats: the hooks see
    /// none, and a `traceparent` the builder set is replaced.
    pub async fn send_publish<S: ToSubject>(
        &self,
        subject: S,
        publish: PublishMessage,
    ) -> Result<TracedPublishAck, async_nats::jetstream::context::PublishError> {
        self.publish_message(
            subject.to_subject(),
            HeaderMap::new(),
            publish,
            Bytes::new(),
        )
        .await
    }

    async fn publish_message(
        &self,
        subject: Subject,
        mut headers: HeaderMap,
        publish: PublishMessage,
        payload: Bytes,
    ) -> Result<TracedPublishAck, async_nats::jetstream::context::PublishError> {
        let server = self.shared.broker.resolve().await;
        let span = self
            .shared
            .start_send(server, &subject, &mut headers, &payload);
        let mut publish = if payload.is_empty() {
            publish
        } else {
            publish.payload(payload)
        };
        for (name, values) in headers.iter() {
            for value in values {
                publish = publish.header(name.clone(), value.clone());
            }
        }
        let sent = self.jetstream.send_publish(subject.clone(), publish).await;
        let ack = match sent {
            Ok(ack) => ack,
            Err(e) => {
                self.shared
                    .finish(span, failed_status(jetstream_error_type(e.kind()), &e));
                return Err(e);
            }
        };
        let parent = span.as_ref().map(|s| s.context().clone());
        self.shared.finish(span, OperationStatus::Ok);
        let ack_span = parent.map(|parent| self.shared.start_ack(&subject, &parent));
        Ok(TracedPublishAck {
            ack,
            span: ack_span.flatten(),
            shared: Arc::clone(&self.shared),
        })
    }
}
