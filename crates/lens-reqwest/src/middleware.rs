//! [`LensMiddleware`]: one CLIENT span per attempt, trace context and baggage injected.

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, ready};

use http::Extensions;
use http::header::HeaderName;
use lens_core::policy::{OutboundDecision, OutboundPolicy};
use lens_core::{HeaderCarrier, TRACEPARENT_HEADER, TRACESTATE_HEADER, W3cPropagator};
use opentelemetry::trace::{SpanBuilder, SpanKind, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue};
use reqwest::{Request, Response};
use reqwest_middleware::{Middleware, Next};

use crate::url::{redacted_url, server_address};
use lens_core::random_flag::SpanStarter;
use lens_core::semconv::{RepeatedText, known_http_method};

/// How many times this request has been sent before, kept in the request's `Extensions`,
/// which retry middleware hands to every attempt, from the second attempt on.
#[derive(Clone, Copy, Debug)]
struct Attempts(u32);

/// The mark of a first attempt. Zero-sized, so that `Extensions` boxes it without allocating:
/// a request sent once (the usual case) costs no allocation for the count.
#[derive(Clone, Copy, Debug)]
struct SentOnce;

/// How many times the request of `extensions` was sent before this attempt; counts this one.
fn resend_count(extensions: &mut Extensions) -> u32 {
    if let Some(attempts) = extensions.get_mut::<Attempts>() {
        attempts.0 = attempts.0.saturating_add(1);
        return attempts.0;
    }
    if extensions.get::<SentOnce>().is_some() {
        extensions.insert(Attempts(1));
        1
    } else {
        extensions.insert(SentOnce);
        0
    }
}

#[derive(Clone)]
struct Config {
    tracer: Arc<dyn SpanStarter>,
    propagator: Option<W3cPropagator>,
    policy: OutboundPolicy,
    random_flag_on_new_traces: bool,
    /// The first `server.address` this middleware saw, shared with every span that has the same
    /// one (no string allocated per request for it, none freed in the batch span processor's
    /// thread); other hosts are allocated per request. One value, set once: bounded memory, no
    /// lock per request. (`url.full` is never kept: it differs from request to request.)
    host_text: RepeatedText,
}

/// A [`reqwest_middleware::Middleware`] that records one CLIENT span per attempt and injects that
/// span's W3C trace context (and the Context's baggage) into the request, as an
/// [`OutboundPolicy`] allows for the destination host.
///
/// Register it after (inside) any retry middleware, so that every attempt gets its own span and
/// `traceparent`; attempts after the first carry `http.request.resend_count`.
///
/// The parent is the `opentelemetry::Context` stored in the request's extensions
/// (`.with_extension(cx)`), else [`Context::current()`].
///
/// ```
/// use lens_core::policy::OutboundPolicy;
/// use lens_reqwest::LensMiddleware;
///
/// let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
///     .with(LensMiddleware::new().with_policy(
///         OutboundPolicy::send_everywhere().baggage_only_to(["*.internal.example"]),
///     ))
///     .build();
/// # let _ = client;
/// ```
#[derive(Clone)]
pub struct LensMiddleware {
    config: Arc<Config>,
}

impl fmt::Debug for LensMiddleware {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LensMiddleware")
            .field("propagator", &self.config.propagator)
            .field("policy", &self.config.policy)
            .field(
                "random_flag_on_new_traces",
                &self.config.random_flag_on_new_traces,
            )
            .finish_non_exhaustive()
    }
}

impl Default for LensMiddleware {
    fn default() -> Self {
        Self::new()
    }
}

impl LensMiddleware {
    /// Sends trace context and baggage to every host (NeMo Lens parity), uses the tracer
    /// `lens-reqwest` of the global tracer provider as it is when this is called (install the
    /// provider first, or use [`LensMiddleware::with_tracer`]) and lens's process-wide propagator.
    pub fn new() -> Self {
        LensMiddleware {
            config: Arc::new(Config {
                tracer: Arc::new(opentelemetry::global::tracer("lens-reqwest")),
                propagator: None,
                policy: OutboundPolicy::send_everywhere(),
                random_flag_on_new_traces: true,
                host_text: RepeatedText::default(),
            }),
        }
    }

