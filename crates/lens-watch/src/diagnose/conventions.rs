//! Reading the conventions' attributes: what identifies a request on both sides of a hop
//! (HTTP method and path, or the RPC method) and the addresses each side names, in the stable
//! and the older OpenTelemetry conventions, as real exporters write them.

use std::net::IpAddr;
use std::sync::Arc;

use super::new_root::NewRootCause;
use crate::model::{Span, SpanId, TraceId, Value};

/// What identifies a request on both sides of the wire.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum HopKey {
    /// HTTP method (upper case) and path.
    Http(String, String),
    /// The fully-qualified gRPC method, `pkg.Service/Method`.
    Rpc(String),
    /// A queue's destination (subject, topic, queue name).
    Queue(String),
}

/// One side of a hop waiting in the index.
#[derive(Clone, Debug)]
pub(super) struct Candidate {
    pub(super) trace_id: TraceId,
    pub(super) span_id: SpanId,
    pub(super) service: Arc<str>,
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) address: Address,
    pub(super) cause: Option<NewRootCause>,
    /// What a messaging span recorded about its message (queues.rs); `None` for a request.
    pub(super) message: Option<Box<super::message::Message>>,
}

/// A host as one side of a hop names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Host {
    /// An IP address (IPv4-mapped IPv6 as IPv4).
    Ip(IpAddr),
    /// A name, in lower case, without a trailing dot.
    Name(Box<str>),
}

impl Host {
    /// From an attribute's host (brackets around IPv6 allowed); `None` for an empty one or an
    /// unspecified address (`0.0.0.0`, `::`: a server bound to every interface says nothing).
    pub(super) fn parse(host: &str) -> Option<Self> {
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        match host.parse::<IpAddr>() {
            Ok(ip) if ip.is_unspecified() => None,
            Ok(ip) => Some(Host::Ip(ip.to_canonical())),
            Err(_) => {
                let name = host.trim_end_matches('.');
                (!name.is_empty()).then(|| Host::Name(name.to_ascii_lowercase().into()))
            }
        }
    }

    pub(super) fn loopback(&self) -> bool {
        match self {
            Host::Ip(ip) => ip.is_loopback(),
            Host::Name(name) => &**name == "localhost",
        }
    }

    /// The same host: equal, or both loopback (`localhost`, `127.0.0.1`, `::1`).
    pub(super) fn same(&self, other: &Host) -> bool {
        self == other || (self.loopback() && other.loopback())
    }

    /// Whether a different `other` says this is another host: both IP addresses or both names
    /// (a name and an address cannot be compared without resolving the name).
    pub(super) fn comparable(&self, other: &Host) -> bool {
        matches!(self, Host::Ip(_)) == matches!(other, Host::Ip(_))
    }
}

/// Where one side of a hop says the request went: a client the address it called; a server
/// every one it names (the Host header, the socket it listens on, its configured name), each
/// host marked whether it is the address the client used, and which instance it is. With the
/// request's query, what pairs a hop whose addresses differ (behind a proxy or load balancer).
#[derive(Clone, Debug, Default)]
pub(super) struct Address {
    /// (host, the address the client used).
    pub(super) hosts: Vec<(Host, bool)>,
    pub(super) ports: Vec<u16>,
    /// The request's query string: the client's from its URL, the server's from `url.query`
    /// (or its target or URL); `None` where the side records none.
    pub(super) query: Option<Box<str>>,
    /// The instance of a server that answered, where its resource names one
    /// (`Resource::instance`); the name alone is held, not the resource.
    pub(super) instance: Option<Arc<str>>,
}

impl Address {
    pub(super) fn host(&mut self, host: &str, client_s: bool) {
        if let Some(host) = Host::parse(host)
            && !self.hosts.iter().any(|(h, t)| *h == host && *t == client_s)
        {
            self.hosts.push((host, client_s));
        }
    }

    pub(super) fn port(&mut self, port: Option<u16>) {
        if let Some(port) = port.filter(|p| *p != 0)
            && !self.ports.contains(&port)
        {
            self.ports.push(port);
        }
    }

    /// A `host[:port]` value (`server.address`, `http.host`, `http.server_name`).
    pub(super) fn authority(&mut self, value: &str, client_s: bool) {
        let (host, port) = split_host_port(value);
        self.host(host, client_s);
        self.port(port);
    }

    /// Whether both sides' queries can be the same request's: one side records none, or the
    /// same parameters in the same order with the same values, a value redacted on either side
    /// (`REDACTED`, as the conventions and lens write a credential) matching any; an empty
    /// parameter (a query held to [`MAX_QUERY`]) matches the rest.
    pub(super) fn same_query(&self, server: &Address) -> bool {
        let (Some(a), Some(b)) = (&self.query, &server.query) else {
            return true;
        };
        let (mut a, mut b) = (a.split('&'), b.split('&'));
        loop {
            match (a.next(), b.next()) {
                (None, None) => return true,
                (Some(""), _) | (_, Some("")) => return true,
                (Some(x), Some(y)) => {
                    let (kx, vx) = x.split_once('=').unwrap_or((x, ""));
                    let (ky, vy) = y.split_once('=').unwrap_or((y, ""));
                    if kx != ky || (vx != vy && vx != "REDACTED" && vy != "REDACTED") {
                        return false;
                    }
                }
                _ => return false,
            }
        }
    }

