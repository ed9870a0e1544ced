//! [`ClientMiddleware`]: one CLIENT span per attempt, trace context and baggage injected: the
//! reqwest-middleware glue around lens-span's span lifecycle.

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, ready};

use http::Extensions;
use lens_core::policy::OutboundPolicy;
use lens_span::classify::{HttpClientErrors, Outcome};
use lens_span::{
    Adapter, AtLastFrame, LiveSpan, Propagation, Responder, SpanOptions, TracedBody, httpconv,
    poll_in,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_semantic_conventions::attribute::{
    HTTP_REQUEST_RESEND_COUNT, SERVER_ADDRESS, SERVER_PORT, URL_FULL,
};
use reqwest::{Request, Response};
use reqwest_middleware::{Middleware, Next};

use crate::url::UrlMemo;

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

/// The hooks of [`ClientMiddleware`] see the `reqwest::Request` and the `reqwest::Response`.
struct Reqwest;

impl Adapter for Reqwest {
    type Request<'a> = Request;
    type Response<'a> = Response;
    type Status = http::StatusCode;
}

#[derive(Clone)]
struct Config {
    options: SpanOptions<Reqwest, OutboundPolicy>,
    /// `url.full`, `server.address` and `server.port` shared between requests (no string
    /// allocated per request for them, none freed in the batch span processor's thread).
    urls: UrlMemo,
}

/// A [`reqwest_middleware::Middleware`] that records one CLIENT span per attempt and injects that
/// span's W3C trace context (and the Context's baggage) into the request, as an
/// [`OutboundPolicy`] allows for the destination host.
///
/// The span lasts until the response body has been read to its end, has failed, or has been
/// dropped, whatever the caller reads it with (`bytes()`, `text()`, `json()`, `chunk()`,
/// `bytes_stream()`), so that its duration covers the whole response; a streamed response
/// (server-sent events, chunked) is marked with when its head and its first chunk arrived
/// (`lens.stream.*`, docs/streaming.md). To do so the response's body is given up by
/// `reqwest::Response` through an `http::Response`, wrapped and put back; the response is
/// otherwise unchanged (status, headers, version, URL, extensions, `content_length()`).
///
/// Register it after (inside) any retry middleware, so that every attempt gets its own span and
/// `traceparent`; attempts after the first carry `http.request.resend_count`. A `traceparent`
/// or `tracestate` already on the request is replaced.
///
/// The parent is the `opentelemetry::Context` stored in the request's extensions
/// (`.with_extension(cx)`), else [`Context::current()`].
///
/// ```
/// use lens_core::policy::OutboundPolicy;
/// use lens_reqwest::ClientMiddleware;
///
/// let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
///     .with(
///         ClientMiddleware::new()
///             .with_outbound_policy(
///                 OutboundPolicy::send_everywhere().baggage_only_to(["*.internal.example"]),
///             )
///             .with_span_name(|req| format!("{} {}", req.method(), req.url().path()).into()),
///     )
///     .build();
/// # let _ = client;
/// ```
#[derive(Clone)]
pub struct ClientMiddleware {
    config: Arc<Config>,
}

impl fmt::Debug for ClientMiddleware {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientMiddleware")
            .field("options", &self.config.options)
            .finish_non_exhaustive()
    }
}

impl ClientMiddleware {
    /// Sends trace context and baggage to every host (NeMo Lens parity), uses the tracer
    /// `lens-reqwest` (this crate's version, the conventions' schema URL) of the global tracer
    /// provider as it is when this is called (install the provider first, or use
    /// [`ClientMiddleware::with_tracer`]) and lens's process-wide propagator.
    pub fn new() -> Self {
        let policy = OutboundPolicy::send_everywhere();
        let mut options = SpanOptions::global("lens-reqwest", env!("CARGO_PKG_VERSION"), policy);
        options.set_instruments(lens_span::metrics::Instruments::HttpClient);
        Self::from_config(Config {
            options,
            urls: UrlMemo::default(),
        })
    }

    fn from_config(config: Config) -> Self {
        ClientMiddleware {
            config: Arc::new(config),
        }
    }

