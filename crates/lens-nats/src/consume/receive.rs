//! JetStream batch receive: [`Consumer::receive`], a CLIENT `receive` span per pulled batch, and
//! the [`ReceivedBatch`] whose messages are then processed.

use std::collections::VecDeque;
use std::future::IntoFuture;
use std::pin::Pin;
use std::sync::Arc;

use async_nats::Client;
use async_nats::header::HeaderMap;
use async_nats::jetstream::consumer::pull::{Batch, BatchErrorKind};
use futures_core::Stream;
use lens_span::messaging::{OperationStatus, OperationType};
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry::{Context, KeyValue};

use super::consumer::Consumer;
use super::processing::Processing;
use super::shared::Shared;
use super::subscription::Subscription;
use crate::adapter::MessageInfo;
use crate::carrier::NatsHeaders;
use crate::error::ReceiveError;

impl Consumer {
    /// Pulls a batch as one `receive` operation: `pull` is the not yet awaited
    /// `consumer.fetch()...messages()` or `consumer.batch()...messages()` of a pull consumer
    /// on `client`, `destination` names what it reads (the stream or the filter subject). The
    /// CLIENT span starts now, links to every message's context (as the policy for the
    /// message's subject allows) and ends when the batch is complete; each message is then
    /// processed from the [`ReceivedBatch`], its `process` span linked to the `receive` span.
    ///
    /// A batch that fails after some messages arrived keeps them: the error is recorded on the
    /// span and returned by [`ReceivedBatch::error`].
    pub async fn receive<F>(
        &self,
        client: &Client,
        destination: &str,
        pull: F,
    ) -> Result<ReceivedBatch, ReceiveError>
    where
        F: IntoFuture<Output = Result<Batch, async_nats::jetstream::consumer::pull::BatchError>>,
    {
        let shared = self.shared(client, Subscription::default());
        shared.broker.resolve().await;
        let info = MessageInfo {
            subject: destination,
            headers: None,
            payload: &[],
            operation: OperationType::Receive,
        };
        let mut span = shared.options.filter_decision(&info).span.then(|| {
            let operation = shared.operation("receive", OperationType::Receive, destination);
            shared
                .options
                .start_operation(&info, &operation, &Context::current(), Vec::new())
        });
        let mut messages = VecDeque::new();
        let mut error = None;
        match pull.into_future().await {
            Err(e) => {
                // `PinnedClient` exists only with async-nats's `server_2_11` feature, which
                // another crate in the build may turn on.
                #[allow(unreachable_patterns)]
                let kind = match e.kind() {
                    BatchErrorKind::Subscribe => "subscribe",
                    BatchErrorKind::Pull => "pull",
                    BatchErrorKind::Flush => "flush",
                    BatchErrorKind::Serialize => "serialize",
                    _ => "_OTHER",
                };
                if let Some(span) = &mut span {
                    // No message was consumed.
                    span.set_messages(0);
                }
                shared.finish(span, crate::publish::failed_status(kind, &e));
                return Err(ReceiveError::Pull(e));
            }
            Ok(mut batch) => {
                while let Some(next) =
                    std::future::poll_fn(|cx| Pin::new(&mut batch).poll_next(cx)).await
                {
                    match next {
                        Ok(message) => messages.push_back(message),
                        Err(e) => {
                            error = Some(e);
                            break;
                        }
                    }
                }
            }
        }
        if let Some(span) = &mut span {
            for message in &messages {
                let core = &message.message;
                let empty = HeaderMap::new();
                let headers = core.headers.as_ref().unwrap_or(&empty);
                if let Some(link) = shared
                    .options
                    .message_link(core.subject.as_str(), &NatsHeaders(headers))
                {
                    span.span().add_link(link.span_context, Vec::new());
                }
            }
            span.set_attribute(KeyValue::new(
                opentelemetry_semantic_conventions::attribute::MESSAGING_BATCH_MESSAGE_COUNT,
                i64::try_from(messages.len()).unwrap_or(i64::MAX),
            ));
            span.set_messages(messages.len() as u64);
        }
        let receive_cx = span.as_ref().map(|s| s.context().clone());
        let status = match &error {
            Some(e) => crate::publish::failed_status("_OTHER", e),
            None => OperationStatus::Ok,
        };
        shared.finish(span, status);
        if messages.is_empty()
            && let Some(e) = error
        {
            return Err(ReceiveError::Message(e));
        }
        Ok(ReceivedBatch {
            messages,
            receive_cx,
            shared,
            error,
        })
    }
}

/// The messages of one `receive` ([`Consumer::receive`]): iterate to process them, each
/// `process` span started when its message is taken, linked to the `receive` span.
pub struct ReceivedBatch {
    messages: VecDeque<async_nats::jetstream::Message>,
    receive_cx: Option<Context>,
    shared: Arc<Shared>,
    error: Option<async_nats::Error>,
}

impl std::fmt::Debug for ReceivedBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReceivedBatch")
            .field("messages", &self.messages.len())
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl ReceivedBatch {
    /// How many messages are left to process.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether every message was taken (or none came).
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The error that ended the batch early, after the messages it holds arrived.
    pub fn error(&self) -> Option<&async_nats::Error> {
        self.error.as_ref()
    }

    /// The `receive` span's span context (none when the filter gave the batch no span).
    pub fn receive_span_context(&self) -> Option<opentelemetry::trace::SpanContext> {
        self.receive_cx
            .as_ref()
            .map(|cx| cx.span().span_context().clone())
    }
}

impl Iterator for ReceivedBatch {
    type Item = Processing<async_nats::jetstream::Message>;

    fn next(&mut self) -> Option<Self::Item> {
        let message = self.messages.pop_front()?;
        // Processing begins under what is current now (the batch's `receive` span has ended:
        // linked, not a parent).
        Some(
            self.shared
                .process(message, &Context::current(), self.receive_cx.as_ref()),
        )
    }
}
