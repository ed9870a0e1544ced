//! Choices per destination: [`DestinationPolicy`], [`OutboundDestinationPolicy`] and
//! [`DestinationTemplates`].

use lens_core::OutboundPolicy;
use lens_core::policy::InboundPolicy;
use lens_core::policy::OutboundDecision;

use crate::destination_rules::DestinationRules;

/// The inbound policy of a consumer, chosen per destination instead of per peer: the first
/// rule whose pattern matches the message's destination, else the default.
///
/// Patterns are dot-separated tokens as NATS writes subjects: `*` matches one token, a final
/// `>` matches one or more; any other token matches itself exactly.
///
/// ```
/// use lens_core::{InboundDecision, InboundPolicy};
/// use lens_span::messaging::DestinationPolicy;
///
/// let policy = DestinationPolicy::new(InboundPolicy::trust_all())
///     .for_destination("partner.>", InboundPolicy::link_all())
///     .for_destination("public.*.events", InboundPolicy::ignore_all());
/// assert!(format!("{:?}", policy.policy_for("partner.orders.new")).contains("Link"));
/// assert!(format!("{:?}", policy.policy_for("public.a.events")).contains("Ignore"));
/// assert!(format!("{:?}", policy.policy_for("orders")).contains("Trust"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct DestinationPolicy {
    default: InboundPolicy,
    rules: DestinationRules<InboundPolicy>,
}

impl From<InboundPolicy> for DestinationPolicy {
    /// `policy` for every destination.
    fn from(policy: InboundPolicy) -> Self {
        DestinationPolicy::new(policy)
    }
}

impl DestinationPolicy {
    /// `default` for every destination no rule names.
    pub fn new(default: InboundPolicy) -> Self {
        DestinationPolicy {
            default,
            rules: DestinationRules::default(),
        }
    }

    /// `policy` for destinations matching `pattern` (after the rules added before it).
    pub fn for_destination(mut self, pattern: impl Into<String>, policy: InboundPolicy) -> Self {
        self.rules = self.rules.with(pattern.into(), policy);
        self
    }

    /// The policy for `destination`.
    #[inline]
    pub fn policy_for(&self, destination: &str) -> &InboundPolicy {
        self.rules
            .find(destination)
            .map_or(&self.default, |(_, policy)| policy)
    }
}

/// The outbound policy of a producer, chosen per destination as well as per server: one broker
/// carries internal and external destinations, so the first rule whose pattern matches the
/// message's destination decides (by the server's address, as lens-core's [`OutboundPolicy`]
/// does), else the default. Patterns are those of [`DestinationPolicy`].
///
/// ```
/// use lens_core::OutboundPolicy;
/// use lens_span::messaging::OutboundDestinationPolicy;
///
/// let policy = OutboundDestinationPolicy::new(
///     // Context to the company's brokers only...
///     OutboundPolicy::default().trace_context_only_to(["*.internal"]),
/// )
/// // ...and never on the subjects partners read, whichever broker carries them.
/// .for_destination(
///     "partner.>",
///     OutboundPolicy::default().trace_context_only_to(Vec::<String>::new()).no_baggage(),
/// );
///
/// assert!(policy.decide("nats.internal", "jobs.rollout").trace_context);
/// assert!(!policy.decide("nats.internal", "partner.orders").trace_context);
/// assert!(!policy.decide("nats.internal", "partner.orders").baggage);
/// assert!(!policy.decide("broker.example.com", "jobs.rollout").trace_context);
/// ```
#[derive(Clone, Debug, Default)]
pub struct OutboundDestinationPolicy {
    default: OutboundPolicy,
    rules: DestinationRules<OutboundPolicy>,
}

impl From<OutboundPolicy> for OutboundDestinationPolicy {
    /// `policy` for every destination.
    fn from(policy: OutboundPolicy) -> Self {
        OutboundDestinationPolicy::new(policy)
    }
}

impl OutboundDestinationPolicy {
    /// `default` for every destination no rule names.
    pub fn new(default: OutboundPolicy) -> Self {
        OutboundDestinationPolicy {
            default,
            rules: DestinationRules::default(),
        }
    }

    /// `policy` for destinations matching `pattern` (after the rules added before it).
    pub fn for_destination(mut self, pattern: impl Into<String>, policy: OutboundPolicy) -> Self {
        self.rules = self.rules.with(pattern.into(), policy);
        self
    }

    /// The policy for `destination`.
    #[inline]
    pub fn policy_for(&self, destination: &str) -> &OutboundPolicy {
        self.rules
            .find(destination)
            .map_or(&self.default, |(_, policy)| policy)
    }

    /// What a message to `destination` on the broker at `server` may carry.
    #[inline]
    pub fn decide(&self, server: &str, destination: &str) -> OutboundDecision {
        self.policy_for(destination).decide(server)
    }
}

/// The destination templates a producer declares (`rollout.jobs.*`): a message's destination
/// matching one is named by it in the span name and the metrics
/// (`messaging.destination.template`), so that a destination per job or per run makes no new
/// span name or metric series. Patterns are those of [`DestinationPolicy`]; the first match
/// wins.
///
/// ```
/// use lens_span::messaging::DestinationTemplates;
///
/// let templates = DestinationTemplates::default().with("rollout.jobs.*");
/// assert_eq!(templates.template_for("rollout.jobs.7f3a"), Some("rollout.jobs.*"));
/// assert_eq!(templates.template_for("orders"), None);
/// ```
#[derive(Clone, Debug, Default)]
pub struct DestinationTemplates {
    patterns: DestinationRules<()>,
}

impl DestinationTemplates {
    /// Adds `pattern` (after those added before it).
    pub fn with(mut self, pattern: impl Into<String>) -> Self {
        self.patterns = self.patterns.with(pattern.into(), ());
        self
    }

    /// The first declared template `destination` matches.
    #[inline]
    pub fn template_for(&self, destination: &str) -> Option<&str> {
        self.patterns.find(destination).map(|(pattern, ())| pattern)
    }

    /// Whether no template is declared.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }
}