    fn options_mut(&mut self) -> &mut SpanOptions<Reqwest, OutboundPolicy> {
        &mut Arc::make_mut(&mut self.config).options
    }

    /// With metrics on (`with_meter`, `with_global_meter`), also records
    /// `http.client.request.body.size` and `http.client.response.body.size` (opt-in in the
    /// semantic conventions; off by default), per attempt, with the attributes of
    /// `http.client.request.duration`:
    ///
    /// - the request body: its length when reqwest holds it in memory (`Body::as_bytes`: a
    ///   body made from bytes, a string, JSON, a form; no body: 0), else the exact size a
    ///   streaming body reports, else its `Content-Length` header; a streaming body of unknown
    ///   length records nothing. Recorded when the attempt's span ends;
    /// - the response body: the bytes the caller actually reads from it (chunked and streaming
    ///   bodies count; after reqwest's decompression, when its `gzip`/`brotli`/`zstd`/`deflate`
    ///   features decode it), recorded when the body has been read to its end, fails, or the
    ///   response is dropped (a response dropped unread records 0), when the span ends.
    pub fn with_body_sizes(mut self, on: bool) -> Self {
        self.options_mut().set_body_sizes(on);
        self
    }

    /// Every call is the GenAI operation `gen_ai` (off by default): the spans get the GenAI
    /// attributes (`gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`)
    /// and, on a streamed response, `gen_ai.response.time_to_first_chunk`; with metrics on, the
    /// GenAI time-to-first-chunk and time-per-chunk histograms (docs/streaming.md). One request says it on its own with
    /// a [`GenAi`](lens_span::genai::GenAi) in its extensions
    /// (`.with_extension(GenAi::new("chat", "openai"))`), which wins over this.
    pub fn with_gen_ai(mut self, gen_ai: lens_span::genai::GenAi) -> Self {
        self.options_mut().set_gen_ai(Some(gen_ai));
        self
    }

    /// Starts the CLIENT span for `req` (unless filtered out) and injects its context (or the
    /// parent's, or nothing, as the filter says); returns the span.
    fn start(&self, req: &mut Request, extensions: &mut Extensions) -> Option<LiveSpan> {
        let config = &*self.config;
        let options = &config.options;
        let filter = options.filter_decision(req);
        if !filter.span && !filter.inject {
            return None;
        }
        let resend_count = if filter.span {
            resend_count(extensions)
        } else {
            0
        };
        // The request's Context by reference (no clone of it), else the current one.
        let current;
        let parent = match extensions.get::<Context>() {
            Some(cx) => cx,
            None => {
                current = Context::current();
                &current
            }
        };
        let target = config.urls.target(req.url());
        let decision = options.policy().decide(target.host.unwrap_or_default());
        if !filter.span {
            options
                .propagation()
                .inject_headers(decision, parent, req.headers_mut());
            return None;
        }

        // Method, url.full, server.address and server.port, with room for the status code and
        // error.type set at the end: the span's vector never grows.
        let mut attributes = Vec::with_capacity(6);
        let method = httpconv::push_method(&mut attributes, req.method());
        attributes.push(KeyValue::new(URL_FULL, target.url_full));
        if let Some(host) = target.server_address {
            attributes.push(KeyValue::new(SERVER_ADDRESS, host));
        }
        if let Some(port) = target.port {
            attributes.push(KeyValue::new(SERVER_PORT, i64::from(port)));
        }
        if resend_count > 0 {
            attributes.push(KeyValue::new(
                HTTP_REQUEST_RESEND_COUNT,
                i64::from(resend_count),
            ));
        }
        let mut span = options.start_client(
            req,
            || Cow::Borrowed(method.unwrap_or("HTTP")),
            attributes,
            parent,
        );
        if let Some(size) = request_body_size(req) {
            span.set_request_body_size(size);
        }
        if let Some(gen_ai) = extensions.get::<lens_span::genai::GenAi>() {
            span.set_gen_ai(Arc::new(gen_ai.clone()));
        }
        if filter.inject {
            options
                .propagation()
                .inject_headers(decision, span.context(), req.headers_mut());
        }
        options.record_baggage_sent(&span, filter.inject && decision.baggage);
        Some(span)
    }
}

