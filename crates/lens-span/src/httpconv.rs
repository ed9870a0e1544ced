//! The HTTP semantic-convention pieces every adapter writes: the method, the response status
//! with its classification, and `server.address` / `server.port` from an authority (HTTP and
//! gRPC alike: one rule for IPv6 brackets).

use http::{Method, StatusCode};
use lens_core::semconv::known_http_method;
use opentelemetry::KeyValue;
use opentelemetry_semantic_conventions::attribute::{
    HTTP_REQUEST_METHOD, HTTP_REQUEST_METHOD_ORIGINAL, HTTP_RESPONSE_STATUS_CODE,
};

use crate::classify::Classify;
use crate::lifecycle::LiveSpan;

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

/// Sets `http.response.status_code` on `span` and records what `classifier` makes of `status`.
pub fn record_status<C: Classify<StatusCode>>(span: &LiveSpan, status: StatusCode, classifier: &C) {
    span.span().set_attribute(KeyValue::new(
        HTTP_RESPONSE_STATUS_CODE,
        i64::from(status.as_u16()),
    ));
    span.record(classifier.classify(&status));
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
    use super::split_host_port;

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
