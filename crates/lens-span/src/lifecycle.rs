//! A span from its start to its end: [`SpanOptions`] (the knobs every adapter has) start it,
//! [`LiveSpan`] records its outcome and ends it exactly once (at the end of the response, or
//! when dropped), and [`poll_in`] runs the work inside it and ends it on a panic.

use std::borrow::Cow;
use std::fmt;
use std::net::IpAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::Poll;

use http::HeaderMap;
use lens_core::HeaderCarrier;
use lens_core::policy::{InboundContext, InboundPolicy, InboundRequest};
use lens_core::random_flag::SpanStarter;
use opentelemetry::trace::{Link, SpanBuilder, SpanKind, SpanRef, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, ContextGuard, KeyValue};
use opentelemetry_semantic_conventions::attribute::ERROR_TYPE;

use crate::Propagation;
use crate::classify::Outcome;

/// What the hooks of one adapter see: its view of a request and of a response. Each adapter
/// names its own (`RequestInfo`, `reqwest::Request`, ...).
pub trait Adapter: 'static {
    /// What the filter, the span name and the request-attribute hook see.
    type Request<'a>: ?Sized;
    /// What the response-attribute hook sees.
    type Response<'a>: ?Sized;
}

/// What the filter decided for one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FilterDecision {
    /// Start a span for the request.
    pub span: bool,
    /// Clients: inject trace context into the request (the span's, or without a span the
    /// caller's). Servers ignore it.
    pub inject: bool,
}

impl FilterDecision {
    /// A span, and the context injected: the default.
    pub const TRACE: FilterDecision = FilterDecision {
        span: true,
        inject: true,
    };
    /// No span and nothing injected: the request goes as it is.
    pub const SKIP: FilterDecision = FilterDecision {
        span: false,
        inject: false,
    };
    /// No span, but the caller's context is injected (clients).
    pub const PROPAGATE_ONLY: FilterDecision = FilterDecision {
        span: false,
        inject: true,
    };
}

impl From<bool> for FilterDecision {
    /// `true`: [`FilterDecision::TRACE`]; `false`: [`FilterDecision::SKIP`].
    fn from(traced: bool) -> Self {
        if traced {
            FilterDecision::TRACE
        } else {
            FilterDecision::SKIP
        }
    }
}

/// The filter of adapter `A`.
pub type FilterFn<A> = dyn for<'a> Fn(&<A as Adapter>::Request<'a>) -> FilterDecision + Send + Sync;
/// The span-name callback of adapter `A`.
pub type SpanNameFn<A> =
    dyn for<'a> Fn(&<A as Adapter>::Request<'a>) -> Cow<'static, str> + Send + Sync;
/// The request-attribute hook of adapter `A`: pushes attributes the span starts with.
pub type RequestAttributesFn<A> =
    dyn for<'a> Fn(&<A as Adapter>::Request<'a>, &mut Vec<KeyValue>) + Send + Sync;
/// The response-attribute hook of adapter `A`: sets attributes on the span before it ends.
pub type ResponseAttributesFn<A> =
    dyn for<'a, 's> Fn(&<A as Adapter>::Response<'a>, &SpanRef<'s>) + Send + Sync;

/// The knobs every adapter has, with `P` its inbound or outbound policy; set through the
/// adapter's `with_*` methods ([`span_knobs!`](crate::span_knobs)).
pub struct SpanOptions<A: Adapter, P> {
    /// Starts the spans (the random flag kept or set, docs/propagation-rules.md#traceparent).
    pub tracer: Arc<dyn SpanStarter>,
    /// The propagator.
    pub propagation: Propagation,
    /// The inbound or outbound policy.
    pub policy: P,
    /// Whether a trace this adapter starts is marked random (`-02`/`-03`).
    pub random_flag_on_new_traces: bool,
    /// Per request: span or not, inject or not.
    pub filter: Option<Arc<FilterFn<A>>>,
    /// Per request: the span name, instead of the adapter's.
    pub span_name: Option<Arc<SpanNameFn<A>>>,
    /// Per request: attributes the span starts with, after the adapter's.
    pub request_attributes: Option<Arc<RequestAttributesFn<A>>>,
    /// Per response: attributes set before the span ends.
    pub response_attributes: Option<Arc<ResponseAttributesFn<A>>>,
}

impl<A: Adapter, P: Clone> Clone for SpanOptions<A, P> {
    fn clone(&self) -> Self {
        SpanOptions {
            tracer: Arc::clone(&self.tracer),
            propagation: self.propagation.clone(),
            policy: self.policy.clone(),
            random_flag_on_new_traces: self.random_flag_on_new_traces,
            filter: self.filter.clone(),
            span_name: self.span_name.clone(),
            request_attributes: self.request_attributes.clone(),
            response_attributes: self.response_attributes.clone(),
        }
    }
}

