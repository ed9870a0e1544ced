//! Small pieces of the OpenTelemetry semantic conventions that every adapter needs.

use std::sync::atomic::{AtomicUsize, Ordering};
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

/// An attribute value that usually repeats from request to request (a server address, a route,
/// a user agent): the first text seen is kept, and every later value equal to it refers to it
/// instead of being a new string. Spans are freed in the batch span processor's thread, where
/// each string a request allocated costs several times its price (cross-thread frees bypass the
/// allocator's per-thread cache).
///
/// The kept text ([`KeptText`]) is `'static` while the process has room left in a budget of
/// [`STATIC_TEXT_BUDGET`] bytes (it then lives as long as the process): its values carry no
/// reference count, so the request threads that make spans and the export thread that frees
/// them never write to one shared counter. Past the budget it is a shared `Arc<str>`.
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
pub struct RepeatedText(OnceLock<KeptText>);

/// Bytes of text that [`KeptText`] makes `'static`, in all, in one process: what is kept for
/// the life of the process stays this small whatever the requests carry and however many
/// adapters are built.
pub const STATIC_TEXT_BUDGET: usize = 64 * 1024;

/// Bytes of [`STATIC_TEXT_BUDGET`] given out so far.
static STATIC_TEXT_USED: AtomicUsize = AtomicUsize::new(0);

/// `text` made `'static` when the process has room left in [`STATIC_TEXT_BUDGET`]; `None` once
/// the budget is spent. The one place that leaks text, so that the budget holds for every user.
pub(crate) fn keep_static(text: &str) -> Option<&'static str> {
    STATIC_TEXT_USED
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
            used.checked_add(text.len())
                .filter(|&total| total <= STATIC_TEXT_BUDGET)
        })
        .ok()
        .map(|_| &*Box::leak(Box::from(text)))
}

/// A text kept for attribute values that repeat ([`RepeatedText`] keeps one): `'static` while
/// the process has room left in [`STATIC_TEXT_BUDGET`], else shared behind an `Arc<str>`.
///
/// ```
/// use lens_core::semconv::KeptText;
/// use opentelemetry::Value;
///
/// let peer = KeptText::new("10.0.0.7");
/// assert_eq!(peer.as_str(), "10.0.0.7");
/// assert_eq!(peer.value(), Value::from("10.0.0.7"));
/// ```
#[derive(Clone, Debug)]
pub struct KeptText(Kept);

#[derive(Clone, Debug)]
enum Kept {
    Static(&'static str),
    Shared(Arc<str>),
}

impl KeptText {
    /// Keeps `text`: `'static` if the budget has room for it.
    pub fn new(text: &str) -> KeptText {
        KeptText(match keep_static(text) {
            Some(text) => Kept::Static(text),
            None => Kept::Shared(Arc::from(text)),
        })
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Kept::Static(text) => text,
            Kept::Shared(text) => text,
        }
    }

    /// The text as `'static` text, when it was kept within [`STATIC_TEXT_BUDGET`]: what a
    /// `Cow<'static, str>` (a span name) can borrow instead of copying.
    ///
    /// ```
    /// use lens_core::semconv::KeptText;
    ///
    /// assert_eq!(KeptText::new("GET /users/{id}").as_static(), Some("GET /users/{id}"));
    /// ```
    pub fn as_static(&self) -> Option<&'static str> {
        match &self.0 {
            Kept::Static(text) => Some(text),
            Kept::Shared(_) => None,
        }
    }

    /// An attribute value of the text, without a copy of it.
    pub fn value(&self) -> Value {
        match &self.0 {
            Kept::Static(text) => Value::from(*text),
            Kept::Shared(text) => Value::from(Arc::clone(text)),
        }
    }
}

impl RepeatedText {
    /// `text` as an attribute value: the kept text when it is that one.
    pub fn value(&self, text: &str) -> Value {
        let kept = self.0.get_or_init(|| KeptText::new(text));
        if kept.as_str() == text {
            kept.value()
        } else {
            Value::from(text.to_owned())
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::panic)]
    use super::{Kept, RepeatedText, STATIC_TEXT_BUDGET};
    use opentelemetry::Value;

    /// Every method the conventions know is its own name; any other (also one that differs only
    /// in case) is `None`.
    #[test]
    fn known_methods_by_name() {
        use super::known_http_method;
        use http::Method;
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

    /// A short text is kept as `'static` text (its values share no counter); one longer than
    /// the whole budget is shared behind an `Arc`; both give every equal value the kept text.
    #[test]
    fn a_text_within_the_budget_is_static_and_one_beyond_it_is_shared() {
        let short = RepeatedText::default();
        let a = short.value("api.example");
        assert!(matches!(
            short.0.get(),
            Some(super::KeptText(Kept::Static("api.example")))
        ));
        assert_eq!(
            text(&short.value("api.example")).as_ptr(),
            text(&a).as_ptr()
        );

        let huge = "h".repeat(STATIC_TEXT_BUDGET + 1);
        let long = RepeatedText::default();
        let b = long.value(&huge);
        assert!(
            matches!(long.0.get(), Some(super::KeptText(Kept::Shared(kept))) if **kept == *huge)
        );
        assert_eq!(text(&long.value(&huge)).as_ptr(), text(&b).as_ptr());
        assert_eq!(long.0.get().and_then(super::KeptText::as_static), None);
        assert_eq!(
            short.0.get().and_then(super::KeptText::as_static),
            Some("api.example")
        );
        assert_eq!(text(&b), huge);
        assert_eq!(text(&long.value("other")), "other");
    }
}
