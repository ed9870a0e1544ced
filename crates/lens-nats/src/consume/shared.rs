//! What every wrapper of one consumer reads, and the operation its spans describe.

use lens_span::messaging::{
    ConsumerParent, DestinationPolicy, MessagingErrors, Operation, OperationStatus, OperationType,
};
use lens_span::{LiveSpan, SpanOptions};

use super::subscription::Subscription;
use crate::adapter::Nats;
use crate::attributes::SYSTEM;
use crate::broker::Broker;
use crate::inbox::is_temporary;
use crate::names::Names;

/// What every wrapper of one consumer reads (never written after it is built: no lock).
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) options: SpanOptions<Nats, DestinationPolicy>,
    pub(super) parent: ConsumerParent,
    pub(super) broker: Broker,
    pub(super) inbox_prefix: String,
    pub(super) names: Names,
    pub(super) subscription: Subscription,
}

impl Shared {
    #[inline]
    pub(super) fn operation<'a>(
        &'a self,
        name: &'static str,
        kind: OperationType,
        destination: &'a str,
    ) -> Operation<'a> {
        // Set field by field (each `with_*` would move the whole operation).
        let mut operation = Operation::new(SYSTEM, name, kind);
        operation.destination = Some(destination);
        operation.temporary = is_temporary(&self.inbox_prefix, destination);
        operation.destination_in_metrics = self.names.subjects_in_metrics;
        operation.template = self
            .names
            .templates
            .template_for(destination)
            .or(self.subscription.subject.as_deref());
        operation.consumer_group = self.subscription.queue_group.as_deref();
        operation.subscription = self.subscription.name.as_deref();
        if let Some(server) = self.broker.get() {
            operation.server_address = Some(server.address.clone());
            operation.server_port = server.port;
        }
        operation
    }

    pub(super) fn finish(&self, span: Option<LiveSpan>, status: OperationStatus) {
        if let Some(mut span) = span {
            self.options
                .responder()
                .respond(&mut span, &status, &status, &MessagingErrors);
        }
    }
}