    fn config_mut(&mut self) -> &mut Config {
        Arc::make_mut(&mut self.config)
    }

    /// Creates spans with this tracer.
    pub fn with_tracer<T>(mut self, tracer: T) -> Self
    where
        T: Tracer + Send + Sync + 'static,
        T::Span: Send + Sync + 'static,
    {
        self.config_mut().tracer = Arc::new(tracer);
        self
    }

    /// Decides per destination host what goes out (default: everything everywhere).
    pub fn with_policy(mut self, policy: OutboundPolicy) -> Self {
        self.config_mut().policy = policy;
        self
    }

    /// Injects with this propagator instead of lens's process-wide one.
    pub fn with_propagator(mut self, propagator: W3cPropagator) -> Self {
        self.config_mut().propagator = Some(propagator);
        self
    }

    /// Whether a trace this middleware starts (no parent span) is sent with the W3C random flag
    /// (`02`). On by default, right for opentelemetry_sdk's default random id generator.
    pub fn with_random_flag_on_new_traces(mut self, on: bool) -> Self {
        self.config_mut().random_flag_on_new_traces = on;
        self
    }

    /// Starts the CLIENT span for `req` and injects its context; returns the span's Context.
    fn start(&self, req: &mut Request, extensions: &mut Extensions) -> Context {
        let config = &*self.config;
        let resend_count = resend_count(extensions);
        // The request's Context by reference (no clone of it), else the current one.
        let current;
        let parent = match extensions.get::<Context>() {
            Some(cx) => cx,
            None => {
                current = Context::current();
                &current
            }
        };

        let method = known_http_method(req.method());
        let url = req.url();
        let host = server_address(url);
        // Method, url.full, server.address and server.port, with room for the status code and
        // error.type set at the end: the span's vector never grows.
        let mut attributes = Vec::with_capacity(6);
        attributes.push(KeyValue::new(
            "http.request.method",
            method.unwrap_or("_OTHER"),
        ));
        if method.is_none() {
            attributes.push(KeyValue::new(
                "http.request.method_original",
                req.method().as_str().to_owned(),
            ));
        }
        attributes.push(KeyValue::new("url.full", redacted_url(url)));
        if let Some(host) = host {
            attributes.push(KeyValue::new(
                "server.address",
                config.host_text.value(host),
            ));
        }
        if let Some(port) = url.port_or_known_default() {
            attributes.push(KeyValue::new("server.port", i64::from(port)));
        }
        if resend_count > 0 {
            attributes.push(KeyValue::new(
                "http.request.resend_count",
                i64::from(resend_count),
            ));
        }
        let decision = config.policy.decide(host.unwrap_or_default());
        // The fields set directly: `with_attributes` would collect the vector again.
        let builder = SpanBuilder {
            name: Cow::Borrowed(method.unwrap_or("HTTP")),
            span_kind: Some(SpanKind::Client),
            attributes: Some(attributes),
            ..SpanBuilder::default()
        };
        // The random flag of the trace goes out again (SPEC §1) even where the SDK drops it.
        let cx = config
            .tracer
            .start(builder, parent, config.random_flag_on_new_traces);

        inject_decided(config.propagator.as_ref(), decision, &cx, req.headers_mut());
        cx
    }
}

/// Injects `cx` into `headers` as `policy` allows for `host`; a `traceparent`/`tracestate`
/// already there is replaced (or removed, when `cx` has no valid span) wherever trace context
/// may go.
pub(crate) fn inject(
    propagator: Option<&W3cPropagator>,
    policy: &OutboundPolicy,
    cx: &Context,
    host: &str,
    headers: &mut http::HeaderMap,
) {
    inject_decided(propagator, policy.decide(host), cx, headers);
}

/// [`inject`] with the policy's decision made.
fn inject_decided(
    propagator: Option<&W3cPropagator>,
    decision: OutboundDecision,
    cx: &Context,
    headers: &mut http::HeaderMap,
) {
    // Static names: a `&str` key would be parsed into a header name on every lookup.
    const TRACEPARENT: HeaderName = HeaderName::from_static(TRACEPARENT_HEADER);
    const TRACESTATE: HeaderName = HeaderName::from_static(TRACESTATE_HEADER);
    // Usually there is nothing to remove: a request's headers are empty at this point unless
    // the caller set some (reqwest adds its defaults later).
    if decision.trace_context && !headers.is_empty() {
        headers.remove(&TRACEPARENT);
        headers.remove(&TRACESTATE);
    }
    if decision.trace_context || decision.baggage {
        let propagator: &W3cPropagator = match propagator {
            Some(p) => p,
            None => lens_core::propagator(),
        };
        propagator.inject_parts(
            cx,
            &mut HeaderCarrier(headers),
            decision.trace_context,
            decision.baggage,
        );
    }
}

