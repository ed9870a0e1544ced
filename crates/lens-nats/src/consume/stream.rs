//! [`TracedStream`]: any stream of NATS messages, each yielded in a [`Processing`].

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use async_nats::Subscriber;
use futures_core::Stream;
use opentelemetry::Context;

use super::message::{NatsMessage, sealed};
use super::processing::Processing;
use super::shared::Shared;

/// Reading the broker's address ([`Broker::resolve`]) from a stream's `poll_next`, before its
/// first message gets a span.
pub(super) type Resolving = Option<Pin<Box<dyn Future<Output = ()> + Send + Sync>>>;

/// Ready once `shared`'s broker is known (at once after the first time).
fn poll_resolved(
    shared: &Arc<Shared>,
    resolving: &mut Resolving,
    cx: &mut TaskContext<'_>,
) -> Poll<()> {
    if shared.broker.is_resolved() {
        return Poll::Ready(());
    }
    let future = resolving.get_or_insert_with(|| {
        let shared = Arc::clone(shared);
        Box::pin(async move {
            shared.broker.resolve().await;
        })
    });
    let poll = future.as_mut().poll(cx);
    if poll.is_ready() {
        *resolving = None;
    }
    poll
}

/// Any stream of NATS messages (a core [`Subscriber`], a JetStream push, ordered or pull
/// consumer's messages) whose messages come in a [`Processing`]; made by
/// [`Consumer::stream`] and the consumer's other wrappers.
///
/// [`Consumer::stream`]: crate::Consumer::stream
pub struct TracedStream<S> {
    pub(super) inner: S,
    pub(super) shared: ConsumerShared,
    pub(super) resolving: Resolving,
}

/// A core [`Subscriber`] (plain or queue group), traced.
pub type TracedSubscriber = TracedStream<Subscriber>;

/// A JetStream pull consumer's message stream, traced.
pub type TracedMessages = TracedStream<async_nats::jetstream::consumer::pull::Stream>;

impl<S> std::fmt::Debug for TracedStream<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TracedStream")
            .field("shared", &self.shared.0)
            .finish_non_exhaustive()
    }
}

impl<S> TracedStream<S> {
    /// The wrapped stream (unsubscribe, drain).
    pub fn inner_mut(&mut self) -> &mut S {
        &mut self.inner
    }
}

/// A message (or a stream's `Result` of one) a [`TracedStream`] yields in a [`Processing`]
/// (sealed).
pub trait Delivery: sealed::Sealed {
    /// What the traced stream yields for it.
    type Traced;
    /// Starts the message's `process` span.
    #[doc(hidden)]
    fn trace(self, consumer: &ConsumerShared) -> Self::Traced;
}

/// What a [`TracedStream`]'s messages are traced with (opaque).
#[doc(hidden)]
#[derive(Debug)]
pub struct ConsumerShared(pub(super) Arc<Shared>);

impl Delivery for async_nats::Message {
    type Traced = Processing<async_nats::Message>;
    fn trace(self, consumer: &ConsumerShared) -> Self::Traced {
        consumer.0.process(self, &Context::current(), None)
    }
}

impl Delivery for async_nats::jetstream::Message {
    type Traced = Processing<async_nats::jetstream::Message>;
    fn trace(self, consumer: &ConsumerShared) -> Self::Traced {
        consumer.0.process(self, &Context::current(), None)
    }
}

impl<M: NatsMessage + Delivery<Traced = Processing<M>>, E> Delivery for Result<M, E> {
    type Traced = Result<Processing<M>, E>;
    fn trace(self, consumer: &ConsumerShared) -> Self::Traced {
        self.map(|message| message.trace(consumer))
    }
}

impl<S> Stream for TracedStream<S>
where
    S: Stream + Unpin,
    S::Item: Delivery,
{
    type Item = <S::Item as Delivery>::Traced;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if poll_resolved(&this.shared.0, &mut this.resolving, cx).is_pending() {
            return Poll::Pending;
        }
        match Pin::new(&mut this.inner).poll_next(cx) {
            Poll::Ready(Some(item)) => Poll::Ready(Some(item.trace(&this.shared))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}