impl<A: Adapter, P: fmt::Debug> fmt::Debug for SpanOptions<A, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SpanOptions")
            .field("propagation", &self.propagation)
            .field("policy", &self.policy)
            .field("random_flag_on_new_traces", &self.random_flag_on_new_traces)
            .field("filter", &self.filter.is_some())
            .field("span_name", &self.span_name.is_some())
            .field("request_attributes", &self.request_attributes.is_some())
            .field("response_attributes", &self.response_attributes.is_some())
            .finish_non_exhaustive()
    }
}

impl<A: Adapter, P> SpanOptions<A, P> {
    /// Spans from `tracer`, lens's process-wide propagator, `policy`, new traces random, no
    /// hooks.
    pub fn new<T>(tracer: T, policy: P) -> Self
    where
        T: Tracer + Send + Sync + 'static,
        T::Span: Send + Sync + 'static,
    {
        SpanOptions {
            tracer: Arc::new(tracer),
            propagation: Propagation::Lens,
            policy,
            random_flag_on_new_traces: true,
            filter: None,
            span_name: None,
            request_attributes: None,
            response_attributes: None,
        }
    }

    /// [`SpanOptions::new`] with the tracer of scope `name`, `version` (and the conventions'
    /// schema URL) from the global tracer provider as it is now: every adapter's default.
    pub fn global(name: &'static str, version: &'static str, policy: P) -> Self {
        Self::new(crate::scope::global_tracer(name, version), policy)
    }

    /// The filter's decision for `request` ([`FilterDecision::TRACE`] without a filter).
    #[inline]
    pub fn filter(&self, request: &A::Request<'_>) -> FilterDecision {
        match &self.filter {
            Some(filter) => filter(request),
            None => FilterDecision::TRACE,
        }
    }

    /// The span name for `request`: the callback's, else `default()`.
    #[inline]
    pub fn span_name(
        &self,
        request: &A::Request<'_>,
        default: impl FnOnce() -> Cow<'static, str>,
    ) -> Cow<'static, str> {
        match &self.span_name {
            Some(name) => name(request),
            None => default(),
        }
    }

    /// Pushes the request hook's attributes.
    #[inline]
    pub fn request_attributes(&self, request: &A::Request<'_>, attributes: &mut Vec<KeyValue>) {
        if let Some(hook) = &self.request_attributes {
            hook(request, attributes);
        }
    }

    /// Sets the response hook's attributes on `span`.
    #[inline]
    pub fn response_attributes(&self, response: &A::Response<'_>, span: &LiveSpan) {
        if let Some(hook) = &self.response_attributes {
            hook(response, &span.cx.span());
        }
    }

    /// Starts the span of `builder` under `parent`: the trace's random flag kept, or set on a
    /// new trace when [`SpanOptions::random_flag_on_new_traces`] says so.
    #[inline]
    pub fn start(&self, builder: SpanBuilder, parent: &Context) -> LiveSpan {
        LiveSpan::new(
            self.tracer
                .start(builder, parent, self.random_flag_on_new_traces),
        )
    }

    /// [`SpanOptions::start`] with the span made current in `base`, not in `parent` (see
    /// [`lens_core::random_flag::context_with_span_in`]).
    pub fn start_in(&self, builder: SpanBuilder, parent: &Context, base: &Context) -> LiveSpan {
        LiveSpan::new(
            self.tracer
                .start_in(builder, parent, base, self.random_flag_on_new_traces),
        )
    }

    /// Starts a SERVER-side span from what the inbound policy let through: the trusted remote
    /// span as parent (its baggage kept), else a new root with a Link to it (Link) or without
    /// (Ignore).
    #[inline]
    pub fn start_inbound(&self, mut builder: SpanBuilder, inbound: InboundContext) -> LiveSpan {
        if let Some(link) = inbound.link {
            builder.links = Some(vec![Link::with_context(link)]);
        }
        self.start(builder, &inbound.parent)
    }

    /// Starts a SERVER span named `name` with `attributes` from what the inbound policy let
    /// through ([`SpanOptions::start_inbound`]).
    #[inline]
    pub fn start_server(
        &self,
        name: Cow<'static, str>,
        attributes: Vec<KeyValue>,
        inbound: InboundContext,
    ) -> LiveSpan {
        self.start_inbound(builder(name, SpanKind::Server, attributes), inbound)
    }

    /// Starts a CLIENT span named `name` with `attributes` under `parent`
    /// ([`SpanOptions::start`]).
    #[inline]
    pub fn start_client(
        &self,
        name: Cow<'static, str>,
        attributes: Vec<KeyValue>,
        parent: &Context,
    ) -> LiveSpan {
        self.start(builder(name, SpanKind::Client, attributes), parent)
    }
}

impl<A: Adapter> SpanOptions<A, InboundPolicy> {
    /// Decides with the inbound policy and extracts what it allows from a request's `headers`
    /// (`peer`: the address the request came from, for policies that trust by network).
    #[inline]
    pub fn extract_inbound(&self, headers: &HeaderMap, peer: Option<IpAddr>) -> InboundContext {
        let carrier = HeaderCarrier(headers);
        // `from_headers`: lens-core reads the HeaderMap directly (static names, no Vec per header).
        let mut request = InboundRequest::from_headers(&carrier);
        if let Some(peer) = peer {
            request = request.with_peer(peer);
        }
        self.propagation.extract(&self.policy, &request)
    }
}

