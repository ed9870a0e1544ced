//! [`RequestBuilderExt`]: context injection for plain `reqwest` users.

use lens_core::W3cPropagator;
use lens_core::policy::OutboundPolicy;
use lens_span::Propagation;
use opentelemetry::Context;

use crate::middleware::inject;
use crate::url::server_address;

/// Injects the current (or a given) Context into a `reqwest::RequestBuilder`, for code that
/// does not use reqwest-middleware. No span is created: the Context's own span is the parent
/// the server sees.
///
/// ```
/// use lens_reqwest::RequestBuilderExt;
///
/// # async fn run() -> Result<(), reqwest::Error> {
/// let client = reqwest::Client::new();
/// let response = client
///     .get("http://localhost:8080/")
///     .inject_context()
///     .send()
///     .await?;
/// # let _ = response; Ok(()) }
/// ```
pub trait RequestBuilderExt: Sized {
    /// Injects [`Context::current()`] (trace context and baggage, every host: NeMo Lens parity).
    fn inject_context(self) -> Self;

    /// Injects `cx` (trace context and baggage, every host).
    fn inject_context_from(self, cx: &Context) -> Self;
}

impl RequestBuilderExt for reqwest::RequestBuilder {
    fn inject_context(self) -> Self {
        Context::map_current(|cx| self.inject_context_from(cx))
    }

    fn inject_context_from(self, cx: &Context) -> Self {
        let mut headers = http::HeaderMap::new();
        inject(
            &Propagation::lens(),
            &OutboundPolicy::send_everywhere(),
            cx,
            "",
            &mut headers,
        );
        if headers.is_empty() {
            self
        } else {
            self.headers(headers)
        }
    }
}

/// Injects `cx` into a built request as `policy` allows for its host (lens's process-wide
/// propagator, or `propagator`), replacing any `traceparent`/`tracestate` already there where
/// trace context may go.
///
/// ```
/// use lens_core::policy::OutboundPolicy;
///
/// let client = reqwest::Client::new();
/// let mut request = client.get("http://api.partner.example/").build().unwrap();
/// let policy = OutboundPolicy::send_everywhere().no_baggage();
/// lens_reqwest::inject_into_request(&mut request, &opentelemetry::Context::current(), &policy, None);
/// assert!(request.headers().get("baggage").is_none());
/// ```
pub fn inject_into_request(
    request: &mut reqwest::Request,
    cx: &Context,
    policy: &OutboundPolicy,
    propagator: Option<&W3cPropagator>,
) {
    let host = server_address(request.url()).unwrap_or_default().to_owned();
    let propagation = match propagator {
        Some(p) => Propagation::with(p.clone()),
        None => Propagation::lens(),
    };
    inject(&propagation, policy, cx, &host, request.headers_mut());
}
