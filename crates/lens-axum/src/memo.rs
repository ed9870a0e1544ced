//! Attribute values shared between requests: the route, the server address, the client address
//! and the user agent repeat from request to request, so each
//! [`ServerService`](crate::ServerService) keeps the first one it sees (an `Arc<str>`, freed with
//! the service: nothing a peer sends outlives it) and hands out values that refer to it instead
//! of allocating (and, in the batch span processor's thread, freeing) a new string per request.
//!
//! One value per kind, set once: memory stays bounded whatever the requests carry, a different
//! value is allocated per request as before, and no lock is taken per request (`OnceLock::get`
//! is an atomic load once the value is set).

use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, OnceLock};

use http::HeaderValue;
use lens_span::httpconv::{RepeatedText, split_host_port};
use opentelemetry::Value;

/// The first route, server address, client address and user agent a service saw.
#[derive(Debug, Default)]
pub(crate) struct Memos {
    route: RepeatedText,
    server: OnceLock<Server>,
    peer: OnceLock<(IpAddr, Arc<str>)>,
    user_agent: OnceLock<Arc<str>>,
}

/// The first authority (`host[:port]`) a service saw, split once: the same authority again costs
/// a comparison instead of the scans and the port parse.
#[derive(Debug)]
struct Server {
    authority: Box<str>,
    split: Option<(Arc<str>, Option<u16>)>,
}

impl Memos {
    /// `http.route`.
    pub(crate) fn route(&self, route: &str) -> Value {
        self.route.value(route)
    }

    /// `server.address` and the port of `authority` (`host[:port]`, see [`split_host_port`]),
    /// when it is visible ASCII (what `HeaderValue::to_str` accepts). The first one is kept: the
    /// same bytes again are that host and port, without checking or splitting them once more.
    pub(crate) fn server(&self, authority: &[u8]) -> Option<(Value, Option<u16>)> {
        if let Some(first) = self.server.get()
            && first.authority.as_bytes() == authority
        {
            return first
                .split
                .as_ref()
                .map(|(host, port)| (Value::from(Arc::clone(host)), *port));
        }
        let text = visible_ascii(authority)?;
        let first = self.server.get_or_init(|| Server {
            authority: text.into(),
            split: split_host_port(text).map(|(host, port)| (Arc::from(host), port)),
        });
        if *first.authority == *text {
            return first
                .split
                .as_ref()
                .map(|(host, port)| (Value::from(Arc::clone(host)), *port));
        }
        let (host, port) = split_host_port(text)?;
        Some((Value::from(host.to_owned()), port))
    }

    /// `user_agent.original`, when the header is visible ASCII. The first one is kept: the same
    /// bytes again are that text, without checking them once more.
    pub(crate) fn user_agent(&self, header: &HeaderValue) -> Option<Value> {
        if let Some(kept) = self.user_agent.get()
            && kept.as_bytes() == header.as_bytes()
        {
            return Some(Value::from(Arc::clone(kept)));
        }
        let text = header.to_str().ok()?;
        let kept = self.user_agent.get_or_init(|| Arc::from(text));
        Some(if **kept == *text {
            Value::from(Arc::clone(kept))
        } else {
            Value::from(text.to_owned())
        })
    }

    /// `client.address`: the text of `ip` (an IPv4-mapped IPv6 address as IPv4).
    pub(crate) fn peer(&self, ip: IpAddr) -> Value {
        let (first_ip, first) = self.peer.get_or_init(|| (ip, Arc::from(ip_string(ip))));
        if *first_ip == ip {
            Value::from(Arc::clone(first))
        } else {
            Value::from(ip_string(ip))
        }
    }
}

/// `bytes` as text when every byte is visible ASCII or a tab, as `HeaderValue::to_str` requires.
fn visible_ascii(bytes: &[u8]) -> Option<&str> {
    if bytes
        .iter()
        .all(|&b| b == b'\t' || (b' '..=b'~').contains(&b))
    {
        std::str::from_utf8(bytes).ok()
    } else {
        None
    }
}

