//! [`TracedClient`]: a core NATS client whose publishes are traced.

use std::sync::Arc;

use async_nats::header::HeaderMap;
use async_nats::subject::ToSubject;
use async_nats::{Client, Subject};
use bytes::Bytes;

use super::shared::Shared;
use super::status::publish_status;

/// An async-nats [`Client`] whose publishes and requests are traced: one PRODUCER span per
/// message, the span's context (and the caller's baggage) in the message's headers beside the
/// caller's own. Cheap to clone; [`TracedClient::inner`] is the client itself, for everything
/// else.
#[derive(Clone, Debug)]
pub struct TracedClient {
    pub(super) client: Client,
    pub(super) shared: Arc<Shared>,
}

impl TracedClient {
    /// The wrapped client (subscribe, flush, drain: untraced operations).
    pub fn inner(&self) -> &Client {
        &self.client
    }

    /// Publishes `payload` to `subject` with trace context in new headers. The span ends when
    /// the client has queued the message (core NATS has no acknowledgement).
    pub async fn publish<S: ToSubject>(
        &self,
        subject: S,
        payload: Bytes,
    ) -> Result<(), async_nats::PublishError> {
        // The body of `publish_with_headers` rather than a call to it: one layer of future
        // fewer, which every poll and every move of the caller's future would go through.
        let subject: Subject = subject.to_subject();
        let server = self.shared.broker.resolve().await;
        let mut headers = HeaderMap::new();
        // `start_send` in its three steps: the span is written into this future's state.
        let decision = self.shared.send_decision(&subject, &headers, &payload);
        let mut span = self
            .shared
            .send_span(decision, server, &subject, &headers, &payload);
        self.shared
            .inject_send(decision, span.as_ref(), server, &subject, &mut headers);
        let result = self
            .client
            .publish_with_headers(subject, headers, payload)
            .await;
        // Recorded in place; the span ends as this future completes (dropped here).
        self.shared.record(&mut span, publish_status(&result));
        result
    }

    /// Publishes with the caller's `headers`, trace context added (a stale `traceparent` /
    /// `tracestate` replaced).
    pub async fn publish_with_headers<S: ToSubject>(
        &self,
        subject: S,
        mut headers: HeaderMap,
        payload: Bytes,
    ) -> Result<(), async_nats::PublishError> {
        let subject: Subject = subject.to_subject();
        let server = self.shared.broker.resolve().await;
        // `start_send` in its three steps: the span is written into this future's state.
        let decision = self.shared.send_decision(&subject, &headers, &payload);
        let mut span = self
            .shared
            .send_span(decision, server, &subject, &headers, &payload);
        self.shared
            .inject_send(decision, span.as_ref(), server, &subject, &mut headers);
        let result = self
            .client
            .publish_with_headers(subject, headers, payload)
            .await;
        // Recorded in place; the span ends as this future completes (dropped here).
        self.shared.record(&mut span, publish_status(&result));
        result
    }

    /// Publishes `payload` to `subject`, its replies to go to `reply`: a `send` span as
    /// [`TracedClient::publish`] has it.
    pub async fn publish_with_reply<S: ToSubject, R: ToSubject>(
        &self,
        subject: S,
        reply: R,
        payload: Bytes,
    ) -> Result<(), async_nats::PublishError> {
        self.publish_with_reply_and_headers(subject, reply, HeaderMap::new(), payload)
            .await
    }

    /// [`TracedClient::publish_with_reply`] with the caller's `headers`.
    pub async fn publish_with_reply_and_headers<S: ToSubject, R: ToSubject>(
        &self,
        subject: S,
        reply: R,
        mut headers: HeaderMap,
        payload: Bytes,
    ) -> Result<(), async_nats::PublishError> {
        let subject: Subject = subject.to_subject();
        let server = self.shared.broker.resolve().await;
        // `start_send` in its three steps: the span is written into this future's state.
        let decision = self.shared.send_decision(&subject, &headers, &payload);
        let mut span = self
            .shared
            .send_span(decision, server, &subject, &headers, &payload);
        self.shared
            .inject_send(decision, span.as_ref(), server, &subject, &mut headers);
        let result = self
            .client
            .publish_with_reply_and_headers(subject, reply, headers, payload)
            .await;
        self.shared.record(&mut span, publish_status(&result));
        result
    }
}
