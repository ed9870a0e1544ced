//! What identifies a message on both sides of a queue, as the instrumentations users run write
//! it: the destination (the current and the older conventions, RabbitMQ's several forms) and
//! the ids both sides can record (a message id, a JetStream stream sequence, a Kafka partition
//! and offset).

use std::sync::Arc;

use crate::model::{Span, SpanId, SpanKind, Value};

/// The destination keys: the current convention, then the older one (celery, and the Python
/// instrumentations for pika, aio-pika, kafka-python and confluent-kafka).
const DESTINATION: &[&str] = &["messaging.destination.name", "messaging.destination"];

/// The message id keys: the current convention, then the older one (AMQP `message-id`, a
/// JetStream `Nats-Msg-Id`).
const MESSAGE_ID: &[&str] = &["messaging.message.id", "messaging.message_id"];

/// A JetStream message's stream and sequence (lens-nats, both sides).
const STREAM: &[&str] = &["messaging.nats.stream"];
const STREAM_SEQUENCE: &[&str] = &["messaging.nats.stream_sequence"];

/// A Kafka record's partition (current, 1.2x, and the Python instrumentations' key) and offset.
const PARTITION: &[&str] = &[
    "messaging.destination.partition.id",
    "messaging.kafka.destination.partition",
    "messaging.kafka.partition",
];
const OFFSET: &[&str] = &["messaging.kafka.offset", "messaging.kafka.message.offset"];

/// What one side of a queue hop recorded about its message, and what the doctor learnt of it.
#[derive(Clone, Debug, Default)]
pub(super) struct Message {
    /// The ids it recorded, each prefixed by its kind (`m:` message id, `s:` stream and
    /// sequence, `k:` partition and offset).
    pub(super) ids: Vec<String>,
    /// A Kafka partition recorded without an offset: tells messages apart, never pairs alone.
    pub(super) partition: Option<String>,
    /// A consumer root's links to spans of other traces.
    pub(super) links: Vec<SpanId>,
    /// A producer's: the services that consumed its message (its children's, the consumer roots
    /// paired with it or linked to it); no other root of theirs pairs with it.
    pub(super) served: Vec<Arc<str>>,
}

/// How two sides' ids say they stand to each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Identity {
    /// An id of the same kind on both sides, equal: the same message.
    Same,
    /// An id (or partition) of the same kind on both sides, different: another message.
    Different,
    /// No id of a kind both sides record.
    Unknown,
}

/// A side without what [`Message`] holds.
pub(super) static NONE: Message = Message {
    ids: Vec::new(),
    partition: None,
    links: Vec::new(),
    served: Vec::new(),
};

impl Message {
    /// What `span` recorded.
    pub(super) fn of(span: &Span) -> Self {
        let mut ids = Vec::new();
        if let Some(id) = scalar(span, MESSAGE_ID) {
            ids.push(format!("m:{id}"));
        }
        if let (Some(stream), Some(sequence)) =
            (scalar(span, STREAM), scalar(span, STREAM_SEQUENCE))
        {
            ids.push(format!("s:{stream}/{sequence}"));
        }
        let mut partition = scalar(span, PARTITION);
        if let Some(p) = &partition
            && let Some(offset) = scalar(span, OFFSET)
        {
            ids.push(format!("k:{p}/{offset}"));
            partition = None;
        }
        Message {
            ids,
            partition,
            links: Vec::new(),
            served: Vec::new(),
        }
    }

    /// Whether `service` consumed this producer's message already.
    pub(super) fn served(&self, service: &str) -> bool {
        self.served.iter().any(|s| &**s == service)
    }

    /// Notes that `service` consumed this producer's message.
    pub(super) fn serve(&mut self, service: &Arc<str>) {
        if !self.served(service) {
            self.served.push(Arc::clone(service));
        }
    }

    /// How the ids of `self` and `other` relate.
    pub(super) fn identity(&self, other: &Message) -> Identity {
        let mut same = false;
        for id in &self.ids {
            let kind = id.split_once(':').map(|(k, _)| k);
            if let Some(theirs) = other
                .ids
                .iter()
                .find(|o| o.split_once(':').map(|(k, _)| k) == kind)
            {
                if theirs != id {
                    return Identity::Different;
                }
                same = true;
            }
        }
        if same {
            return Identity::Same;
        }
        match (&self.partition, &other.partition) {
            (Some(a), Some(b)) if a != b => Identity::Different,
            _ => Identity::Unknown,
        }
    }
}

/// The queue `span` names, as both sides of a hop can agree on it: the destination, except on
/// RabbitMQ, where the producer writes `{exchange}:{routing key}` (conventions 1.26 and later;
/// aio-pika `{exchange},{routing key}`, pika the exchange alone) and the consumer
/// `{exchange}:{routing key}:{queue}` (pika and aio-pika the exchange): the exchange, or the
/// routing key on the default exchange (the first part that is not empty). `None` without one.
pub(super) fn destination(span: &Span) -> Option<String> {
    let destination = DESTINATION
        .iter()
        .find_map(|k| span.attribute(k).and_then(Value::as_str))
        .filter(|s| !s.is_empty())?;
    let rabbitmq = span.attribute("messaging.system").and_then(Value::as_str) == Some("rabbitmq");
    if !rabbitmq {
        return Some(destination.to_owned());
    }
    destination
        .split([':', ','])
        .find(|part| !part.is_empty())
        .map(str::to_owned)
}

/// A string or integer attribute as text.
fn scalar(span: &Span, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| match span.attribute(k)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        _ => None,
    })
}

/// Whether the CONSUMER `span` starts its trace's part in its service: the root, or under
/// spans of its own service only, none a PRODUCER, none a CONSUMER with a destination (the
/// outer one stands for the message) and none with a remote parent (walked up to the root;
/// `false` where a parent is missing).
pub(super) fn starts_trace<'a>(
    span: &'a Span,
    parent_of: impl Fn(SpanId) -> Option<&'a Span>,
) -> bool {
    let mut at = span;
    // A cycle of parents ends the walk (each step is a span of the trace, so at most as many).
    for _ in 0..4096 {
        let Some(parent) = at.parent_span_id else {
            return true;
        };
        if at.parent_is_remote() == Some(true) {
            return false;
        }
        match parent_of(parent) {
            // Under a CONSUMER span of the message (a destination): that one stands for it.
            Some(p)
                if p.kind != SpanKind::Producer
                    && !(p.kind == SpanKind::Consumer && destination(p).is_some())
                    && p.resource.service == span.resource.service
                    && p.span_id != at.span_id =>
            {
                at = p;
            }
            _ => return false,
        }
    }
    false
}
