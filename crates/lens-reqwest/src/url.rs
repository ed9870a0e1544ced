//! URL attributes: `url.full` with credentials redacted, `server.address`.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use lens_span::httpconv::{RepeatedText, split_host_port};
use lens_span::redact::{has_sensitive_value, push_redacted_query};
use opentelemetry::Value;
use reqwest::Url;

/// The attribute values of a request's URL, and the host the outbound policy decides on.
pub(crate) struct Target<'a> {
    /// The host without IPv6 brackets.
    pub(crate) host: Option<&'a str>,
    /// `url.full`, redacted.
    pub(crate) url_full: Value,
    /// `server.address`.
    pub(crate) server_address: Option<Value>,
    /// `server.port`.
    pub(crate) port: Option<u16>,
}

/// The URL values a middleware shares between requests. The first URL it sends with nothing in
/// it to redact is kept with its host and port: a client that calls one endpoint again and again
/// (an inference service, a parameter server) pays one comparison for them, and allocates no
/// string the export thread would free. What is kept is freed with the middleware. Other URLs are read and redacted per request; their host
/// still shares the first host seen. One value of each, set once: bounded memory, no lock per
/// request.
#[derive(Clone, Debug, Default)]
pub(crate) struct UrlMemo {
    first: OnceLock<FirstUrl>,
    host: RepeatedText,
}

#[derive(Clone, Debug)]
struct FirstUrl {
    url: Arc<str>,
    host: Option<Arc<str>>,
    port: Option<u16>,
}

impl FirstUrl {
    fn target(&self) -> Target<'_> {
        Target {
            host: self.host.as_deref(),
            url_full: Value::from(Arc::clone(&self.url)),
            server_address: self.host.as_ref().map(|host| Value::from(Arc::clone(host))),
            port: self.port,
        }
    }
}

impl UrlMemo {
    /// The values of `url`.
    pub(crate) fn target<'a>(&'a self, url: &'a Url) -> Target<'a> {
        if let Some(first) = self.first.get()
            && *first.url == *url.as_str()
        {
            return first.target();
        }
        let host = server_address(url);
        let port = url.port_or_known_default();
        let url_full = match url_full(url) {
            Cow::Borrowed(text) => {
                let first = self.first.get_or_init(|| FirstUrl {
                    url: Arc::from(text),
                    host: host.map(Arc::from),
                    port,
                });
                if *first.url == *text {
                    return first.target();
                }
                Value::from(text.to_owned())
            }
            Cow::Owned(redacted) => Value::from(redacted),
        };
        Target {
            host,
            url_full,
            server_address: host.map(|h| self.host.value(h)),
            port,
        }
    }
}

/// The host without IPv6 brackets (lens-span's [`split_host_port`], the rule of every adapter).
pub(crate) fn server_address(url: &Url) -> Option<&str> {
    split_host_port(url.host_str()?).map(|(host, _)| host)
}

/// `url.full`: user name and password replaced by `REDACTED`, values of sensitive query
/// parameters replaced by `REDACTED` (lens-span's [`redact`](lens_span::redact), as servers'
/// `url.query`); otherwise the URL as it is sent.
pub fn redacted_url(url: &Url) -> String {
    url_full(url).into_owned()
}

/// [`redacted_url`], borrowing the URL's own text when nothing in it is redacted (the common
/// case: the middleware then shares one string between requests to the same URL).
pub(crate) fn url_full(url: &Url) -> Cow<'_, str> {
    let userinfo = !url.username().is_empty() || url.password().is_some();
    let query = url.query();
    let sensitive_query = query.is_some_and(has_sensitive_value);
    if !userinfo && !sensitive_query {
        return Cow::Borrowed(url.as_str());
    }
    let mut out = String::with_capacity(url.as_str().len() + 16);
    out.push_str(url.scheme());
    out.push_str("://");
    if userinfo {
        out.push_str("REDACTED:REDACTED@");
    }
    if let Some(host) = url.host_str() {
        out.push_str(host);
    }
    if let Some(port) = url.port() {
        out.push(':');
        out.push_str(&port.to_string());
    }
    out.push_str(url.path());
    if let Some(q) = query {
        out.push('?');
        push_redacted_query(&mut out, q);
    }
    if let Some(fragment) = url.fragment() {
        out.push('#');
        out.push_str(fragment);
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn r(s: &str) -> String {
        redacted_url(&Url::parse(s).unwrap())
    }

    /// The first URL with nothing to redact is kept with its host and port; any other URL gives
    /// its own values, redacted where it must be.
    #[test]
    fn the_first_plain_url_is_kept_with_its_host_and_port() {
        let memo = UrlMemo::default();
        let text = |v: &Value| v.as_str().into_owned();
        let check = |url: &str, full: &str, host: Option<&str>, port: Option<u16>| {
            let url = Url::parse(url).unwrap();
            let t = memo.target(&url);
            assert_eq!(text(&t.url_full), full);
            assert_eq!(t.host, host);
            assert_eq!(t.server_address.as_ref().map(text).as_deref(), host);
            assert_eq!(t.port, port);
        };
        for _ in 0..2 {
            check(
                "http://a.example:8080/v1/x",
                "http://a.example:8080/v1/x",
                Some("a.example"),
                Some(8080),
            );
        }
        check(
            "https://a.example/v1/y",
            "https://a.example/v1/y",
            Some("a.example"),
            Some(443),
        );
        check("http://[::1]:9/p", "http://[::1]:9/p", Some("::1"), Some(9));
        check(
            "http://u:p@a.example:8080/v1/x?token=s",
            "http://REDACTED:REDACTED@a.example:8080/v1/x?token=REDACTED",
            Some("a.example"),
            Some(8080),
        );
        check(
            "http://a.example:8080/v1/x",
            "http://a.example:8080/v1/x",
            Some("a.example"),
            Some(8080),
        );
    }

    #[test]
    fn plain_urls_are_kept() {
        assert_eq!(
            r("http://a.example:8080/p?q=1"),
            "http://a.example:8080/p?q=1"
        );
    }

    #[test]
    fn userinfo_is_redacted() {
        assert_eq!(
            r("https://bob:hunter2@a.example/p"),
            "https://REDACTED:REDACTED@a.example/p"
        );
        assert_eq!(
            r("https://bob@a.example/"),
            "https://REDACTED:REDACTED@a.example/"
        );
    }

    #[test]
    fn sensitive_query_values_are_redacted() {
        assert_eq!(
            r("http://a.example/p?x=1&Token=abc&sig=zz&keep=2&API_KEY=k#f"),
            "http://a.example/p?x=1&Token=REDACTED&sig=REDACTED&keep=2&API_KEY=REDACTED#f"
        );
        assert_eq!(r("http://[::1]:9/?key=s"), "http://[::1]:9/?key=REDACTED");
    }
}