fn record_outcome(cx: &Context, result: &reqwest_middleware::Result<Response>) {
    let span = cx.span();
    match result {
        Ok(res) => {
            let status = res.status();
            span.set_attribute(KeyValue::new(
                "http.response.status_code",
                i64::from(status.as_u16()),
            ));
            if status.is_client_error() || status.is_server_error() {
                span.set_attribute(KeyValue::new("error.type", status.as_u16().to_string()));
                span.set_status(Status::error(""));
            }
        }
        Err(err) => {
            span.set_attribute(KeyValue::new("error.type", error_type(err)));
            span.set_status(Status::error(err.to_string()));
        }
    }
    span.end();
}

fn error_type(err: &reqwest_middleware::Error) -> &'static str {
    match err {
        reqwest_middleware::Error::Middleware(_) => "middleware",
        reqwest_middleware::Error::Reqwest(e) if e.is_timeout() => "timeout",
        reqwest_middleware::Error::Reqwest(e) if e.is_connect() => "connect",
        reqwest_middleware::Error::Reqwest(e) if e.is_redirect() => "redirect",
        reqwest_middleware::Error::Reqwest(e) if e.is_body() => "body",
        reqwest_middleware::Error::Reqwest(e) if e.is_request() => "request",
        _ => "_OTHER",
    }
}

/// The future of one attempt: polls the rest of the chain with the CLIENT span's Context as the
/// current one, then records the outcome on the span and ends it.
///
/// Written out rather than an `async` block around `FutureExt::with_context`: the Context is
/// attached from the future's own field (no second copy of it), and the response is handed
/// on without being moved through a generator's state.
struct Attempt<'a> {
    inner: Pin<Box<dyn Future<Output = reqwest_middleware::Result<Response>> + Send + 'a>>,
    /// `None` once the outcome is recorded.
    span: Option<Context>,
}

impl Future for Attempt<'_> {
    type Output = reqwest_middleware::Result<Response>;

    fn poll(mut self: Pin<&mut Self>, task: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let result = match &this.span {
            Some(cx) => {
                let _guard = cx.clone().attach();
                ready!(this.inner.as_mut().poll(task))
            }
            // Polled again after completion: the inner future decides what that means.
            None => return this.inner.as_mut().poll(task),
        };
        if let Some(cx) = this.span.take() {
            record_outcome(&cx, &result);
        }
        Poll::Ready(result)
    }
}

/// `Middleware::handle` written out (the trait is declared with `async_trait`): the span is
/// started, the context injected and the next middleware called before the boxed future is
/// made, so that the future holds only the inner future and the Context, not the request.
impl Middleware for LensMiddleware {
    fn handle<'life0, 'life1, 'life2, 'async_trait>(
        &'life0 self,
        mut req: Request,
        extensions: &'life1 mut Extensions,
        next: Next<'life2>,
    ) -> Pin<Box<dyn Future<Output = reqwest_middleware::Result<Response>> + Send + 'async_trait>>
    where
        'life0: 'async_trait,
        'life1: 'async_trait,
        'life2: 'async_trait,
        Self: 'async_trait,
    {
        let cx = self.start(&mut req, extensions);
        let inner = next.run(req, extensions);
        Box::pin(Attempt {
            inner,
            span: Some(cx),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::resend_count;
    use http::Extensions;

    /// Attempts are counted from 0 over the request's extensions, which every attempt shares.
    #[test]
    fn attempts_are_counted() {
        let mut extensions = Extensions::new();
        let counts: Vec<u32> = (0..4).map(|_| resend_count(&mut extensions)).collect();
        assert_eq!(counts, [0, 1, 2, 3]);
        assert_eq!(resend_count(&mut Extensions::new()), 0);
    }
}
