//! The HTTP semantic-convention pieces both HTTP sides write: the method, and the response
//! status with its classification.

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
