//! Small pieces of the OpenTelemetry semantic conventions that every adapter needs.

use http::Method;

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