    /// Whether a server reporting `server` can be the one a client reporting `self` called:
    /// the client's port is one the server reports (when both report one); the client's host
    /// is one the server names, or the server names no host it could be told apart from (only
    /// a configured name, or a name where the client used an IP address, or the reverse).
    pub(super) fn reached(&self, server: &Address) -> bool {
        if let Some(port) = self.ports.first()
            && !server.ports.is_empty()
            && !server.ports.contains(port)
        {
            return false;
        }
        let Some((host, _)) = self.hosts.first() else {
            return true;
        };
        server.hosts.iter().any(|(h, _)| h.same(host))
            || !server
                .hosts
                .iter()
                .any(|(h, client_s)| *client_s && h.comparable(host))
    }
}
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    Client,
    Server,
}

pub(super) fn text<'a>(span: &'a Span, keys: &[&str]) -> Option<&'a str> {
    keys.iter()
        .find_map(|k| span.attribute(k).and_then(Value::as_str))
        .filter(|s| !s.is_empty())
}

pub(super) fn int(span: &Span, keys: &[&str]) -> Option<u16> {
    keys.iter().find_map(|k| match span.attribute(k)? {
        Value::Int(i) => u16::try_from(*i).ok(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    })
}

/// The most of a query a candidate holds (a hostile query cannot grow the index).
pub(super) const MAX_QUERY: usize = 256;

/// A query string without any fragment; `None` for an empty one. A longer one than
/// [`MAX_QUERY`] is held to its last whole parameter within the bound, then `&`: an empty last
/// parameter says the rest is unknown ([`Address::same_query`]).
pub(super) fn query(query: &str) -> Option<Box<str>> {
    let query = query.split('#').next().unwrap_or(query);
    if query.is_empty() {
        return None;
    }
    if query.len() <= MAX_QUERY {
        return Some(query.into());
    }
    let cut = query.as_bytes()[..MAX_QUERY]
        .iter()
        .rposition(|b| *b == b'&')
        .map_or(0, |at| at + 1);
    Some(format!("{}&", &query[..cut]).into())
}

/// The query of a URL or a request target (after `?`, before `#`).
pub(super) fn query_of(url_or_target: &str) -> Option<Box<str>> {
    let (_, rest) = url_or_target.split_once('?')?;
    query(rest)
}

/// `scheme://host[:port]/path?query` to (host, port, path); the default port for the scheme.
pub(crate) fn split_url(url: &str) -> Option<(String, Option<u16>, String)> {
    let (scheme, rest) = url.split_once("://")?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port) = split_host_port(authority);
    let port = port.or(match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    });
    let path = tail.split(['?', '#']).next().unwrap_or("");
    let path = if path.is_empty() { "/" } else { path };
    Some((host.to_ascii_lowercase(), port, path.to_owned()))
}

/// `host[:port]` (with `[v6]`, and any `user@` in front) to its parts; `("", None)` for what is
/// no authority. The rule of lens-span's `httpconv::split_host_port`, which every lens adapter
/// writes `server.address` and `server.port` with (lens-watch depends on no lens crate: a test
/// runs both on the same inputs and requires the same answers).
pub(super) fn split_host_port(authority: &str) -> (&str, Option<u16>) {
    host_port(authority).unwrap_or(("", None))
}

fn host_port(authority: &str) -> Option<(&str, Option<u16>)> {
    let authority = match authority.bytes().rposition(|b| b == b'@') {
        Some(at) => authority.get(at + 1..)?,
        None => authority,
    };
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after {
            "" => None,
            _ => after.strip_prefix(':')?.parse().ok(),
        };
        return (!host.is_empty()).then_some((host, port));
    }
    let (host, port) = match authority.bytes().rposition(|b| b == b':') {
        Some(colon) => (
            authority.get(..colon)?,
            authority.get(colon + 1..)?.parse().ok(),
        ),
        None => (authority, None),
    };
    (!host.is_empty() && !host.contains(':')).then_some((host, port))
}

