//! [`Subscription`]: what a traced stream reads, named on its spans and metrics.

/// What a traced stream reads, named on its spans and metrics: its subject pattern
/// (`messaging.destination.template`), its queue group (`messaging.consumer.group.name`), its
/// durable or named JetStream consumer (`messaging.destination.subscription.name`).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Subscription {
    /// The subject pattern subscribed to (`rollout.jobs.*`).
    pub subject: Option<String>,
    /// The queue group.
    pub queue_group: Option<String>,
    /// The durable or named consumer.
    pub name: Option<String>,
}

impl Subscription {
    /// A subscription to `pattern`.
    pub fn subject(pattern: impl Into<String>) -> Self {
        Subscription {
            subject: Some(pattern.into()),
            ..Subscription::default()
        }
    }

    /// In the queue group `group`.
    pub fn with_queue_group(mut self, group: impl Into<String>) -> Self {
        self.queue_group = Some(group.into());
        self
    }

    /// Of the durable or named consumer `name`.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// What a JetStream consumer's info says: its filter subject (when it has one), its
    /// durable or user-given name (an ephemeral consumer's generated name is left out: one
    /// per consumer, not a bounded name), its deliver group.
    pub fn of_jetstream(info: &async_nats::jetstream::consumer::Info) -> Self {
        let config = &info.config;
        let subject = (!config.filter_subject.is_empty()).then(|| config.filter_subject.clone());
        let name = config.durable_name.clone().or_else(|| config.name.clone());
        Subscription {
            subject,
            queue_group: config.deliver_group.clone(),
            name,
        }
    }
}
