//! Credentials kept out of span attributes: the values of sensitive query parameters
//! (`url.full` on client spans, `url.query` on server spans).
//!
//! ```
//! use lens_span::redact::redacted_query;
//!
//! assert_eq!(redacted_query("page=2&token=abc"), "page=2&token=REDACTED");
//! assert_eq!(redacted_query("page=2"), "page=2"); // borrowed: nothing allocated
//! ```

use std::borrow::Cow;

/// Query parameters whose values never go into a span (compared case-insensitively): the
/// semantic conventions' list plus common credential names.
pub const SENSITIVE_QUERY_KEYS: &[&str] = &[
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

/// What a redacted value reads.
pub const REDACTED: &str = "REDACTED";

/// Whether the query parameter `key` holds a credential.
pub fn is_sensitive_key(key: &str) -> bool {
    SENSITIVE_QUERY_KEYS
        .iter()
        .any(|k| k.eq_ignore_ascii_case(key))
}

/// Whether `query` (without the `?`) has a parameter whose value must be redacted.
pub fn has_sensitive_value(query: &str) -> bool {
    query.split('&').any(|pair| {
        pair.contains('=') && is_sensitive_key(pair.split_once('=').map_or(pair, |p| p.0))
    })
}

/// `query` with the value of every sensitive parameter replaced by `REDACTED`; borrowed when
/// there is none.
pub fn redacted_query(query: &str) -> Cow<'_, str> {
    if !has_sensitive_value(query) {
        return Cow::Borrowed(query);
    }
    let mut out = String::with_capacity(query.len() + 8);
    push_redacted_query(&mut out, query);
    Cow::Owned(out)
}

/// Appends `query` to `out` with the value of every sensitive parameter replaced.
pub fn push_redacted_query(out: &mut String, query: &str) {
    for (i, pair) in query.split('&').enumerate() {
        if i > 0 {
            out.push('&');
        }
        match pair.split_once('=') {
            Some((k, _)) if is_sensitive_key(k) => {
                out.push_str(k);
                out.push('=');
                out.push_str(REDACTED);
            }
            _ => out.push_str(pair),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sensitive_values_are_redacted_in_place() {
        assert_eq!(
            redacted_query("x=1&Token=abc&sig=zz&keep=2&API_KEY=k"),
            "x=1&Token=REDACTED&sig=REDACTED&keep=2&API_KEY=REDACTED"
        );
        assert!(matches!(redacted_query("a=1&b"), Cow::Borrowed("a=1&b")));
        // A key without a value has nothing to hide.
        assert!(matches!(redacted_query("token"), Cow::Borrowed("token")));
    }
}