/// The request a span stands for, with the addresses it names; `None` when its attributes
/// cannot identify one (then the lost-hop rule says nothing about it).
///
/// A client's address is the one it called: `server.address`/`server.port` (stable), else the
/// host and port of `url.full`/`http.url`, else `net.peer.name`/`net.peer.port` (older gRPC).
/// A server's are every one it names. The address the client used: `server.address` and
/// `server.port` (stable: from the Host header or `:authority`), `http.host` (the Host header
/// in the older conventions; the socket's address in Python's ASGI), the host of
/// `url.full`/`http.url`, and `http.server_name` when it holds a port (ASGI's Host header).
/// Ports only: `net.host.port`. Neither: `http.server_name` without a port (WSGI's configured
/// server name) and `net.host.name` (a server's own name for itself), whose hosts can match a
/// client's but never tell it apart. A server's `net.peer.*` is its caller, never read.
pub(super) fn candidate(
    span: &Span,
    cause: Option<NewRootCause>,
    role: Role,
) -> Option<(HopKey, Candidate)> {
    let mut address = Address::default();
    let key = if let Some(method) = text(span, &["rpc.method"])
        && (span.attribute("rpc.system").is_some() || span.attribute("rpc.system.name").is_some())
    {
        let full = match text(span, &["rpc.service"]) {
            Some(service) if !method.contains('/') => format!("{service}/{method}"),
            _ => method.trim_start_matches('/').to_owned(),
        };
        match role {
            Role::Client => {
                let (host, port) = match text(span, &["server.address", "net.peer.name"]) {
                    Some(value) => split_host_port(value),
                    None => ("", None),
                };
                address.host(host, true);
                address.port(int(span, &["server.port", "net.peer.port"]).or(port));
            }
            Role::Server => {
                server_authorities(span, &mut address);
                if let Some(name) = text(span, &["net.host.name"]) {
                    address.host(name, false);
                }
            }
        }
        HopKey::Rpc(full)
    } else {
        let method = text(span, &["http.request.method", "http.method"])?.to_ascii_uppercase();
        let full = text(span, &["url.full", "http.url"]);
        let url = full.and_then(split_url);
        match role {
            Role::Client => {
                address.query = full.and_then(query_of);
                let (url_host, url_port, path) = url?;
                // The stable client attributes, where the URL did not say.
                let (host, port) = match text(span, &["server.address"]) {
                    Some(value) => split_host_port(value),
                    None => (url_host.as_str(), None),
                };
                address.host(host, true);
                address.port(int(span, &["server.port"]).or(port).or(url_port));
                HopKey::Http(method, path)
            }
            Role::Server => {
                let target = text(span, &["url.path", "http.target"]);
                address.query = match text(span, &["url.query"]) {
                    Some(value) => query(value),
                    None => target.or(full).and_then(query_of),
                };
                let path = match url {
                    Some((host, port, path)) => {
                        address.host(&host, true);
                        address.port(port);
                        path
                    }
                    None => {
                        let path = target?;
                        path.split(['?', '#']).next().unwrap_or(path).to_owned()
                    }
                };
                server_authorities(span, &mut address);
                if let Some(value) = text(span, &["http.host"]) {
                    address.authority(value, true);
                }
                if let Some(value) = text(span, &["http.server_name"]) {
                    let (host, port) = split_host_port(value);
                    address.host(host, port.is_some());
                    address.port(port);
                }
                HopKey::Http(method, path)
            }
        }
    };
    if role == Role::Server {
        address.instance = span.resource.instance().map(Arc::from);
    }
    Some((
        key,
        Candidate {
            trace_id: span.trace_id,
            span_id: span.span_id,
            service: Arc::clone(&span.resource.service),
            start: span.start_unix_nano,
            end: span.end_unix_nano,
            address,
            cause,
            message: None,
        },
    ))
}

/// A server's `server.address`/`server.port` (a port inside the address too) and
/// `net.host.port`.
pub(super) fn server_authorities(span: &Span, address: &mut Address) {
    if let Some(value) = text(span, &["server.address"]) {
        address.authority(value, true);
    }
    address.port(int(span, &["server.port"]));
    address.port(int(span, &["net.host.port"]));
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use proptest::prelude::*;

    /// What lens-span's adapters write as `server.address`/`server.port`, the doctor reads the
    /// same way.
    fn same_as_lens_span(authority: &str) {
        let span = lens_span::httpconv::split_host_port(authority).unwrap_or(("", None));
        assert_eq!(super::split_host_port(authority), span, "{authority:?}");
    }

    #[test]
    fn the_doctor_splits_authorities_as_lens_span_writes_them() {
        for authority in [
            "api.example:8443",
            "api.example",
            "[::1]:50051",
            "[::1]",
            "[::1",
            "[::1]x",
            "::1",
            "user@h:80",
            "a@b@h:1",
            "h:99999",
            "h:",
            ":80",
            "",
            "[]:1",
            "127.0.0.1:8000",
        ] {
            same_as_lens_span(authority);
        }
    }

    proptest! {
        #[test]
        fn any_text_splits_the_same(authority in "[a-z0-9:@\\[\\].]{0,24}") {
            same_as_lens_span(&authority);
        }
    }
}