pub(crate) fn ip_string(ip: IpAddr) -> String {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => ipv4_string(v4),
            None => v6.to_string(),
        },
        IpAddr::V4(v4) => ipv4_string(v4),
    }
}

/// Dotted-quad text of `ip`, without the formatting machinery (`to_string` costs about as much
/// as the rest of the request attributes together).
fn ipv4_string(ip: Ipv4Addr) -> String {
    // Into a stack buffer first, so that the String is allocated once at its exact length
    // (the attribute value keeps it as a boxed str: no reallocation to shrink it).
    let mut buf = [0u8; 15];
    let mut n = 0;
    for (i, octet) in ip.octets().into_iter().enumerate() {
        if i > 0 {
            buf[n] = b'.';
            n += 1;
        }
        if octet >= 100 {
            buf[n] = b'0' + octet / 100;
            n += 1;
        }
        if octet >= 10 {
            buf[n] = b'0' + octet / 10 % 10;
            n += 1;
        }
        buf[n] = b'0' + octet % 10;
        n += 1;
    }
    std::str::from_utf8(&buf[..n])
        .map(str::to_owned)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::panic, clippy::unwrap_used)]
    use super::{Memos, ip_string};
    use http::HeaderValue;
    use opentelemetry::Value;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    #[test]
    fn ip_text_is_std_display_for_v4_and_v4_mapped() {
        for ip in [
            Ipv4Addr::new(0, 0, 0, 0),
            Ipv4Addr::new(127, 0, 0, 1),
            Ipv4Addr::new(10, 9, 99, 100),
            Ipv4Addr::new(255, 255, 255, 255),
            Ipv4Addr::new(192, 168, 1, 20),
        ] {
            assert_eq!(ip_string(IpAddr::V4(ip)), ip.to_string());
            assert_eq!(ip_string(IpAddr::V6(ip.to_ipv6_mapped())), ip.to_string());
        }
        assert_eq!(ip_string(IpAddr::V6(Ipv6Addr::LOCALHOST)), "::1");
    }

    fn text(v: &Value) -> &str {
        match v {
            Value::String(s) => s.as_str(),
            _ => panic!("not a string: {v:?}"),
        }
    }

    /// Each kind keeps its own first value; the client address is shared per address, and any
    /// value comes back as its own text.
    #[test]
    fn each_kind_keeps_its_own_first_value() {
        let memos = Memos::default();
        let server = |authority: &str| {
            let (host, port) = memos.server(authority.as_bytes()).unwrap();
            (text(&host).to_owned(), port)
        };
        assert_eq!(server("a.example:81"), ("a.example".to_owned(), Some(81)));
        assert_eq!(server("a.example:81"), ("a.example".to_owned(), Some(81)));
        assert_eq!(server("b.example"), ("b.example".to_owned(), None));
        assert_eq!(server("[::1]:9"), ("::1".to_owned(), Some(9)));
        assert!(memos.server(b"").is_none());
        assert!(memos.server(b"caf\xe9:80").is_none(), "not visible ASCII");
        assert!(memos.server(b"a\x01b:80").is_none(), "a control byte");
        assert_eq!(text(&memos.route("/users/{id}")), "/users/{id}");
        let ua = |bytes: &'static [u8]| memos.user_agent(&HeaderValue::from_bytes(bytes).unwrap());
        assert_eq!(text(&ua(b"ua/1").unwrap()), "ua/1");
        assert_eq!(text(&ua(b"ua/1").unwrap()), "ua/1");
        assert_eq!(text(&memos.route("/other")), "/other");
        assert_eq!(text(&ua(b"ua/2").unwrap()), "ua/2");
        assert!(ua(b"caf\xe9").is_none(), "not visible ASCII");

        let ptr = |v: &Value| match v {
            Value::String(s) => s.as_str().as_ptr(),
            _ => std::ptr::null(),
        };
        let p1 = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
        let p2 = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
        let first = memos.peer(p1);
        assert_eq!(text(&first), "10.0.0.1");
        assert_eq!(text(&memos.peer(p2)), "10.0.0.2");
        assert_eq!(
            ptr(&memos.peer(p1)),
            ptr(&first),
            "the first address is shared"
        );
    }
}