lens_span::span_knobs!(
    ClientMiddleware,
    request: Request,
    response: Response,
    status: http::StatusCode,
    policy: with_outbound_policy(OutboundPolicy)
);

/// Injects `cx` into `headers` as `policy` allows for `host`; a `traceparent`/`tracestate`
/// already there is replaced (or removed, when `cx` has no valid span) wherever trace context
/// may go.
pub(crate) fn inject(
    propagation: &Propagation,
    policy: &OutboundPolicy,
    cx: &Context,
    host: &str,
    headers: &mut http::HeaderMap,
) {
    propagation.inject_headers(policy.decide(host), cx, headers);
}

/// The size of `req`'s body as far as it is known before it is sent: a buffered body's length
/// (no body: 0), else a streaming body's exact size hint, else its `Content-Length` header.
/// A streaming body of unknown length: `None` (no data point).
fn request_body_size(req: &Request) -> Option<u64> {
    let Some(body) = req.body() else {
        return Some(0);
    };
    if let Some(bytes) = body.as_bytes() {
        return Some(bytes.len() as u64);
    }
    http_body::Body::size_hint(body).exact().or_else(|| {
        req.headers()
            .get(http::header::CONTENT_LENGTH)?
            .to_str()
            .ok()?
            .parse()
            .ok()
    })
}

/// `res` with its body in a [`TracedBody`] that ends `span` when the caller has read the body
/// to its end, when it fails, or when the response is dropped, whatever the caller reads it
/// with (`bytes()`, `text()`, `json()`, `chunk()`, `bytes_stream()`), marking a streamed
/// response ([`lens_span::stream`]: its head arrived at `head`). A `reqwest::Response` gives
/// its body up only as an `http::Response`: it goes through one and back, its URL kept (the
/// extension reqwest reads it from), its status, headers, version and extensions unchanged.
fn trace_body(res: Response, span: LiveSpan, head: std::time::SystemTime) -> Response {
    use reqwest::ResponseBuilderExt as _;
    let url = res.url().clone();
    let (mut parts, body) = http::Response::from(res).into_parts();
    if let Ok(holder) = http::Response::builder().url(url).body(()) {
        parts.extensions.extend(holder.into_parts().0.extensions);
    }
    let body = TracedBody::new(body, Some(span), AtLastFrame).with_head(head);
    Response::from(http::Response::from_parts(parts, reqwest::Body::wrap(body)))
}

/// The `error.type` of a failed attempt: the kind of transport failure.
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
    span: Option<LiveSpan>,
    responder: Responder<Reqwest>,
}

impl Future for Attempt<'_> {
    type Output = reqwest_middleware::Result<Response>;

    fn poll(mut self: Pin<&mut Self>, task: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let inner = &mut this.inner;
        let mut result = ready!(poll_in(&mut this.span, true, || inner.as_mut().poll(task)));
        if let Some(mut span) = this.span.take() {
            match result {
                Ok(res) => {
                    let head = opentelemetry::time::now();
                    let status = res.status();
                    span.set_attribute(httpconv::status_code(status));
                    // The user's classifier, else the conventions' (4xx and 5xx), then the hooks.
                    this.responder
                        .respond(&mut span, &status, &res, &HttpClientErrors);
                    // The span lasts until the body is read, fails or is dropped.
                    result = Ok(trace_body(res, span, head));
                }
                Err(err) => {
                    span.record(Outcome::failure(error_type(&err), err.to_string()));
                    result = Err(err);
                }
            }
        }
        Poll::Ready(result)
    }
}

/// `Middleware::handle` written out (the trait is declared with `async_trait`): the span is
/// started, the context injected and the next middleware called before the boxed future is
/// made, so that the future holds only the inner future and the span, not the request.
impl Middleware for ClientMiddleware {
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
        if span.is_none() {
            return inner;
        }
        Box::pin(Attempt {
            inner,
            span,
            responder: self.config.options.responder(),
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