/// A builder with the fields set directly: `with_attributes` would collect the vector again.
#[inline]
fn builder(name: Cow<'static, str>, kind: SpanKind, attributes: Vec<KeyValue>) -> SpanBuilder {
    SpanBuilder {
        name,
        span_kind: Some(kind),
        attributes: Some(attributes),
        ..SpanBuilder::default()
    }
}

/// A started span until it ends: ends when [`LiveSpan::end`] or [`LiveSpan::end_with`] is
/// called or when it is dropped (the response was dropped, the call cancelled), whichever comes
/// first, so that every path ends it exactly once.
#[derive(Debug)]
pub struct LiveSpan {
    cx: Context,
}

impl LiveSpan {
    /// The span current in `cx`.
    pub fn new(cx: Context) -> Self {
        LiveSpan { cx }
    }

    /// The Context holding the span (the parent of the work done for the call).
    pub fn context(&self) -> &Context {
        &self.cx
    }

    /// The span.
    pub fn span(&self) -> SpanRef<'_> {
        self.cx.span()
    }

    /// Makes the span's Context current until the guard is dropped.
    pub fn attach(&self) -> ContextGuard {
        self.cx.clone().attach()
    }

    /// Runs `f` with the span's Context current (a service's `call`, which may do work of its
    /// own before it returns its future).
    #[inline]
    pub fn in_scope<R>(&self, f: impl FnOnce() -> R) -> R {
        let _guard = self.attach();
        f()
    }

    /// Records `outcome`: on a failure, `error.type` and status Error.
    pub fn record(&self, outcome: Outcome) {
        if let Outcome::Failure {
            error_type,
            description,
        } = outcome
        {
            let span = self.cx.span();
            span.set_attribute(KeyValue::new(ERROR_TYPE, error_type));
            span.set_status(Status::Error { description });
        }
    }

    /// Records `outcome` and ends the span.
    pub fn end_with(self, outcome: Outcome) {
        self.record(outcome);
    }

    /// Ends the span.
    pub fn end(self) {}
}

impl Drop for LiveSpan {
    fn drop(&mut self) {
        self.cx.span().end();
    }
}

/// Polls `poll` inside `span`: with its Context current when `attach` is set, and, should
/// `poll` panic, with the span ended first (`error.type` = `panic`, status Error) before the
/// panic goes on. The runtime drops a panicked future only after the unwind is caught, when
/// nothing would say it panicked. Without a span, `poll` runs as it is.
#[inline]
pub fn poll_in<T>(
    span: &mut Option<LiveSpan>,
    attach: bool,
    poll: impl FnOnce() -> Poll<T>,
) -> Poll<T> {
    let Some(live) = span.as_ref() else {
        return poll();
    };
    let guard = attach.then(|| live.attach());
    let polled = std::panic::catch_unwind(AssertUnwindSafe(poll));
    drop(guard);
    match polled {
        Ok(poll) => poll,
        Err(panic) => {
            if let Some(live) = span.take() {
                live.end_with(Outcome::panic());
            }
            std::panic::resume_unwind(panic)
        }
    }
}

pin_project_lite::pin_project! {
    /// A future run inside a span: the span's Context is current while it is polled, and the
    /// span ends when the future completes, is dropped, or panics (`error.type` = `panic`).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use lens_span::{InSpan, LiveSpan};
    /// use opentelemetry::Context;
    /// use opentelemetry::trace::{TraceContextExt, Tracer, TracerProvider};
    ///
    /// let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
    /// let span = LiveSpan::new(Context::new().with_span(provider.tracer("doc").start("work")));
    /// let valid = InSpan::new(span, async { Context::current().span().span_context().is_valid() }).await;
    /// assert!(valid);
    /// # }
    /// ```
    pub struct InSpan<F> {
        #[pin]
        inner: F,
        span: Option<LiveSpan>,
    }
}

impl<F> InSpan<F> {
    /// `inner`, run inside `span`.
    pub fn new(span: LiveSpan, inner: F) -> Self {
        InSpan {
            inner,
            span: Some(span),
        }
    }
}

impl<F> fmt::Debug for InSpan<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InSpan")
            .field("span", &self.span)
            .finish_non_exhaustive()
    }
}

impl<F: std::future::Future> std::future::Future for InSpan<F> {
    type Output = F::Output;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        task: &mut std::task::Context<'_>,
    ) -> Poll<Self::Output> {
        let this = self.project();
        let mut inner = this.inner;
        let out = std::task::ready!(poll_in(this.span, true, || inner.as_mut().poll(task)));
        this.span.take();
        Poll::Ready(out)
    }
}
