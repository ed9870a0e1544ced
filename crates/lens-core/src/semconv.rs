//! Small pieces of the OpenTelemetry semantic conventions that every adapter needs.

use std::sync::{Arc, OnceLock};

use http::Method;
use opentelemetry::Value;

/// The `http.request.method` value of a method the HTTP semantic conventions know, as a
/// `&'static str` (no allocation per request); `None` for any other method, which the
/// conventions record as `_OTHER`.
///
/// ```
/// use lens_core::semconv::known_http_method;
///
/// assert_eq!(known_http_method(&http::Method::POST), Some("POST"));
/// assert_eq!(known_http_method(&http::Method::from_bytes(b"BREW").unwrap()), None);
/// ```
pub fn known_http_method(method: &Method) -> Option<&'static str> {
    Some(match method.as_str() {
        "GET" => "GET",
        "POST" => "POST",
        "PUT" => "PUT",
        "DELETE" => "DELETE",
        "HEAD" => "HEAD",
        "OPTIONS" => "OPTIONS",
        "PATCH" => "PATCH",
        "CONNECT" => "CONNECT",
        "TRACE" => "TRACE",
        _ => return None,
    })
}

/// An attribute value that usually repeats from request to request (a server address, a route,
/// a user agent): the first text seen is kept as a shared `Arc<str>`, and every later value
/// equal to it is a reference-counted copy of it instead of a new string. Spans are freed in
/// the batch span processor's thread, where each string a request allocated costs several
/// times its price (cross-thread frees bypass the allocator's per-thread cache).
///
/// One text, set once: memory stays bounded whatever the requests carry, other values are
/// allocated as usual, and no lock is taken once the first value is set (`OnceLock::get` is an
/// atomic load).
///
/// ```
/// use lens_core::semconv::RepeatedText;
/// use opentelemetry::Value;
///
/// let host = RepeatedText::default();
/// assert_eq!(host.value("a.example"), Value::from("a.example"));
/// assert_eq!(host.value("b.example"), Value::from("b.example"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct RepeatedText(OnceLock<Arc<str>>);

impl RepeatedText {
    /// `text` as an attribute value: shared with the first text seen when it is that one.
    pub fn value(&self, text: &str) -> Value {
        let first = self.0.get_or_init(|| Arc::from(text));
        if **first == *text {
            Value::from(Arc::clone(first))
        } else {
            Value::from(text.to_owned())
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::panic)]
    use super::RepeatedText;
    use opentelemetry::Value;

    fn text(value: &Value) -> &str {
        match value {
            Value::String(s) => s.as_str(),
            other => panic!("not a string: {other:?}"),
        }
    }

    /// The first text is shared by every value equal to it; other texts are their own.
    #[test]
    fn the_first_text_is_shared_and_others_are_their_own() {
        let memo = RepeatedText::default();
        let a = memo.value("a.example");
        let b = memo.value("b.example");
        let a2 = memo.value("a.example");
        assert_eq!(text(&a), "a.example");
        assert_eq!(text(&b), "b.example");
        assert_eq!(text(&a2).as_ptr(), text(&a).as_ptr());
        assert_ne!(text(&b).as_ptr(), text(&a).as_ptr());
        assert_eq!(text(&memo.value("b.example")), "b.example");
    }
}
