//! [`Processing`]: a delivered message with its `process` span, started when it is delivered
//! and ended when the guard is dropped.

use std::future::Future;
use std::ops::Deref;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context as TaskContext, Poll};

use async_nats::header::{HeaderMap, NATS_MESSAGE_ID};
use lens_span::LiveSpan;
use lens_span::classify::Outcome;
use lens_span::messaging::OperationType;
use opentelemetry::Context;
use opentelemetry::context::FutureExt as _;
use opentelemetry::trace::{Link, TraceContextExt as _};

use super::message::NatsMessage;
use super::shared::Shared;
use crate::adapter::MessageInfo;
use crate::carrier::NatsHeaders;

/// A message as it was delivered (`Deref` to async-nats's own type, unchanged), with its
/// CONSUMER `process` span: current inside [`Processing::in_span`], ended exactly once, when
/// this is dropped or [`Processing::into_inner`] is called.
pub struct Processing<M> {
    pub(super) message: M,
    span: Option<ProcessSpan>,
    pub(super) shared: Arc<Shared>,
}

/// A `process` span and the failure recorded on it while it is shared (by the handler of
/// [`Processing::process`], inside [`Processing::in_span`]): applied when the span ends.
#[derive(Debug)]
struct ProcessSpan {
    live: LiveSpan,
    failure: OnceLock<Outcome>,
    /// The `receive` span of a batch counted the message: this span counts none.
    counted: bool,
}

impl Drop for ProcessSpan {
    fn drop(&mut self) {
        if self.counted {
            self.live.set_messages(0);
        }
        if let Some(failure) = self.failure.take() {
            self.live.record(failure);
        }
    }
}

impl Shared {
    /// The `process` span of `message`, processing beginning under `current` (the Context
    /// current now); `batch` is the Context of the `receive` span that took it, if any (linked,
    /// and the message counted by it already).
    pub(super) fn process<M: NatsMessage>(
        self: &Arc<Self>,
        message: M,
        current: &Context,
        batch: Option<&Context>,
    ) -> Processing<M> {
        Processing {
            span: self.process_span(&message, current, batch),
            message,
            shared: Arc::clone(self),
        }
    }

    /// The `process` span of `message` when the filter wants one, returned as it is built (a
    /// `LiveSpan` is large: each move of it is a copy).
    #[inline]
    fn process_span<M: NatsMessage>(
        &self,
        message: &M,
        current: &Context,
        batch: Option<&Context>,
    ) -> Option<ProcessSpan> {
        let core = message.core();
        let subject = core.subject.as_str();
        let info = MessageInfo {
            subject,
            headers: core.headers.as_ref(),
            payload: &core.payload,
            operation: OperationType::Process,
        };
        if !self.options.filter_decision(&info).span {
            return None;
        }
        let empty = HeaderMap::new();
        let headers = core.headers.as_ref().unwrap_or(&empty);
        let mut operation = self.operation("process", OperationType::Process, subject);
        operation.body_size = self.names.body_size.then_some(core.payload.len());
        operation.message_id = crate::carrier::value_of(headers, &NATS_MESSAGE_ID);
        let links = batch
            .map(|cx| vec![Link::with_context(cx.span().span_context().clone())])
            .unwrap_or_default();
        let mut span = ProcessSpan {
            live: self.options.start_process_with_links(
                &info,
                &operation,
                &NatsHeaders(headers),
                self.parent,
                current,
                links,
            ),
            failure: OnceLock::new(),
            counted: batch.is_some(),
        };
        message.annotate(&mut span.live);
        Some(span)
    }
}

impl<M: std::fmt::Debug> std::fmt::Debug for Processing<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Processing")
            .field("message", &self.message)
            .field("span", &self.span)
            .finish_non_exhaustive()
    }
}

impl<M> Deref for Processing<M> {
    type Target = M;

    fn deref(&self) -> &M {
        &self.message
    }
}

impl<M> Processing<M> {
    /// The Context of the `process` span (with the message's baggage when trusted); the
    /// Context current now when the filter gave the message no span.
    pub fn context(&self) -> Context {
        match &self.span {
            Some(span) => span.live.context().clone(),
            None => Context::current(),
        }
    }

    /// Runs `work` with the `process` span's Context current while it is polled (what the
    /// handler publishes is its child, its baggage the message's).
    pub fn in_span<F: Future>(&self, work: F) -> impl Future<Output = F::Output> {
        work.with_context(self.context())
    }

    /// Records that handling the message failed: `error.type` and status Error on the
    /// `process` span when it ends (the failure hook runs then). Callable while the span is
    /// current (inside [`Processing::in_span`] or [`Processing::process`]); the first failure
    /// recorded is the one kept.
    pub fn fail(&self, error_type: &'static str, description: impl Into<String>) {
        self.fail_with(Outcome::failure(error_type, description.into()));
    }

    fn fail_with(&self, outcome: Outcome) {
        if let Some(span) = &self.span {
            let _ = span.failure.set(outcome);
        }
    }

    /// Handles the message with `handler`, the `process` span current while it runs (what it
    /// publishes is the span's child; it may `ack` a JetStream message or [`fail`] it), and
    /// ends the span once it returns. An `Err` is recorded on the span (`error.type` = the
    /// error's type name, the conventions' fallback; status Error with its message), as is a
    /// panic (`error.type` = `panic`, the panic then going on), as every lens adapter does.
    ///
    /// [`fail`]: Processing::fail
    ///
    /// ```no_run
    /// # async fn run(client: async_nats::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// use futures_util::StreamExt;
    ///
    /// let consumer = lens_nats::Consumer::new();
    /// let mut jobs = consumer.subscriber(&client, client.subscribe("jobs.>").await?);
    /// while let Some(job) = jobs.next().await {
    ///     let handled = job
    ///         .process(async |job| {
    ///             let text = std::str::from_utf8(&job.payload)?;
    ///             println!("{text}");
    ///             Ok::<_, std::str::Utf8Error>(())
    ///         })
    ///         .await;
    ///     if let Err(e) = handled {
    ///         eprintln!("job failed: {e}"); // and recorded on its span
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn process<T, E>(
        self,
        handler: impl AsyncFnOnce(&Processing<M>) -> Result<T, E>,
    ) -> Result<T, E>
    where
        E: std::fmt::Display,
    {
        let cx = self.context();
        let result = CatchPanic {
            inner: std::pin::pin!(handler(&self)),
            processing: &self,
        }
        .with_context(cx)
        .await;
        if let Err(e) = &result {
            self.fail_with(Outcome::error_of::<E>(e.to_string()));
        }
        result
    }

    /// Ends the `process` span and gives the message back.
    pub fn into_inner(self) -> M {
        self.message
    }
}

/// A handler's future that records a panic on its message's `process` span before the panic
/// goes on (the span ends when the runtime drops the task).
struct CatchPanic<'a, F, M> {
    inner: Pin<&'a mut F>,
    processing: &'a Processing<M>,
}

impl<F: Future, M> Future for CatchPanic<'_, F, M> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        match std::panic::catch_unwind(AssertUnwindSafe(|| this.inner.as_mut().poll(cx))) {
            Ok(poll) => poll,
            Err(panic) => {
                this.processing.fail_with(Outcome::panic());
                std::panic::resume_unwind(panic)
            }
        }
    }
}
