//! The findings on a broken hop, in words with what to fix: a missing parent, lost context
//! over a request or a queue, an ambiguous hop, a new root that links to its client.

use super::candidates::PendingLink;
use super::conventions::Candidate;
use super::finding::{Finding, Rule};
use super::new_root::NewRootCause;
use crate::model::{Span, SpanId, TraceId};

pub(super) fn missing_parent(id: TraceId, span: &Span, parent: SpanId) -> Finding {
    let why = match span.parent_is_remote() {
        Some(true) => "its parent came over the wire, but the upstream service never exported \
it: the upstream did not sample or export its span, or a proxy forwarded the headers of a \
service that is not traced"
            .to_owned(),
        Some(false) => format!(
            "its parent is local to {}: a span inside the service was dropped (not ended, or \
lost by its exporter)",
            span.service()
        ),
        None => "the exporter does not say whether the parent was remote".to_owned(),
    };
    Finding {
        rule: Rule::MissingParent,
        trace_ids: vec![id],
        span_ids: vec![span.span_id, parent],
        services: vec![span.service().to_owned()],
        message: format!(
            "parent {parent} of span {} (\"{}\" in {}) never arrived; {why}",
            span.span_id,
            span.name,
            span.service()
        ),
    }
}

/// What to fix on a lost hop from `from` to `to`, by the cause `to` recorded; over a queue
/// when `queue` (the context travels in the message's headers).
fn advice(from: &str, to: &str, cause: Option<&NewRootCause>, queue: bool) -> String {
    let (received, carrier) = if queue {
        (
            "found no traceparent in the message",
            "into the message's headers (or attributes)",
        )
    } else {
        (
            "received no traceparent",
            "(or instrument its HTTP/gRPC client)",
        )
    };
    match cause {
        Some(NewRootCause::NoTraceparent) => {
            format!("{to} {received}: make {from} inject the context {carrier}")
        }
        Some(NewRootCause::Rejected(anchor)) if queue => format!(
            "{to} rejected the traceparent in the message (rule {anchor} of \
docs/propagation-rules.md): fix what {from} writes into the message's headers"
        ),
        Some(NewRootCause::Rejected(anchor)) => format!(
            "{to} rejected the traceparent it received (rule {anchor} of \
docs/propagation-rules.md): fix what {from} or a proxy between them sends"
        ),
        Some(NewRootCause::UntrustedIgnored) => format!(
            "{to}'s trust policy ignored the context from {from}: trust that {}, or link \
(docs/propagation-rules.md#trust)",
            if queue { "destination" } else { "caller" }
        ),
        Some(NewRootCause::UntrustedLinked | NewRootCause::Linked) | None if queue => format!(
            "make {from} inject the context into the message's headers, and {to} extract it from \
them"
        ),
        Some(NewRootCause::UntrustedLinked | NewRootCause::Linked) | None => {
            format!("check that {from} injects traceparent and that {to} extracts it")
        }
    }
}

/// How a lost hop's two sides were paired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Pairing {
    /// The server reports the address the client called.
    Address,
    /// By the request and time alone: the addresses differ.
    Request,
}

/// `service`, with the instance that answered where its resource names one:
/// `rust-relay (instance relay-3)`.
fn receiver(server: &Candidate) -> String {
    match server.address.instance.as_deref() {
        Some(instance) => format!("{} (instance {instance})", server.service),
        None => server.service.to_string(),
    }
}

/// `lost-context` on a request: `client`'s span got no child, and `server` started a new trace
/// for the same request.
pub(super) fn lost_context(client: &Candidate, server: &Candidate, by: Pairing) -> Finding {
    let why = advice(
        &client.service,
        &server.service,
        server.cause.as_ref(),
        false,
    );
    let paired = match by {
        Pairing::Address => "",
        Pairing::Request => {
            ", paired by request and time (behind a proxy or load balancer: the addresses differ)"
        }
    };
    lost(
        client,
        server,
        format!(
            "context lost on {} -> {}: client span {} (trace {}) has no child, and {} started \
trace {} for the same request{paired}; {why}",
            client.service,
            receiver(server),
            client.span_id,
            client.trace_id,
            server.service,
            server.trace_id
        ),
    )
}

/// `ambiguous-hop`: `this` (a childless client when `!this_is_server`, else a new root) fits
/// each of `others` by request and time, none at its address; `all` of them fit in all. The
/// traces, spans and services are the clients' first, then the servers' (a service once).
pub(super) fn ambiguous_hop(
    this: &Candidate,
    others: &[&Candidate],
    all: usize,
    this_is_server: bool,
) -> Finding {
    let (mut trace_ids, mut span_ids, mut services) =
        (Vec::new(), Vec::new(), Vec::<String>::new());
    let (first, then): (&[&Candidate], &[&Candidate]) = if this_is_server {
        (others, &[this])
    } else {
        (&[this], others)
    };
    for c in first.iter().chain(then) {
        trace_ids.push(c.trace_id);
        span_ids.push(c.span_id);
        if !services.iter().any(|s| **s == *c.service) {
            services.push(c.service.to_string());
        }
    }
    let listed = |c: &Candidate| {
        if this_is_server {
            format!(
                "client span {} of {} (trace {})",
                c.span_id, c.service, c.trace_id
            )
        } else {
            format!("trace {} of {}", c.trace_id, receiver(c))
        }
    };
    let mut list: Vec<String> = others.iter().map(|c| listed(c)).collect();
    if all > others.len() {
        list.push(format!("{} more", all - others.len()));
    }
    let list = list.join(", ");
    let message = if this_is_server {
        format!(
            "{} started trace {} for a request that {all} childless client spans made at the same \
time, none at its address (behind a proxy or load balancer): context was lost on one of {list}; \
`lens probe` settles which for a request it makes itself",
            receiver(this),
            this.trace_id
        )
    } else {
        format!(
            "context lost on {}: client span {} (trace {}) has no child, and {all} new roots for the \
same request started within it, none at its address (behind a proxy or load balancer): {list}; \
`lens probe` settles which for a request it makes itself",
            this.service, this.span_id, this.trace_id
        )
    };
    Finding {
        rule: Rule::AmbiguousHop,
        trace_ids,
        span_ids,
        services,
        message,
    }
}

