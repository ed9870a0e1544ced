//! Request/reply on a [`TracedClient`]: the request's `send` span and the CLIENT `receive`
//! span of the wait for its reply.

use async_nats::header::HeaderMap;
use async_nats::subject::ToSubject;
use async_nats::{PublishErrorKind, RequestErrorKind, Subject};
use bytes::Bytes;
use lens_span::messaging::OperationStatus;

use super::client::TracedClient;
use super::status::{failed_status, publish_error_type, request_error_type};

impl TracedClient {
    /// Sends a request and waits for its reply (the client's request timeout): see
    /// [`TracedClient::send_request`].
    pub async fn request<S: ToSubject>(
        &self,
        subject: S,
        payload: Bytes,
    ) -> Result<async_nats::Message, async_nats::RequestError> {
        self.send_request(subject, async_nats::Request::new().payload(payload))
            .await
    }

    /// [`TracedClient::request`] with the caller's `headers`.
    pub async fn request_with_headers<S: ToSubject>(
        &self,
        subject: S,
        headers: HeaderMap,
        payload: Bytes,
    ) -> Result<async_nats::Message, async_nats::RequestError> {
        self.send_request(
            subject,
            async_nats::Request::new().payload(payload).headers(headers),
        )
        .await
    }

    /// Sends `request` (its payload, headers, own timeout and inbox, as async-nats's
    /// `send_request` takes them) and waits for the reply, as two operations of the messaging
    /// conventions: the request message's PRODUCER `send` span, ended once the message is
    /// handed over, and a CLIENT `receive` span for the wait on the reply inbox (a temporary
    /// destination: named `receive`), so that the wait never mixes into the `send` durations.
    /// A traced responder's `process` span is the child of the `send` span, and its reply (sent
    /// inside it) lands in the same trace. The reply inbox is subscribed per request (async-nats
    /// multiplexes one inbox for its own untraced requests).
    pub async fn send_request<S: ToSubject>(
        &self,
        subject: S,
        request: async_nats::Request,
    ) -> Result<async_nats::Message, async_nats::RequestError> {
        use async_nats::RequestError;
        let subject: Subject = subject.to_subject();
        let mut headers = request.headers.unwrap_or_default();
        let payload = request.payload.unwrap_or_default();
        let timeout = request.timeout.unwrap_or_else(|| self.client.timeout());
        let inbox = request.inbox.unwrap_or_else(|| self.client.new_inbox());
        let mut replies = self
            .client
            .subscribe(inbox.clone())
            .await
            .map_err(|e| RequestError::with_source(RequestErrorKind::Other, e))?;
        let server = self.shared.broker.resolve().await;
        let span = self
            .shared
            .start_send(server, &subject, &mut headers, &payload);
        let sent = self
            .client
            .publish_with_reply_and_headers(subject, inbox.clone(), headers, payload)
            .await;
        if let Err(e) = sent {
            let kind = match e.kind() {
                PublishErrorKind::MaxPayloadExceeded => RequestErrorKind::MaxPayloadExceeded,
                PublishErrorKind::InvalidSubject => RequestErrorKind::InvalidSubject,
                PublishErrorKind::Send => RequestErrorKind::Other,
            };
            self.shared
                .finish(span, failed_status(publish_error_type(e.kind()), &e));
            return Err(RequestError::with_source(kind, e));
        }
        self.shared.finish(span, OperationStatus::Ok);

        let mut wait = self.shared.start_reply_wait(&inbox);
        let next = std::future::poll_fn(|cx| {
            futures_core::Stream::poll_next(std::pin::Pin::new(&mut replies), cx)
        });
        let reply = match timeout {
            Some(timeout) => tokio::time::timeout(timeout, next)
                .await
                .map_err(|e| RequestError::with_source(RequestErrorKind::TimedOut, e)),
            None => Ok(next.await),
        };
        let result = match reply {
            Ok(Some(message)) if message.status == Some(async_nats::StatusCode::NO_RESPONDERS) => {
                Err(RequestError::with_source(
                    RequestErrorKind::NoResponders,
                    "no responders",
                ))
            }
            Ok(Some(message)) => Ok(message),
            Ok(None) => Err(RequestError::with_source(
                RequestErrorKind::Other,
                "broken pipe",
            )),
            Err(e) => Err(e),
        };
        let status = match &result {
            Ok(_) => OperationStatus::Ok,
            Err(e) => {
                if let Some(span) = &mut wait {
                    span.set_messages(0);
                }
                failed_status(request_error_type(e.kind()), e)
            }
        };
        self.shared.finish(wait, status);
        result
    }
}
