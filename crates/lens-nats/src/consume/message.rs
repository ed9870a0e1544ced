//! The messages lens-nats traces ([`NatsMessage`], sealed): core and JetStream.

use lens_span::LiveSpan;
use opentelemetry::{KeyValue, StringValue};

pub(super) mod sealed {
    pub trait Sealed {}
    impl Sealed for async_nats::Message {}
    impl Sealed for async_nats::jetstream::Message {}
    impl<M: Sealed, E> Sealed for Result<M, E> {}
}

/// A message lens-nats traces: a core [`async_nats::Message`] or a JetStream
/// [`async_nats::jetstream::Message`] (sealed).
pub trait NatsMessage: sealed::Sealed {
    /// The core message (subject, headers, payload).
    fn core(&self) -> &async_nats::Message;
    /// Adds what this kind of message knows to its `process` span.
    #[doc(hidden)]
    fn annotate(&self, span: &mut LiveSpan);
}

impl NatsMessage for async_nats::Message {
    fn core(&self) -> &async_nats::Message {
        self
    }

    fn annotate(&self, _span: &mut LiveSpan) {}
}

impl NatsMessage for async_nats::jetstream::Message {
    fn core(&self) -> &async_nats::Message {
        &self.message
    }

    /// The stream and its sequence, as the publisher's ack recorded them.
    fn annotate(&self, span: &mut LiveSpan) {
        if let Ok(info) = self.info() {
            span.set_attribute(KeyValue::new(
                crate::attributes::STREAM,
                StringValue::from(info.stream.to_owned()),
            ));
            span.set_attribute(KeyValue::new(
                crate::attributes::SEQUENCE,
                i64::try_from(info.stream_sequence).unwrap_or(i64::MAX),
            ));
        }
    }
}
