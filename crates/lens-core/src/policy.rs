//! Trust boundaries (docs/propagation-rules.md#trust): which inbound requests may parent our spans and contribute
//! baggage, and which outbound hosts receive trace context and baggage.
//!
//! Defaults keep parity with NeMo Lens: trust every request, send to every host. Each policy is
//! one line to switch on:
//!
//! ```
//! use lens_core::policy::{InboundDecision, InboundPolicy, InboundRequest, OutboundPolicy};
//! use std::collections::HashMap;
//! use lens_core::MapCarrier;
//!
//! // Inbound: only callers on private networks may continue their trace; others get a new
//! // trace that links to theirs.
//! let inbound = InboundPolicy::trust_private_networks();
//! let headers: HashMap<String, String> = HashMap::new();
//! let carrier = MapCarrier(&headers);
//! let request = InboundRequest::new(&carrier).with_peer("203.0.113.9".parse().unwrap());
//! assert_eq!(inbound.decide(&request), InboundDecision::Link);
//!
//! // Outbound: trace context to our own services, baggage to none outside them.
//! let outbound = OutboundPolicy::send_everywhere()
//!     .baggage_only_to(["*.internal.example", "localhost"]);
//! assert!(outbound.decide("api.partner.example").trace_context);
//! assert!(!outbound.decide("api.partner.example").baggage);
//! assert!(outbound.decide("db.internal.example").baggage);
//! ```

use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{SpanContext, TraceContextExt};

use crate::carrier::HeaderCarrier;
use crate::propagator::{W3cPropagator, propagator};

/// What an inbound request's propagated context may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InboundDecision {
    /// The remote span becomes the parent; baggage is kept.
    Trust,
    /// A new root trace, with a Link to the remote span; baggage is dropped.
    Link,
    /// A new root trace, nothing of the remote context kept.
    Ignore,
}

/// What a policy knows about an inbound request.
#[derive(Clone, Copy)]
pub struct InboundRequest<'a> {
    /// The request's headers or metadata.
    pub headers: &'a dyn Extractor,
    /// The peer's address, when the transport knows it.
    pub peer: Option<IpAddr>,
    /// The same headers as an `http::HeaderMap`, when they are one: extract then reads them
    /// directly ([`W3cPropagator::extract_headers`]).
    header_map: Option<&'a http::HeaderMap>,
}

impl fmt::Debug for InboundRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InboundRequest")
            .field("peer", &self.peer)
            .finish_non_exhaustive()
    }
}

impl<'a> InboundRequest<'a> {
    /// A request with these headers and no known peer.
    pub fn new(headers: &'a dyn Extractor) -> Self {
        InboundRequest {
            headers,
            peer: None,
            header_map: None,
        }
    }

    /// A request whose headers are an `http::HeaderMap`, and no known peer: what
    /// [`InboundRequest::new`] gives for the carrier, with a faster extract (no header-name
    /// parsing, no `Vec` per header; docs/performance.md#core-extract-headers).
    ///
    /// ```
    /// use http::HeaderMap;
    /// use lens_core::HeaderCarrier;
    /// use lens_core::policy::{InboundPolicy, InboundRequest};
    ///
    /// let headers = HeaderMap::new();
    /// let carrier = HeaderCarrier(&headers);
    /// let inbound = InboundPolicy::default().extract(&InboundRequest::from_headers(&carrier));
    /// assert!(inbound.link.is_none());
    /// ```
    pub fn from_headers(carrier: &'a HeaderCarrier<&'a http::HeaderMap>) -> Self {
        InboundRequest {
            headers: carrier,
            peer: None,
            header_map: Some(carrier.0),
        }
    }

    /// Sets the peer address.
    pub fn with_peer(mut self, peer: IpAddr) -> Self {
        self.peer = Some(peer);
        self
    }
}

type DecideFn = dyn Fn(&InboundRequest<'_>) -> InboundDecision + Send + Sync;

#[derive(Clone)]
enum InboundRule {
    Always(InboundDecision),
    PrivateNetworks,
    Header { name: String, value: Option<String> },
    Custom(Arc<DecideFn>),
}

/// Decides per inbound request whether its propagated context is trusted (docs/propagation-rules.md#trust).
#[derive(Clone)]
pub struct InboundPolicy {
    rule: InboundRule,
    otherwise: InboundDecision,
}

impl fmt::Debug for InboundPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rule = match &self.rule {
            InboundRule::Always(d) => format!("Always({d:?})"),
            InboundRule::PrivateNetworks => "PrivateNetworks".to_owned(),
            InboundRule::Header { name, value } => format!("Header({name}, {value:?})"),
            InboundRule::Custom(_) => "Custom".to_owned(),
        };
        f.debug_struct("InboundPolicy")
            .field("rule", &rule)
            .field("otherwise", &self.otherwise)
            .finish()
    }
}

