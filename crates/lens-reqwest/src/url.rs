//! URL attributes: `url.full` with credentials redacted, `server.address`.

use reqwest::Url;

/// Query parameters whose values never go into `url.full` (compared case-insensitively): the
/// semantic conventions' list plus common credential names.
const SENSITIVE_QUERY_KEYS: &[&str] = &[
    "awsaccesskeyid",
    "signature",
    "sig",
    "x-goog-signature",
    "x-goog-credential",
    "x-amz-signature",
    "x-amz-credential",
    "x-amz-security-token",
    "token",
    "access_token",
    "refresh_token",
    "id_token",
    "key",
    "api_key",
    "apikey",
    "api-key",
    "secret",
    "client_secret",
    "password",
    "passwd",
    "pwd",
    "auth",
    "authorization",
    "code",
];

const REDACTED: &str = "REDACTED";

fn is_sensitive(key: &str) -> bool {
    SENSITIVE_QUERY_KEYS
        .iter()
        .any(|k| k.eq_ignore_ascii_case(key))
}

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
/// parameters replaced by `REDACTED`; otherwise the URL as it is sent.
pub fn redacted_url(url: &Url) -> String {
    let userinfo = !url.username().is_empty() || url.password().is_some();
    let query = url.query();
    let sensitive_query = query.is_some_and(|q| {
        q.split('&')
            .any(|pair| is_sensitive(pair.split_once('=').map_or(pair, |(k, _)| k)))
    });
    if !userinfo && !sensitive_query {
        return url.as_str().to_owned();
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
        for (i, pair) in q.split('&').enumerate() {
            if i > 0 {
                out.push('&');
            }
            match pair.split_once('=') {
                Some((k, _)) if is_sensitive(k) => {
                    out.push_str(k);
                    out.push('=');
                    out.push_str(REDACTED);
                }
                _ => out.push_str(pair),
            }
        }
    }
    if let Some(fragment) = url.fragment() {
        out.push('#');
        out.push_str(fragment);
    }
    out
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
