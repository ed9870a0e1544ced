//! The [`SpanOptions`] methods that start messaging spans, and the [`ConsumerParent`] a
//! `process` span descends from.

use lens_core::policy::{InboundContext, InboundPolicy, InboundRequest};
use lens_core::{InboundDecision, LensContextExt};
use opentelemetry::propagation::Extractor;
use opentelemetry::trace::{Link, SpanKind, TraceContextExt};
use opentelemetry::{Context, KeyValue};

use crate::lifecycle::{Adapter, LiveSpan, SpanOptions};

use super::operation::Operation;
use super::policies::DestinationPolicy;

/// What a single-message `process` span descends from, chosen per consumer
/// (docs/messaging.md#parent-or-link has a waterfall of each).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ConsumerParent {
    /// What the messaging conventions (1.44) recommend, the default: when a span is current
    /// as processing begins (a poll loop's span, a batch's `receive` span), it is the parent
    /// and the `process` span links to the message's context (when the policy lets it); with
    /// no span current, the message's context is the parent, as with
    /// [`ConsumerParent::Message`]. The message's baggage is current when the policy trusts
    /// it.
    #[default]
    Ambient,
    /// The child of the context the message carried (when the policy trusts it), with a link
    /// to the span current when processing began, if any: one trace from producer to
    /// consumer, what NeMo Lens's `extract_context` + `attach` and most Python
    /// instrumentations give.
    Message,
    /// A new trace with a link to the message's context (and to the span current when
    /// processing began): for consumers whose work is not part of the producer's (a message
    /// handled long after it was sent, or one of many feeding a single piece of work).
    /// `lens.trace.new_root` is `linked`.
    Links,
}

impl<A: Adapter, P> SpanOptions<A, P> {
    /// Starts the span of a `send`, `receive` or `settle` operation (its kind from the
    /// operation's type) for `request` under `parent`, with `links` (a batch receive's links
    /// to its messages). Named by the span-name hook, else [`Operation::span_name`]; with the
    /// operation's attributes, then the request hook's. With a meter, the operation's
    /// duration and message count are recorded when the span ends.
    #[inline]
    pub fn start_operation(
        &self,
        request: &A::Request<'_>,
        operation: &Operation<'_>,
        parent: &Context,
        links: Vec<Link>,
    ) -> LiveSpan {
        self.start_kind(
            request,
            || operation.span_name(),
            operation.attributes(),
            operation.operation_type.span_kind(),
            parent,
            links,
        )
    }
}

impl<A: Adapter> SpanOptions<A, DestinationPolicy> {
    /// Decides with the policy for `destination` and extracts what it allows from a message's
    /// headers (`carrier`, read through lens-core's propagator or the global one).
    #[inline]
    pub fn extract_message(&self, destination: &str, carrier: &dyn Extractor) -> InboundContext {
        let policy: &InboundPolicy = self.policy().policy_for(destination);
        self.propagation()
            .extract(policy, &InboundRequest::new(carrier))
    }

    /// The link a batch `receive` span has to one of its messages: to the message's span
    /// context when the policy for `destination` trusts or links it, none when it ignores it
    /// or the message carried no valid context.
    pub fn message_link(&self, destination: &str, carrier: &dyn Extractor) -> Option<Link> {
        let inbound = self.extract_message(destination, carrier);
        let sc = match inbound.decision {
            InboundDecision::Trust => inbound.remote_span_context(),
            InboundDecision::Link => inbound.link,
            InboundDecision::Ignore => None,
        }?;
        Some(Link::with_context(sc))
    }

    /// Starts the CONSUMER `process` span of one message read from `carrier`: the policy for
    /// its destination decides, `parent` says whether a trusted context becomes the parent or
    /// a link; the span links to the span of `current` (the Context current when processing
    /// began) when it has one. A span that starts a new trace records `lens.trace.new_root`.
    pub fn start_process(
        &self,
        request: &A::Request<'_>,
        operation: &Operation<'_>,
        carrier: &dyn Extractor,
        parent: ConsumerParent,
        current: &Context,
    ) -> LiveSpan {
        self.start_process_with_links(request, operation, carrier, parent, current, Vec::new())
    }

    /// [`SpanOptions::start_process`] with `links` of the adapter's own besides (a message
    /// taken from a batch: the batch's `receive` span).
    pub fn start_process_with_links(
        &self,
        request: &A::Request<'_>,
        operation: &Operation<'_>,
        carrier: &dyn Extractor,
        parent: ConsumerParent,
        current: &Context,
        mut links: Vec<Link>,
    ) -> LiveSpan {
        let destination = operation.destination.unwrap_or_default();
        let mut inbound = self.extract_message(destination, carrier);
        let (mut attributes, metric_attributes) = operation.attributes();
        let current_span = current.span();
        let current_sc = current_span.span_context();
        // The message's span context (valid only when trusted) is read in place and cloned
        // only where it becomes a link: a clone copies its tracestate, one allocation per
        // member and two per member's text.
        let remote_valid = inbound.parent.span().span_context().is_valid();
        let remote = |inbound: &InboundContext| inbound.parent.span().span_context().clone();
        let (parent_cx, new_root) = match parent {
            ConsumerParent::Ambient if current_sc.is_valid() => {
                // The span current now is the parent; the message's context a link (trusted
                // or, as the policy says, linked only).
                let link = if remote_valid {
                    Some(remote(&inbound))
                } else {
                    inbound.link.take()
                };
                if let Some(sc) = link {
                    links.push(Link::with_context(sc));
                }
                let cx = match inbound.decision {
                    InboundDecision::Trust => {
                        current.with_baggage_list(inbound.parent.lens_baggage().into_owned())
                    }
                    _ => current.clone(),
                };
                (cx, None)
            }
            ConsumerParent::Links if remote_valid => {
                links.push(Link::with_context(remote(&inbound)));
                // The message's baggage stays (the policy trusted it); its span does not parent
                // (not even as an invalid span: a parent-based sampler would read that as an
                // unsampled parent).
                let cx =
                    Context::new().with_baggage_list(inbound.parent.lens_baggage().into_owned());
                (
                    cx,
                    Some(KeyValue::new(
                        crate::new_root::NEW_ROOT,
                        crate::new_root::LINKED,
                    )),
                )
            }
            _ => {
                let new_root = crate::new_root::cause_in(carrier, &inbound);
                if let Some(link) = inbound.link {
                    links.push(Link::with_context(link));
                }
                (inbound.parent, new_root)
            }
        };
        attributes.extend(new_root);
        self.push_baggage_keys(&mut attributes, &parent_cx);
        if current_sc.is_valid()
            && parent_cx.span().span_context() != current_sc
            && !links.iter().any(|l| l.span_context == *current_sc)
        {
            links.push(Link::with_context(current_sc.clone()));
        }
        self.start_kind(
            request,
            || operation.span_name(),
            (attributes, metric_attributes),
            SpanKind::Consumer,
            &parent_cx,
            links,
        )
    }
}
