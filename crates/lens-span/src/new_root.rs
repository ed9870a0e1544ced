//! Why a SERVER (or messaging CONSUMER) span starts a new trace: the `lens.trace.new_root`
//! attribute that lens servers (lens-axum, lens-tonic) and consumers (lens-nats) set on such a
//! span, so that `lens check` / `lens watch` can name the cause of a lost hop
//! (docs/doctor.md#lost-context).
//!
//! | value | the request |
//! | --- | --- |
//! | `none` | carried no `traceparent` |
//! | `rejected:<anchor>` | carried one that a rule of docs/propagation-rules.md rejects (its anchor, e.g. `traceparent-versions`) |
//! | `untrusted:ignored` | carried one that the inbound policy ignored |
//! | `untrusted:linked` | carried one that the inbound policy linked to instead of continuing |
//! | `linked` | (messaging) carried a trusted one, and the consumer asked for links only |
//!
//! A request whose context is trusted and valid gets nothing (and costs nothing more).

use http::HeaderMap;
use lens_core::policy::InboundContext;
use lens_core::traceparent::TraceParent;
use lens_core::{InboundDecision, Limits};
use opentelemetry::KeyValue;
use opentelemetry::propagation::Extractor;
use opentelemetry::trace::TraceContextExt as _;

/// The attribute's key.
pub const NEW_ROOT: &str = "lens.trace.new_root";

/// The `lens.trace.new_root` attribute for a SERVER span started from `inbound` (extracted from
/// `headers`), `None` when the span continues the caller's trace.
///
/// ```
/// use http::HeaderMap;
/// use lens_core::InboundPolicy;
/// use lens_core::policy::InboundRequest;
///
/// let mut headers = HeaderMap::new();
/// headers.insert("traceparent", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".parse().unwrap());
/// let carrier = lens_core::HeaderCarrier(&headers);
/// let inbound = InboundPolicy::trust_all().extract(&InboundRequest::from_headers(&carrier));
/// let attribute = lens_span::new_root::cause(&headers, &inbound).unwrap();
/// assert_eq!(attribute.value.as_str(), "rejected:traceparent-versions");
/// ```
#[inline]
pub fn cause(headers: &HeaderMap, inbound: &InboundContext) -> Option<KeyValue> {
    if inbound.decision == InboundDecision::Trust && inbound.parent.span().span_context().is_valid()
    {
        return None;
    }
    let values = headers.get_all("traceparent");
    let lines = values.iter().map(|v| v.to_str().unwrap_or("\u{0}"));
    Some(KeyValue::new(NEW_ROOT, slow_cause(lines, inbound.decision)))
}

/// [`cause`] for a span started from a message's `carrier` (the messaging lifecycle): the same
/// values, read through the carrier's `get_all("traceparent")`.
///
/// ```
/// use std::collections::HashMap;
/// use lens_core::{InboundPolicy, MapCarrier};
/// use lens_core::policy::InboundRequest;
///
/// let headers: HashMap<String, String> = HashMap::new();
/// let carrier = MapCarrier(&headers);
/// let inbound = InboundPolicy::trust_all().extract(&InboundRequest::new(&carrier));
/// let attribute = lens_span::new_root::cause_in(&carrier, &inbound).unwrap();
/// assert_eq!(attribute.value.as_str(), "none");
/// ```
#[inline]
pub fn cause_in(carrier: &dyn Extractor, inbound: &InboundContext) -> Option<KeyValue> {
    if inbound.decision == InboundDecision::Trust && inbound.parent.span().span_context().is_valid()
    {
        return None;
    }
    let lines = carrier
        .get_all(lens_core::TRACEPARENT_HEADER)
        .unwrap_or_default();
    Some(KeyValue::new(
        NEW_ROOT,
        slow_cause(lines.into_iter(), inbound.decision),
    ))
}

/// The value for a span whose consumer asked for links only (messaging,
/// [`crate::messaging::ConsumerParent::Links`]) and whose message carried a valid, trusted
/// context: a new trace by choice, with a link to the message's span.
pub const LINKED: &str = "linked";

#[cold]
fn slow_cause<'a>(lines: impl Iterator<Item = &'a str>, decision: InboundDecision) -> String {
    let mut lines = lines.peekable();
    if lines.peek().is_none() {
        return "none".to_owned();
    }
    match decision {
        InboundDecision::Ignore => return "untrusted:ignored".to_owned(),
        InboundDecision::Link => return "untrusted:linked".to_owned(),
        InboundDecision::Trust => {}
    }
    match TraceParent::parse_lines(lines, Limits::default().traceparent_bytes) {
        Err(e) => format!("rejected:{}", e.anchor()),
        // Valid under the default limits: a smaller configured limit rejected it.
        Ok(_) => "rejected:traceparent-length".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use lens_core::policy::InboundRequest;
    use lens_core::{HeaderCarrier, InboundPolicy};

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn cause_of(policy: &InboundPolicy, traceparent: Option<&str>) -> Option<String> {
        let mut headers = HeaderMap::new();
        if let Some(tp) = traceparent {
            headers.insert("traceparent", tp.parse().unwrap());
        }
        let carrier = HeaderCarrier(&headers);
        let inbound = policy.extract(&InboundRequest::from_headers(&carrier));
        cause(&headers, &inbound).map(|kv| {
            assert_eq!(kv.key.as_str(), NEW_ROOT);
            kv.value.as_str().into_owned()
        })
    }

    #[test]
    fn each_cause_of_a_new_root_and_nothing_on_a_trusted_valid_request() {
        let trust = InboundPolicy::trust_all();
        assert_eq!(cause_of(&trust, Some(GOOD)), None);
        assert_eq!(cause_of(&trust, None).as_deref(), Some("none"));
        let zero = GOOD.replace("4bf92f3577b34da6a3ce929d0e0e4736", &"0".repeat(32));
        assert_eq!(
            cause_of(&trust, Some(&zero)).as_deref(),
            Some("rejected:traceparent-zero-ids")
        );
        assert_eq!(
            cause_of(&trust, Some(&GOOD.replacen("00", "ff", 1))).as_deref(),
            Some("rejected:traceparent-versions")
        );
        assert_eq!(
            cause_of(&InboundPolicy::ignore_all(), Some(GOOD)).as_deref(),
            Some("untrusted:ignored")
        );
        assert_eq!(
            cause_of(&InboundPolicy::link_all(), Some(GOOD)).as_deref(),
            Some("untrusted:linked")
        );
        // No traceparent at all is "none" whatever the policy.
        assert_eq!(
            cause_of(&InboundPolicy::link_all(), None).as_deref(),
            Some("none")
        );
    }
}
