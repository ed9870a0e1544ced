//! [`HeadEndMiddleware`]: lens-reqwest's `ClientMiddleware` as it was before its span lasted
//! until the body was read, reproduced with the least code: the same lens-span lifecycle
//! (`SpanOptions::start_client`, the same attributes, injection, `Responder`, `poll_in`, a
//! written-out future), the same shared `url.full`/`server.address` values, but the span ends
//! when the response head arrives and the body is handed on unwrapped. The A/B of
//! `benches/http.rs` (`client_body`) and `benches/allocations.rs` measures what wrapping the
//! body costs against it.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context as TaskContext, Poll, ready};

use http::Extensions;
use lens_core::policy::OutboundPolicy;
use lens_span::classify::{HttpClientErrors, Outcome};
use lens_span::{Adapter, LiveSpan, Responder, SpanOptions, httpconv, poll_in};
use opentelemetry::{Context, KeyValue, Value};
use opentelemetry_sdk::trace::SdkTracer;
use opentelemetry_semantic_conventions::attribute::{SERVER_ADDRESS, SERVER_PORT, URL_FULL};
use reqwest::{Request, Response};
use reqwest_middleware::{Middleware, Next};

struct Reqwest;

impl Adapter for Reqwest {
    type Request<'a> = Request;
    type Response<'a> = Response;
    type Status = http::StatusCode;
}

/// The first URL's `url.full`, host and port, shared by every request to it (as lens-reqwest's
/// memo: the bench sends one URL).
struct Target {
    url: Arc<str>,
    host: Arc<str>,
    port: i64,
}

/// The CLIENT span ended at the response head (lens-reqwest before the body was wrapped).
pub(crate) struct HeadEndMiddleware {
    options: SpanOptions<Reqwest, OutboundPolicy>,
    target: OnceLock<Target>,
}

impl HeadEndMiddleware {
    pub(crate) fn new(tracer: SdkTracer) -> Self {
        HeadEndMiddleware {
            options: SpanOptions::new(tracer, OutboundPolicy::send_everywhere()),
            target: OnceLock::new(),
        }
    }

    fn start(&self, req: &mut Request, extensions: &Extensions) -> LiveSpan {
        let target = self.target.get_or_init(|| Target {
            url: Arc::from(req.url().as_str()),
            host: Arc::from(req.url().host_str().unwrap_or_default()),
            port: i64::from(req.url().port_or_known_default().unwrap_or_default()),
        });
        let current;
        let parent = match extensions.get::<Context>() {
            Some(cx) => cx,
            None => {
                current = Context::current();
                &current
            }
        };
        let decision = self.options.policy().decide(&target.host);
        let mut attributes = Vec::with_capacity(6);
        let method = httpconv::push_method(&mut attributes, req.method());
        attributes.push(KeyValue::new(
            URL_FULL,
            Value::from(Arc::clone(&target.url)),
        ));
        attributes.push(KeyValue::new(
            SERVER_ADDRESS,
            Value::from(Arc::clone(&target.host)),
        ));
        attributes.push(KeyValue::new(SERVER_PORT, target.port));
        let span = self.options.start_client(
            req,
            || Cow::Borrowed(method.unwrap_or("HTTP")),
            attributes,
            parent,
        );
        self.options
            .propagation()
            .inject_headers(decision, span.context(), req.headers_mut());
        self.options.record_baggage_sent(&span, decision.baggage);
        span
    }
}

/// One attempt: the rest of the chain polled in the span, which ends when the head arrives.
struct Attempt<'a> {
    inner: Pin<Box<dyn Future<Output = reqwest_middleware::Result<Response>> + Send + 'a>>,
    span: Option<LiveSpan>,
    responder: Responder<Reqwest>,
}

impl Future for Attempt<'_> {
    type Output = reqwest_middleware::Result<Response>;

    fn poll(mut self: Pin<&mut Self>, task: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let inner = &mut this.inner;
        let result = ready!(poll_in(&mut this.span, true, || inner.as_mut().poll(task)));
        if let Some(mut span) = this.span.take() {
            match &result {
                Ok(res) => {
                    let status = res.status();
                    span.set_attribute(httpconv::status_code(status));
                    this.responder
                        .respond(&mut span, &status, res, &HttpClientErrors);
                    // The old behaviour: the span ends here, at the head.
                    span.end();
                }
                Err(err) => span.end_with(Outcome::failure("request", err.to_string())),
            }
        }
        Poll::Ready(result)
    }
}

impl Middleware for HeadEndMiddleware {
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
        let span = self.start(&mut req, extensions);
        let inner = next.run(req, extensions);
        Box::pin(Attempt {
            inner,
            span: Some(span),
            responder: self.options.responder(),
        })
    }
}