impl Default for InboundPolicy {
    fn default() -> Self {
        Self::trust_all()
    }
}

/// Whether an address belongs to a private, loopback or link-local network.
pub fn is_private_address(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_private() || v4.is_loopback() || v4.is_link_local(),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_private_address(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            v6.is_loopback() || (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfe80
        }
    }
}

impl InboundPolicy {
    /// Trust every request (the default, parity with NeMo Lens).
    pub fn trust_all() -> Self {
        Self {
            rule: InboundRule::Always(InboundDecision::Trust),
            otherwise: InboundDecision::Link,
        }
    }

    /// Start a new trace linked to the remote one for every request.
    pub fn link_all() -> Self {
        Self {
            rule: InboundRule::Always(InboundDecision::Link),
            otherwise: InboundDecision::Link,
        }
    }

    /// Ignore every request's propagated context.
    pub fn ignore_all() -> Self {
        Self {
            rule: InboundRule::Always(InboundDecision::Ignore),
            otherwise: InboundDecision::Ignore,
        }
    }

    /// Trust requests from private, loopback and link-local addresses; others get
    /// [`InboundPolicy::otherwise`] (Link unless changed). A request with no known peer is untrusted.
    pub fn trust_private_networks() -> Self {
        Self {
            rule: InboundRule::PrivateNetworks,
            otherwise: InboundDecision::Link,
        }
    }

    /// Trust requests that carry this header (any value), e.g. one your gateway adds after
    /// authenticating the caller.
    pub fn trust_if_header(name: impl Into<String>) -> Self {
        Self {
            rule: InboundRule::Header {
                name: name.into().to_ascii_lowercase(),
                value: None,
            },
            otherwise: InboundDecision::Link,
        }
    }

    /// Trust requests whose header `name` has exactly `value`.
    pub fn trust_if_header_value(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            rule: InboundRule::Header {
                name: name.into().to_ascii_lowercase(),
                value: Some(value.into()),
            },
            otherwise: InboundDecision::Link,
        }
    }

    /// Your own rule.
    pub fn custom<F>(decide: F) -> Self
    where
        F: Fn(&InboundRequest<'_>) -> InboundDecision + Send + Sync + 'static,
    {
        Self {
            rule: InboundRule::Custom(Arc::new(decide)),
            otherwise: InboundDecision::Link,
        }
    }

    /// What untrusted requests get under the private-network and header rules (Link or Ignore).
    pub fn otherwise(mut self, decision: InboundDecision) -> Self {
        self.otherwise = decision;
        self
    }

    /// The decision for one request.
    pub fn decide(&self, request: &InboundRequest<'_>) -> InboundDecision {
        match &self.rule {
            InboundRule::Always(d) => *d,
            InboundRule::PrivateNetworks => match request.peer {
                Some(ip) if is_private_address(ip) => InboundDecision::Trust,
                _ => self.otherwise,
            },
            InboundRule::Header { name, value } => {
                let ok = match (request.headers.get(name), value) {
                    (Some(_), None) => true,
                    (Some(got), Some(want)) => got == want,
                    (None, _) => false,
                };
                if ok {
                    InboundDecision::Trust
                } else {
                    self.otherwise
                }
            }
            InboundRule::Custom(f) => f(request),
        }
    }

    /// Decides and extracts with lens's process-wide propagator.
    pub fn extract(&self, request: &InboundRequest<'_>) -> InboundContext {
        self.extract_with(propagator(), request)
    }

    /// Decides and extracts with the given propagator.
    pub fn extract_with(
        &self,
        propagator: &W3cPropagator,
        request: &InboundRequest<'_>,
    ) -> InboundContext {
        let decision = self.decide(request);
        match decision {
            InboundDecision::Trust => InboundContext {
                decision,
                parent: match request.header_map {
                    Some(map) => propagator.extract_headers(&Context::new(), map),
                    None => propagator.extract_with_context(&Context::new(), request.headers),
                },
                link: None,
            },
            InboundDecision::Link => InboundContext {
                decision,
                parent: Context::new(),
                link: propagator.extract_span_context(request.headers),
            },
            InboundDecision::Ignore => InboundContext {
                decision,
                parent: Context::new(),
                link: None,
            },
        }
    }
}

