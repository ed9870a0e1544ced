//! URL attributes: `url.full` with credentials redacted, `server.address`.

use std::borrow::Cow;

use lens_span::redact::{has_sensitive_value, push_redacted_query};
use reqwest::Url;

/// The host without IPv6 brackets.
pub(crate) fn server_address(url: &Url) -> Option<&str> {
    let host = url.host_str()?;
    Some(
        host.strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host),
    )
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
