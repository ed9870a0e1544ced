//! The HTTP semantic-convention pieces every adapter writes: the method, the response status
//! with its classification, and `server.address` / `server.port` from an authority (HTTP and
//! gRPC alike: one rule for IPv6 brackets).

use std::sync::{Arc, OnceLock};

use http::{Method, StatusCode};
use opentelemetry::{KeyValue, Value};
use opentelemetry_semantic_conventions::attribute::{
    HTTP_REQUEST_METHOD, HTTP_REQUEST_METHOD_ORIGINAL, HTTP_RESPONSE_STATUS_CODE,
};

/// The `http.request.method` value of a method the HTTP semantic conventions know, as a
/// `&'static str` (no allocation per request); `None` for any other method, which the
/// conventions record as `_OTHER`.
///
/// ```
/// use lens_span::httpconv::known_http_method;
///
/// assert_eq!(known_http_method(&http::Method::POST), Some("POST"));
/// assert_eq!(known_http_method(&http::Method::from_bytes(b"BREW").unwrap()), None);
/// ```
pub fn known_http_method(method: &Method) -> Option<&'static str> {
    // `Method` equality on the standard methods compares a tag, where a match on `as_str()`
    // compares strings (this runs once or twice per request in every HTTP adapter).
    static KNOWN: [(Method, &str); 9] = [
        (Method::GET, "GET"),
        (Method::POST, "POST"),
        (Method::PUT, "PUT"),
        (Method::DELETE, "DELETE"),
        (Method::HEAD, "HEAD"),
        (Method::OPTIONS, "OPTIONS"),
        (Method::PATCH, "PATCH"),
        (Method::CONNECT, "CONNECT"),
        (Method::TRACE, "TRACE"),
    ];
    KNOWN
        .iter()
        .find(|(known, _)| known == method)
        .map(|(_, name)| *name)
}

/// An attribute value that usually repeats from request to request (a server address, a
/// route): the first text seen is kept, and every later value equal to it shares it instead of
/// being a new string (spans are freed in the batch span processor's thread, where each string
/// a request allocated costs several times its price).
///
/// The text is kept in an `Arc<str>` owned by whoever holds the `RepeatedText` (a layer, a
/// middleware) and freed with it: nothing a peer sends outlives the layer. One text, set once:
/// memory stays bounded whatever the requests carry, other values are allocated as usual, and
/// no lock is taken once the first value is set (`OnceLock::get` is an atomic load).
///
/// ```
/// use lens_span::httpconv::RepeatedText;
/// use opentelemetry::Value;
///
/// let host = RepeatedText::default();
/// assert_eq!(host.value("a.example"), Value::from("a.example"));
/// assert_eq!(host.value("b.example"), Value::from("b.example"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct RepeatedText(OnceLock<Arc<str>>);

impl RepeatedText {
    /// `text` as an attribute value: the kept text when it is that one.
    pub fn value(&self, text: &str) -> Value {
        let kept = self.0.get_or_init(|| Arc::from(text));
        if **kept == *text {
            Value::from(Arc::clone(kept))
        } else {
            Value::from(text.to_owned())
        }
    }
}

/// Pushes `http.request.method` (and `http.request.method_original` for a method the
/// conventions do not know, recorded as `_OTHER`); returns the known method's name.
///
/// ```
/// let mut attributes = Vec::new();
/// assert_eq!(lens_span::httpconv::push_method(&mut attributes, &http::Method::GET), Some("GET"));
/// assert_eq!(attributes[0].value.as_str(), "GET");
/// ```
pub fn push_method(attributes: &mut Vec<KeyValue>, method: &Method) -> Option<&'static str> {
    let known = known_http_method(method);
    match known {
        Some(m) => attributes.push(KeyValue::new(HTTP_REQUEST_METHOD, m)),
        None => {
            attributes.push(KeyValue::new(HTTP_REQUEST_METHOD, "_OTHER"));
            attributes.push(KeyValue::new(
                HTTP_REQUEST_METHOD_ORIGINAL,
                method.as_str().to_owned(),
            ));
        }
    }
    known
}

/// The `http.response.status_code` attribute of `status`.
pub fn status_code(status: StatusCode) -> KeyValue {
    KeyValue::new(HTTP_RESPONSE_STATUS_CODE, i64::from(status.as_u16()))
}