/// The outcome of an inbound policy: what the SERVER span starts from.
#[derive(Clone, Debug)]
pub struct InboundContext {
    /// The decision taken.
    pub decision: InboundDecision,
    /// Start the server span with this Context as parent: the remote context when trusted, an
    /// empty Context otherwise.
    pub parent: Context,
    /// With [`InboundDecision::Link`], the remote span context to link to (when valid).
    pub link: Option<SpanContext>,
}

impl InboundContext {
    /// The remote span context this request continues, when trusted.
    pub fn remote_span_context(&self) -> Option<SpanContext> {
        let span = self.parent.span();
        let sc = span.span_context();
        sc.is_valid().then(|| sc.clone())
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum HostPattern {
    Exact(String),
    /// `*.example.com`: any subdomain (not the bare domain). Stored as `.example.com`.
    Suffix(String),
}

impl HostPattern {
    fn parse(s: &str) -> Self {
        let s = s.trim().to_ascii_lowercase();
        match s.strip_prefix('*') {
            Some(rest) if rest.starts_with('.') => HostPattern::Suffix(rest.to_owned()),
            _ => HostPattern::Exact(s),
        }
    }

    fn matches(&self, host: &str) -> bool {
        match self {
            HostPattern::Exact(h) => h.eq_ignore_ascii_case(host),
            HostPattern::Suffix(suffix) => {
                host.len() > suffix.len()
                    && host.as_bytes()[host.len() - suffix.len()..]
                        .eq_ignore_ascii_case(suffix.as_bytes())
            }
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum HostSet {
    Any,
    Only(Vec<HostPattern>),
}

impl HostSet {
    fn contains(&self, host: &str) -> bool {
        // `Any` (the default) answers without normalizing the host: once per outbound request.
        let HostSet::Only(patterns) = self else {
            return true;
        };
        let host = host.trim_end_matches('.');
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        patterns.iter().any(|p| p.matches(host))
    }
}

/// What an outbound request may carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OutboundDecision {
    /// Send `traceparent` and `tracestate`.
    pub trace_context: bool,
    /// Send `baggage`.
    pub baggage: bool,
}

/// Decides per destination host which propagation headers go out (docs/propagation-rules.md#trust).
///
/// Host patterns are exact names or IP literals (`localhost`, `10.0.0.5`, `api.example.com`) or a
/// leading wildcard for subdomains (`*.example.com`), compared case-insensitively.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutboundPolicy {
    trace_context: HostSet,
    baggage: HostSet,
}

impl Default for OutboundPolicy {
    fn default() -> Self {
        Self::send_everywhere()
    }
}

impl OutboundPolicy {
    /// Send trace context and baggage to every host (the default, parity with NeMo Lens).
    pub fn send_everywhere() -> Self {
        OutboundPolicy {
            trace_context: HostSet::Any,
            baggage: HostSet::Any,
        }
    }

    /// Send trace context only to these hosts.
    pub fn trace_context_only_to<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.trace_context = HostSet::Only(
            hosts
                .into_iter()
                .map(|h| HostPattern::parse(h.as_ref()))
                .collect(),
        );
        self
    }

    /// Send baggage only to these hosts.
    pub fn baggage_only_to<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.baggage = HostSet::Only(
            hosts
                .into_iter()
                .map(|h| HostPattern::parse(h.as_ref()))
                .collect(),
        );
        self
    }

    /// Send baggage to no host.
    pub fn no_baggage(mut self) -> Self {
        self.baggage = HostSet::Only(Vec::new());
        self
    }

    /// The decision for one destination host.
    pub fn decide(&self, host: &str) -> OutboundDecision {
        OutboundDecision {
            trace_context: self.trace_context.contains(host),
            baggage: self.baggage.contains(host),
        }
    }

    /// Injects what the policy allows for `host`, with lens's process-wide propagator.
    pub fn inject(&self, cx: &Context, host: &str, injector: &mut dyn Injector) {
        self.inject_with(propagator(), cx, host, injector);
    }

    /// Injects what the policy allows for `host`.
    pub fn inject_with(
        &self,
        propagator: &W3cPropagator,
        cx: &Context,
        host: &str,
        injector: &mut dyn Injector,
    ) {
        let d = self.decide(host);
        if d.trace_context || d.baggage {
            propagator.inject_parts(cx, injector, d.trace_context, d.baggage);
        }
    }
}