/// `lost-context` over a queue: `producer`'s message went without its context, and
/// `consumer` started a new trace for it.
pub(super) fn lost_message_context(producer: &Candidate, consumer: &Candidate) -> Finding {
    let why = advice(
        &producer.service,
        &consumer.service,
        consumer.cause.as_ref(),
        true,
    );
    lost(
        producer,
        consumer,
        format!(
            "context lost on {} -> {} over a queue: {} started trace {} for a message that \
producer span {} (trace {}) sent to the same destination; {why}",
            producer.service,
            consumer.service,
            consumer.service,
            consumer.trace_id,
            producer.span_id,
            producer.trace_id
        ),
    )
}

/// The finding on a consumer root that started a new trace for a message one of `producers`
/// sent (`count` candidates in all; those listed are the ones still held): `lost-context` for
/// one; `untrusted-ignored` where the consumer's policy ignored the context; for several,
/// `lost-context` listing them where the consumer says it found no (valid) context, else
/// `ambiguous-producer`.
pub(super) fn lost_message(
    producers: &[&Candidate],
    count: usize,
    consumer: &Candidate,
) -> Finding {
    let ignored = consumer.cause == Some(NewRootCause::UntrustedIgnored);
    if let ([producer], 1, false) = (producers, count, ignored) {
        return lost_message_context(producer, consumer);
    }
    let mut listed: Vec<String> = producers
        .iter()
        .map(|p| format!("span {} (trace {}) in {}", p.span_id, p.trace_id, p.service))
        .collect();
    let how_many = if count > producers.len() {
        listed.push("more".to_owned());
        format!("more than {}", producers.len())
    } else {
        count.to_string()
    };
    let listed = listed.join(", ");
    let mut from: Vec<String> = Vec::new();
    for p in producers {
        if !from.iter().any(|s| **s == *p.service) {
            from.push(p.service.to_string());
        }
    }
    let (rule, message) = if ignored {
        (
            Rule::UntrustedIgnored,
            format!(
                "{} ignored the context in a message from {} by its trust policy for the \
destination and started trace {} (lens.trace.new_root = untrusted:ignored; producer {listed}): \
expected where its policy ignores that destination's publishers; trust or link them to keep \
the trace (docs/propagation-rules.md#trust)",
                consumer.service,
                from.join(" or "),
                consumer.trace_id
            ),
        )
    } else {
        let certain = matches!(
            consumer.cause,
            Some(NewRootCause::NoTraceparent | NewRootCause::Rejected(_))
        );
        let why = advice(
            &from.join(" or "),
            &consumer.service,
            consumer.cause.as_ref(),
            true,
        );
        (
            if certain {
                Rule::LostContext
            } else {
                Rule::AmbiguousProducer
            },
            format!(
                "context {} over a queue: {} started trace {} for a message from a \
destination that {how_many} producers sent to in the same window without message ids: {listed}; \
{why}",
                if certain { "lost" } else { "likely lost" },
                consumer.service,
                consumer.trace_id
            ),
        )
    };
    let mut finding = Finding {
        rule,
        trace_ids: producers.iter().map(|p| p.trace_id).collect(),
        span_ids: producers.iter().map(|p| p.span_id).collect(),
        services: from,
        message,
    };
    finding.trace_ids.push(consumer.trace_id);
    finding.span_ids.push(consumer.span_id);
    finding.services.push(consumer.service.to_string());
    finding
}

fn lost(from: &Candidate, to: &Candidate, message: String) -> Finding {
    Finding {
        rule: Rule::LostContext,
        trace_ids: vec![from.trace_id, to.trace_id],
        span_ids: vec![from.span_id, to.span_id],
        services: vec![from.service.to_string(), to.service.to_string()],
        message,
    }
}

pub(super) fn untrusted_linked(client: &Span, server: &PendingLink) -> Finding {
    Finding {
        rule: Rule::UntrustedLinked,
        trace_ids: vec![client.trace_id, server.server_trace],
        span_ids: vec![client.span_id, server.server_span],
        services: vec![
            client.service().to_owned(),
            server.server_service.to_string(),
        ],
        message: format!(
            "{} did not trust the context from {} and started trace {} linked to client span {} \
(trace {}): expected where its policy links public callers (docs/propagation-rules.md#trust)",
            server.server_service,
            client.service(),
            server.server_trace,
            client.span_id,
            client.trace_id
        ),
    }
}
