//! The settlement of a JetStream message: CLIENT `settle` spans (`ack`, `nak`, `term`).

use async_nats::jetstream::AckKind;
use lens_span::messaging::{OperationStatus, OperationType};

use super::processing::Processing;
use crate::adapter::MessageInfo;

/// The settlement of a JetStream message, each a CLIENT `settle` span under the `process`
/// span (`ack orders`, `nak orders`, `term orders`).
impl Processing<async_nats::jetstream::Message> {
    /// Acknowledges the message.
    pub async fn ack(&self) -> Result<(), async_nats::Error> {
        self.settle("ack", AckKind::Ack).await
    }

    /// Asks for redelivery (after `delay`, if given).
    pub async fn nak(&self, delay: Option<std::time::Duration>) -> Result<(), async_nats::Error> {
        self.settle("nak", AckKind::Nak(delay)).await
    }

    /// Stops redelivery.
    pub async fn term(&self) -> Result<(), async_nats::Error> {
        self.settle("term", AckKind::Term).await
    }

    /// Settles with `kind`, named `name` in the span.
    pub async fn settle(&self, name: &'static str, kind: AckKind) -> Result<(), async_nats::Error> {
        let shared = &self.shared;
        let subject = self.message.message.subject.as_str();
        let info = MessageInfo {
            subject,
            headers: self.message.message.headers.as_ref(),
            payload: &self.message.message.payload,
            operation: OperationType::Settle,
        };
        let span = shared.options.filter_decision(&info).span.then(|| {
            let operation = shared.operation(name, OperationType::Settle, subject);
            shared
                .options
                .start_operation(&info, &operation, &self.context(), Vec::new())
        });
        let result = self.message.ack_with(kind).await;
        let status = match &result {
            Ok(()) => OperationStatus::Ok,
            Err(e) => crate::publish::failed_status("_OTHER", e),
        };
        shared.finish(span, status);
        result
    }
}
