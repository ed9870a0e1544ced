//! [`TracedClient`]: a core NATS client whose publishes are traced.

use std::sync::Arc;

use async_nats::header::HeaderMap;
use async_nats::subject::ToSubject;
use async_nats::{Client, Subject};
use bytes::Bytes;

use super::shared::Shared;
use super::status::publish_status;

/// The body of a traced publish, written into each entry point by expansion rather than
/// called: a helper `async fn` would add a layer of future, which every poll and every move of
/// the caller's future would go through, and a copy of the span. `start_send` in its three
/// steps, so that the span is written into the caller's future's state; the status recorded in
/// place, the span ending as the caller's future completes (dropped there). `headers = expr`
/// makes the headers after the server is read, as the caller gave none. Invoked with braces, as
/// a statement: its statements are the entry point's own, not a block within it.
macro_rules! traced_publish {
    ($this:ident.$publish:ident(
        subject: $subject:ident,
        $(reply: $reply:ident,)?
        headers: $headers:ident $(= $new_headers:expr)?,
        payload: $payload:ident $(,)?
    )) => {
        let subject: Subject = $subject.to_subject();
        let server = $this.shared.broker.resolve().await;
        $(let mut $headers = $new_headers;)?
        let decision = $this.shared.send_decision(&subject, &$headers, &$payload);
        let mut span = $this
            .shared
            .send_span(decision, server, &subject, &$headers, &$payload);
        $this.shared
            .inject_send(decision, span.as_ref(), server, &subject, &mut $headers);
        let result = $this
            .client
            .$publish(subject, $($reply,)? $headers, $payload)
            .await;
        $this.shared.record(&mut span, publish_status(&result));
        result
    };
}

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
        traced_publish! {
            self.publish_with_headers(
                subject: subject,
                headers: headers = HeaderMap::new(),
                payload: payload,
            )
        }
    }

    /// Publishes with the caller's `headers`, trace context added (a stale `traceparent` /
    /// `tracestate` replaced).
    pub async fn publish_with_headers<S: ToSubject>(
        &self,
        subject: S,
        mut headers: HeaderMap,
        payload: Bytes,
    ) -> Result<(), async_nats::PublishError> {
        traced_publish! {
            self.publish_with_headers(
                subject: subject,
                headers: headers,
                payload: payload,
            )
        }
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
        traced_publish! {
            self.publish_with_reply_and_headers(
                subject: subject,
                reply: reply,
                headers: headers,
                payload: payload,
            )
        }
    }
}
