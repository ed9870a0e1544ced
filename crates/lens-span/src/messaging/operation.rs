//! [`Operation`]: one messaging operation, its [`OperationType`], and the name and attributes
//! of its span.

use std::borrow::Cow;

use opentelemetry::trace::SpanKind;
use opentelemetry::{KeyValue, StringValue};
use opentelemetry_semantic_conventions::attribute as semconv;

/// The kind of a messaging operation (`messaging.operation.type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OperationType {
    /// A message created to be sent later (batch publishing): PRODUCER.
    Create,
    /// One message (or a batch) sent to the broker: PRODUCER.
    Send,
    /// Messages pulled from the broker: CLIENT.
    Receive,
    /// One message handled by the application: CONSUMER.
    Process,
    /// A message settled with the broker (ack, nak, term): CLIENT.
    Settle,
}

impl OperationType {
    /// The value of `messaging.operation.type`.
    pub fn as_str(self) -> &'static str {
        match self {
            OperationType::Create => "create",
            OperationType::Send => "send",
            OperationType::Receive => "receive",
            OperationType::Process => "process",
            OperationType::Settle => "settle",
        }
    }

    /// The span kind the conventions give the operation.
    pub fn span_kind(self) -> SpanKind {
        match self {
            OperationType::Create | OperationType::Send => SpanKind::Producer,
            OperationType::Receive | OperationType::Settle => SpanKind::Client,
            OperationType::Process => SpanKind::Consumer,
        }
    }
}

/// One messaging operation as the conventions describe it: the attributes and the name of its
/// span. Built by an adapter per operation; what is borrowed is copied into the span's
/// attributes only.
#[derive(Clone, Debug)]
pub struct Operation<'a> {
    /// `messaging.system` (`nats`, `kafka`, `rabbitmq`).
    pub system: &'static str,
    /// `messaging.operation.name`: the system's own name (`send`, `receive`, `process`,
    /// `ack`); the first word of the span name.
    pub name: &'static str,
    /// `messaging.operation.type`.
    pub operation_type: OperationType,
    /// `messaging.destination.name`: a subject, topic or queue.
    pub destination: Option<&'a str>,
    /// Whether the destination is temporary (a reply inbox): left out of the span name and
    /// the metrics, `messaging.destination.temporary` set.
    pub temporary: bool,
    /// Whether the metrics see `messaging.destination.name` (true unless the adapter says
    /// otherwise: its destinations may be many, a subject per job or per user).
    pub destination_in_metrics: bool,
    /// `messaging.destination.template`: the pattern the destination is one of
    /// (`rollout.jobs.*`); the span name's destination and a metric attribute when known.
    pub template: Option<&'a str>,
    /// `messaging.consumer.group.name`: the consumer group (NATS: the queue group).
    pub consumer_group: Option<&'a str>,
    /// `messaging.destination.subscription.name`: a durable or named subscription (a
    /// JetStream durable consumer).
    pub subscription: Option<&'a str>,
    /// `messaging.message.id`, where the broker gives one.
    pub message_id: Option<&'a str>,
    /// `messaging.message.body.size` (bytes).
    pub body_size: Option<usize>,
    /// `messaging.batch.message_count` (batch operations).
    pub batch_count: Option<usize>,
    /// `server.address` (shared text: cloned without copying).
    pub server_address: Option<StringValue>,
    /// `server.port`.
    pub server_port: Option<u16>,
}

impl<'a> Operation<'a> {
    /// An operation of `system` named `name`, of type `operation_type`, nothing else known.
    #[inline]
    pub fn new(system: &'static str, name: &'static str, operation_type: OperationType) -> Self {
        Operation {
            system,
            name,
            operation_type,
            destination: None,
            temporary: false,
            destination_in_metrics: true,
            template: None,
            consumer_group: None,
            subscription: None,
            message_id: None,
            body_size: None,
            batch_count: None,
            server_address: None,
            server_port: None,
        }
    }

    /// Sets the destination, and whether it is temporary.
    #[inline]
    pub fn with_destination(mut self, destination: &'a str, temporary: bool) -> Self {
        self.destination = Some(destination);
        self.temporary = temporary;
        self
    }

    /// Sets the destination's template: the span name's destination, and a metric attribute.
    #[inline]
    pub fn with_template(mut self, template: &'a str) -> Self {
        self.template = Some(template);
        self
    }

    /// Whether the metrics see the destination's name (default: true).
    #[inline]
    pub fn with_destination_in_metrics(mut self, on: bool) -> Self {
        self.destination_in_metrics = on;
        self
    }

    /// Sets the consumer group.
    #[inline]
    pub fn with_consumer_group(mut self, group: &'a str) -> Self {
        self.consumer_group = Some(group);
        self
    }

    /// Sets the subscription's name.
    #[inline]
    pub fn with_subscription(mut self, name: &'a str) -> Self {
        self.subscription = Some(name);
        self
    }

    /// Sets the message id.
    #[inline]
    pub fn with_message_id(mut self, id: &'a str) -> Self {
        self.message_id = Some(id);
        self
    }

