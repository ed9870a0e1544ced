//! [`TracedPublishAck`]: the stream's ack of a JetStream publish, its CLIENT `publish_ack` span.

use std::sync::Arc;

use lens_span::LiveSpan;
use lens_span::messaging::OperationStatus;
use opentelemetry::{KeyValue, StringValue};

use super::shared::Shared;
use super::status::{failed_status, jetstream_error_type};

/// The stream's ack of a traced JetStream publish, not yet awaited (async-nats's
/// `PublishAckFuture`, traced): awaiting it gives the [`PublishAck`]. A CLIENT `publish_ack`
/// span (operation type `settle`), the child of the `send` span, lasts from the hand-over to
/// the ack and records the ack's stream and sequence (`messaging.nats.stream`,
/// `messaging.nats.stream_sequence`), whether the stream found it a duplicate
/// (`messaging.nats.duplicate`), or a failure (`error.type` = `stream_not_found`,
/// `timed_out`, ...).
///
/// [`PublishAck`]: async_nats::jetstream::publish::PublishAck
pub struct TracedPublishAck {
    pub(super) ack: async_nats::jetstream::context::PublishAckFuture,
    pub(super) span: Option<LiveSpan>,
    pub(super) shared: Arc<Shared>,
}

impl std::fmt::Debug for TracedPublishAck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TracedPublishAck")
            .field("span", &self.span)
            .finish_non_exhaustive()
    }
}

impl std::future::IntoFuture for TracedPublishAck {
    type Output = Result<
        async_nats::jetstream::publish::PublishAck,
        async_nats::jetstream::context::PublishError,
    >;
    type IntoFuture = std::pin::Pin<Box<dyn std::future::Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        let TracedPublishAck {
            ack,
            mut span,
            shared,
        } = self;
        Box::pin(async move {
            let result = ack.await;
            let status = match &result {
                Ok(ack) => {
                    if let Some(span) = &mut span {
                        span.set_attribute(KeyValue::new(
                            crate::attributes::STREAM,
                            StringValue::from(ack.stream.clone()),
                        ));
                        span.set_attribute(KeyValue::new(
                            crate::attributes::SEQUENCE,
                            i64::try_from(ack.sequence).unwrap_or(i64::MAX),
                        ));
                        span.set_attribute(KeyValue::new(
                            crate::attributes::DUPLICATE,
                            ack.duplicate,
                        ));
                    }
                    OperationStatus::Ok
                }
                Err(e) => failed_status(jetstream_error_type(e.kind()), e),
            };
            shared.finish(span, status);
            result
        })
    }
}