/// The host and the port of an authority (`host`, `host:port`, `[v6]:port`, with or without
/// `user@` in front): the `server.address` and `server.port` of every adapter. The host of an
/// IPv6 literal is written without its brackets (`::1`, as the semantic conventions and
/// `IpAddr`'s text have it). A port that is not a number in 0..=65535 is no port.
///
/// `None` for what is no authority: empty, an empty host, an unclosed `[`, text after `]` that
/// is not `:port`, or an IPv6 address without brackets.
///
/// ```
/// use lens_span::httpconv::split_host_port;
///
/// assert_eq!(split_host_port("api.example:8443"), Some(("api.example", Some(8443))));
/// assert_eq!(split_host_port("[::1]:50051"), Some(("::1", Some(50051))));
/// assert_eq!(split_host_port("[::1"), None);
/// ```
pub fn split_host_port(authority: &str) -> Option<(&str, Option<u16>)> {
    // Backwards byte scans: on an authority's few bytes they cost a fraction of the `memrchr`
    // that `rsplit_once` sets up. `@`, `:` and `]` are ASCII, so the indices are char
    // boundaries.
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
    // A second `:`: an IPv6 address without its brackets, which no authority may be.
    (!host.is_empty() && !host.contains(':')).then_some((host, port))
}

#[cfg(test)]
mod tests {
    use super::{RepeatedText, known_http_method, split_host_port};
    use http::Method;
    use opentelemetry::Value;

    /// Every method the conventions know is its own name; any other (also one that differs only
    /// in case) is `None`.
    #[test]
    fn known_methods_by_name() {
        for name in [
            "GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "CONNECT", "TRACE",
        ] {
            let method = Method::from_bytes(name.as_bytes()).unwrap_or_default();
            assert_eq!(known_http_method(&method), Some(name));
        }
        for other in ["get", "Post", "BREW", "PROPFIND", "GETS"] {
            let method = Method::from_bytes(other.as_bytes()).unwrap_or_default();
            assert_eq!(known_http_method(&method), None, "{other}");
        }
    }

    fn text(value: &Value) -> &str {
        let Value::String(s) = value else { return "" };
        s.as_str()
    }

    /// The first text is shared by every value equal to it; other texts are their own. The
    /// kept text is freed with its owner: the values still held keep it alive, no longer.
    #[test]
    fn the_first_text_is_shared_and_freed_with_its_owner() {
        let memo = RepeatedText::default();
        let a = memo.value("a.example");
        let b = memo.value("b.example");
        let a2 = memo.value("a.example");
        assert_eq!(text(&a), "a.example");
        assert_eq!(text(&b), "b.example");
        assert_eq!(text(&a2).as_ptr(), text(&a).as_ptr());
        assert_ne!(text(&b).as_ptr(), text(&a).as_ptr());
        assert_eq!(text(&memo.value("b.example")), "b.example");

        let kept = memo.0.get().map(std::sync::Arc::downgrade);
        drop((memo, a, a2));
        assert!(kept.is_some_and(|weak| weak.upgrade().is_none()));
    }

    #[test]
    fn names_and_ports() {
        assert_eq!(
            split_host_port("a.example:8080"),
            Some(("a.example", Some(8080)))
        );
        assert_eq!(split_host_port("a.example"), Some(("a.example", None)));
        assert_eq!(split_host_port("10.0.0.7:80"), Some(("10.0.0.7", Some(80))));
        assert_eq!(
            split_host_port("user:pw@a.example:81"),
            Some(("a.example", Some(81)))
        );
        assert_eq!(split_host_port("a.example:0"), Some(("a.example", Some(0))));
        assert_eq!(
            split_host_port("a.example:65535"),
            Some(("a.example", Some(65535)))
        );
        // Not a port: the host alone.
        for bad_port in [
            "a.example:x",
            "a.example:65536",
            "a.example:",
            "a.example:-1",
        ] {
            assert_eq!(
                split_host_port(bad_port),
                Some(("a.example", None)),
                "{bad_port}"
            );
        }
    }

    #[test]
    fn ipv6_literals_lose_their_brackets() {
        assert_eq!(split_host_port("[::1]:9"), Some(("::1", Some(9))));
        assert_eq!(split_host_port("[::1]"), Some(("::1", None)));
        assert_eq!(
            split_host_port("u@[2001:db8::7]:50051"),
            Some(("2001:db8::7", Some(50051)))
        );
        assert_eq!(split_host_port("[::1]:x"), Some(("::1", None)));
    }

    #[test]
    fn what_is_no_authority_has_no_host() {
        for bad in [
            "",
            ":80",
            "@",
            "u@",
            "[",
            "[::1",
            "[]",
            "[]:80",
            "[::1]80",
            "[::1]x:80",
            "::1",
            "::1:80",
            "2001:db8::7",
        ] {
            assert_eq!(split_host_port(bad), None, "{bad:?}");
        }
    }
}