    /// Sets the body size.
    #[inline]
    pub fn with_body_size(mut self, bytes: usize) -> Self {
        self.body_size = Some(bytes);
        self
    }

    /// Sets the batch's message count.
    #[inline]
    pub fn with_batch_count(mut self, count: usize) -> Self {
        self.batch_count = Some(count);
        self
    }

    /// Sets the broker's address and port.
    #[inline]
    pub fn with_server(mut self, address: StringValue, port: Option<u16>) -> Self {
        self.server_address = Some(address);
        self.server_port = port;
        self
    }

    /// The span name the conventions give the operation: `{operation name} {destination}`,
    /// the destination being the template when known, else the destination's name; the
    /// operation name alone for a temporary or unknown destination.
    pub fn span_name(&self) -> Cow<'static, str> {
        let destination = if self.temporary {
            None
        } else {
            self.template.or(self.destination)
        };
        match destination {
            Some(destination) => {
                // Sized once: `format!` would grow its buffer, a second allocation per span.
                let mut name = String::with_capacity(self.name.len() + 1 + destination.len());
                name.push_str(self.name);
                name.push(' ');
                name.push_str(destination);
                Cow::Owned(name)
            }
            _ => Cow::Borrowed(self.name),
        }
    }

    /// The span's attributes, and how many of the first of them the metrics see (those the
    /// conventions name for the messaging metrics).
    pub(crate) fn attributes(&self) -> (Vec<KeyValue>, usize) {
        let mut attributes = Vec::with_capacity(10);
        attributes.push(KeyValue::new(semconv::MESSAGING_SYSTEM, self.system));
        attributes.push(KeyValue::new(semconv::MESSAGING_OPERATION_NAME, self.name));
        attributes.push(KeyValue::new(
            semconv::MESSAGING_OPERATION_TYPE,
            self.operation_type.as_str(),
        ));
        if let Some(address) = &self.server_address {
            attributes.push(KeyValue::new(semconv::SERVER_ADDRESS, address.clone()));
        }
        if let Some(port) = self.server_port {
            attributes.push(KeyValue::new(semconv::SERVER_PORT, i64::from(port)));
        }
        if let Some(template) = self.template.filter(|_| !self.temporary) {
            attributes.push(KeyValue::new(
                semconv::MESSAGING_DESTINATION_TEMPLATE,
                template.to_owned(),
            ));
        }
        if let Some(group) = self.consumer_group {
            attributes.push(KeyValue::new(
                semconv::MESSAGING_CONSUMER_GROUP_NAME,
                group.to_owned(),
            ));
        }
        if let Some(name) = self.subscription {
            attributes.push(KeyValue::new(
                semconv::MESSAGING_DESTINATION_SUBSCRIPTION_NAME,
                name.to_owned(),
            ));
        }
        // One copy of the destination (no clone of it): before the metrics' share of the
        // attributes, or after it for a temporary one or one the metrics must not see.
        let destination = self
            .destination
            .map(|d| KeyValue::new(semconv::MESSAGING_DESTINATION_NAME, d.to_owned()));
        let metric_attributes = match destination {
            Some(destination) if !self.temporary && self.destination_in_metrics => {
                attributes.push(destination);
                attributes.len()
            }
            Some(destination) if !self.temporary => {
                let metric_attributes = attributes.len();
                attributes.push(destination);
                metric_attributes
            }
            Some(destination) => {
                let metric_attributes = attributes.len();
                attributes.push(destination);
                attributes.push(KeyValue::new(
                    semconv::MESSAGING_DESTINATION_TEMPORARY,
                    true,
                ));
                metric_attributes
            }
            None => attributes.len(),
        };
        if let Some(id) = self.message_id {
            attributes.push(KeyValue::new(semconv::MESSAGING_MESSAGE_ID, id.to_owned()));
        }
        if let Some(size) = self.body_size {
            attributes.push(KeyValue::new(
                semconv::MESSAGING_MESSAGE_BODY_SIZE,
                i64::try_from(size).unwrap_or(i64::MAX),
            ));
        }
        if let Some(count) = self.batch_count {
            attributes.push(KeyValue::new(
                semconv::MESSAGING_BATCH_MESSAGE_COUNT,
                i64::try_from(count).unwrap_or(i64::MAX),
            ));
        }
        (attributes, metric_attributes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn span_names_and_temporary_destinations() {
        let op = Operation::new("nats", "send", OperationType::Send);
        assert_eq!(op.span_name(), "send");
        assert_eq!(
            op.clone().with_destination("orders", false).span_name(),
            "send orders"
        );
        let temp = op.with_destination("_INBOX.abc", true);
        assert_eq!(temp.span_name(), "send");
        let (attributes, metric) = temp.attributes();
        // The metrics never see a temporary destination's name.
        assert!(
            attributes[..metric]
                .iter()
                .all(|kv| kv.key.as_str() != semconv::MESSAGING_DESTINATION_NAME)
        );
        assert!(attributes[metric..].iter().any(|kv| {
            kv.key.as_str() == semconv::MESSAGING_DESTINATION_NAME
                && kv.value.as_str() == "_INBOX.abc"
        }));
    }
}
