//! A span from its start to its end: [`SpanOptions`] (the knobs every adapter has) start it,
//! [`LiveSpan`] records its outcome and ends it exactly once (at the end of the response, or
//! when dropped), and [`poll_in`] runs the work inside it and ends it on a panic.

use std::borrow::Cow;
use std::fmt;
use std::net::IpAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::Poll;
use std::time::SystemTime;

use http::HeaderMap;
use lens_core::HeaderCarrier;
use lens_core::policy::{InboundContext, InboundPolicy, InboundRequest};
use lens_core::random_flag::{SpanStarter, context_with_span_in};
use opentelemetry::trace::{Link, SpanBuilder, SpanKind, SpanRef, Status, TraceContextExt, Tracer};
use opentelemetry::{Context, ContextGuard, KeyValue};
use opentelemetry_semantic_conventions::attribute::ERROR_TYPE;

use crate::Propagation;
use crate::classify::{Classify, Failure, Outcome};
use crate::genai::GenAi;
use crate::metrics::{BodyBytes, CallMetrics, Instruments, OptIn, Recorder};

/// What the hooks of one adapter see: its view of a request and of a response, and what its
/// classifier sees. Each adapter names its own (`RequestInfo`, `reqwest::Request`, ...).
pub trait Adapter: 'static {
    /// What the filter, the span name and the request-attribute hook see.
    type Request<'a>: ?Sized;
    /// What the response-attribute hook sees.
    type Response<'a>: ?Sized;
    /// What the classifier sees of a response: an HTTP status, a gRPC code.
    type Status: ?Sized;
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
type FilterFn<A> = dyn for<'a> Fn(&<A as Adapter>::Request<'a>) -> FilterDecision + Send + Sync;
/// The span-name callback of adapter `A`.
type SpanNameFn<A> =
    dyn for<'a> Fn(&<A as Adapter>::Request<'a>) -> Cow<'static, str> + Send + Sync;
/// The request-attribute hook of adapter `A`: pushes attributes the span starts with.
type RequestAttributesFn<A> =
    dyn for<'a> Fn(&<A as Adapter>::Request<'a>, &mut Vec<KeyValue>) + Send + Sync;
/// The response-attribute hook of adapter `A`: sets attributes on the span before it ends.
type ResponseAttributesFn<A> =
    dyn for<'a, 's> Fn(&<A as Adapter>::Response<'a>, &SpanRef<'s>) + Send + Sync;
/// The classifier of adapter `A`.
type ClassifierFn<A> = dyn Classify<<A as Adapter>::Status> + Send + Sync;
/// The failure hook: runs when a span records a failure, whatever the path (a response its
/// classifier calls an error, a transport error, a failed body, a panic).
type OnFailureFn = dyn for<'a, 's> Fn(&Failure<'a>, &SpanRef<'s>) + Send + Sync;

/// The knobs every adapter has, with `P` its inbound or outbound policy; set through the
/// adapter's `with_*` methods ([`span_knobs!`](crate::span_knobs)), which call the `set_*`
/// methods here. An adapter reads them only through the lifecycle: [`SpanOptions::filter_decision`],
/// [`SpanOptions::extract_inbound`], [`SpanOptions::start_server`] or
/// [`SpanOptions::start_client`] (which run the span-name and request-attribute hooks), and
/// [`SpanOptions::responder`] (the classifier and the response-attribute hook).
pub struct SpanOptions<A: Adapter, P> {
    tracer: Arc<dyn SpanStarter>,
    propagation: Propagation,
    policy: P,
    random_flag_on_new_traces: bool,
    filter: Option<Arc<FilterFn<A>>>,
    span_name: Option<Arc<SpanNameFn<A>>>,
    request_attributes: Option<Arc<RequestAttributesFn<A>>>,
    responder: Responder<A>,
    on_failure: Option<Arc<OnFailureFn>>,
    metrics: MetricsConfig,
    baggage_keys: bool,
    gen_ai: Option<Arc<GenAi>>,
}

/// The metrics knobs: the adapter's kind of call, the meter (none: metrics off), the opt-ins,
/// and the instruments built from them.
#[derive(Clone, Debug)]
struct MetricsConfig {
    scope: (&'static str, &'static str),
    kind: Option<Instruments>,
    meter: Option<opentelemetry::metrics::Meter>,
    opt_in: OptIn,
    recorder: Option<Arc<Recorder>>,
}

impl MetricsConfig {
    fn rebuild(&mut self) {
        self.recorder = match (self.kind, &self.meter) {
            (Some(kind), Some(meter)) => Some(Arc::new(Recorder::new(kind, meter, self.opt_in))),
            _ => None,
        };
    }
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
            responder: self.responder.clone(),
            on_failure: self.on_failure.clone(),
            metrics: self.metrics.clone(),
            baggage_keys: self.baggage_keys,
            gen_ai: self.gen_ai.clone(),
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
            .field("responder", &self.responder)
            .field("on_failure", &self.on_failure.is_some())
            .field("metrics", &self.metrics.recorder)
            .field("baggage_keys", &self.baggage_keys)
            .finish_non_exhaustive()
    }
}

impl<A: Adapter, P> SpanOptions<A, P> {
    /// Spans from `tracer`, lens's process-wide propagator, `policy`, new traces random, no
    /// hooks, the adapter's own classifier.
    pub fn new<T>(tracer: T, policy: P) -> Self
    where
        T: Tracer + Send + Sync + 'static,
        T::Span: Send + Sync + 'static,
    {
        SpanOptions {
            tracer: Arc::new(tracer),
            propagation: Propagation::lens(),
            policy,
            random_flag_on_new_traces: true,
            filter: None,
            span_name: None,
            request_attributes: None,
            responder: Responder::default(),
            on_failure: None,
            metrics: MetricsConfig {
                scope: ("lens-span", env!("CARGO_PKG_VERSION")),
                kind: None,
                meter: None,
                opt_in: OptIn::default(),
                recorder: None,
            },
            baggage_keys: false,
            gen_ai: None,
        }
    }

    /// [`SpanOptions::new`] with the tracer of scope `name`, `version` (and the conventions'
    /// schema URL) from the global tracer provider as it is now: every adapter's default.
    /// [`SpanOptions::set_global_meter`] takes its meter from the same scope.
    pub fn global(name: &'static str, version: &'static str, policy: P) -> Self {
        let mut options = Self::new(crate::scope::global_tracer(name, version), policy);
        options.metrics.scope = (name, version);
        options
    }

    /// The instruments this adapter records once a meter is set (none until the adapter says:
    /// its calls then record no metrics).
    pub fn set_instruments(&mut self, kind: Instruments) {
        self.metrics.kind = Some(kind);
        self.metrics.rebuild();
    }

    /// Records request metrics with `meter` (off by default): the duration of each call,
    /// recorded when its span ends ([`crate::metrics`]).
    pub fn set_meter(&mut self, meter: opentelemetry::metrics::Meter) {
        self.metrics.meter = Some(meter);
        self.metrics.rebuild();
    }

    /// Records request metrics with the meter of the adapter's scope (its name, version and the
    /// conventions' schema URL) from the global meter provider as it is now.
    pub fn set_global_meter(&mut self) {
        let (name, version) = self.metrics.scope;
        self.set_meter(opentelemetry::global::meter_with_scope(
            crate::scope::scope(name, version),
        ));
    }

    /// Whether servers also record `http.server.active_requests` (opt-in, off by default;
    /// only with a meter).
    pub fn set_active_requests(&mut self, on: bool) {
        self.metrics.opt_in.active_requests = on;
        self.metrics.rebuild();
    }

    /// Whether HTTP adapters also record the body sizes (opt-in, off by default; only with a
    /// meter): `http.server.request.body.size` and `http.server.response.body.size` on servers,
    /// `http.client.request.body.size` and `http.client.response.body.size` on clients. What
    /// is counted is the adapter's to say: the bytes of the response body sent
    /// ([`LiveSpan::add_body_bytes`]), of a body counted through [`LiveSpan::count_request_body`]
    /// or [`LiveSpan::count_response_body`], or a size known in advance
    /// ([`LiveSpan::set_request_body_size`]).
    pub fn set_body_sizes(&mut self, on: bool) {
        self.metrics.opt_in.body_sizes = on;
        self.metrics.rebuild();
    }

    /// Whether spans record the keys (never the values) of the baggage their call carried:
    /// `lens.baggage.keys` ([`crate::baggage_keys`]), off by default. SERVER and CONSUMER spans
    /// record it as they start; CLIENT and PRODUCER spans when the adapter calls
    /// [`SpanOptions::record_baggage_sent`].
    pub fn set_baggage_keys(&mut self, on: bool) {
        self.baggage_keys = on;
    }

    /// Every call is the GenAI operation `gen_ai` (none: not GenAI, the default): its spans
    /// get the GenAI attributes and, on streamed responses, figures ([`crate::genai`]).
    pub fn set_gen_ai(&mut self, gen_ai: Option<GenAi>) {
        self.gen_ai = gen_ai.map(Arc::new);
    }

    /// Starts spans with `tracer`.
    pub fn set_tracer<T>(&mut self, tracer: T)
    where
        T: Tracer + Send + Sync + 'static,
        T::Span: Send + Sync + 'static,
    {
        self.tracer = Arc::new(tracer);
    }

    /// Reads and writes trace context with `propagation`.
    pub fn set_propagation(&mut self, propagation: Propagation) {
        self.propagation = propagation;
    }

    /// Decides with `policy`.
    pub fn set_policy(&mut self, policy: P) {
        self.policy = policy;
    }

    /// Whether a trace this adapter starts is marked random (`-02`/`-03`).
    pub fn set_random_flag_on_new_traces(&mut self, on: bool) {
        self.random_flag_on_new_traces = on;
    }

    /// Per request: span or not, inject or not.
    pub fn set_filter<F>(&mut self, filter: F)
    where
        F: for<'a> Fn(&A::Request<'a>) -> FilterDecision + Send + Sync + 'static,
    {
        self.filter = Some(Arc::new(filter));
    }

    /// Per request: the span name, instead of the adapter's.
    pub fn set_span_name<F>(&mut self, name: F)
    where
        F: for<'a> Fn(&A::Request<'a>) -> Cow<'static, str> + Send + Sync + 'static,
    {
        self.span_name = Some(Arc::new(name));
    }

    /// Per request: attributes the span starts with, after the adapter's.
    pub fn set_request_attributes<F>(&mut self, hook: F)
    where
        F: for<'a> Fn(&A::Request<'a>, &mut Vec<KeyValue>) + Send + Sync + 'static,
    {
        self.request_attributes = Some(Arc::new(hook));
    }

    /// Per response: attributes set before the span ends.
    pub fn set_response_attributes<F>(&mut self, hook: F)
    where
        F: for<'a, 's> Fn(&A::Response<'a>, &SpanRef<'s>) + Send + Sync + 'static,
    {
        let mut hooks = self.responder.hooks();
        hooks.response_attributes = Some(Arc::new(hook));
        self.responder.hooks = Some(Arc::new(hooks));
    }

    /// What is an error, instead of the adapter's classifier.
    pub fn set_classifier<C>(&mut self, classifier: C)
    where
        C: Classify<A::Status> + Send + Sync + 'static,
    {
        let mut hooks = self.responder.hooks();
        hooks.classifier = Some(Arc::new(classifier));
        self.responder.hooks = Some(Arc::new(hooks));
    }

    /// Runs when a span records a failure: a response the classifier calls an error, a transport
    /// error, a failed body, a panic (after `error.type` is set, before the span ends).
    pub fn set_on_failure<F>(&mut self, hook: F)
    where
        F: for<'a, 's> Fn(&Failure<'a>, &SpanRef<'s>) + Send + Sync + 'static,
    {
        self.on_failure = Some(Arc::new(hook));
    }

    /// The inbound or outbound policy.
    pub fn policy(&self) -> &P {
        &self.policy
    }

    /// The propagator (clients inject with it).
    pub fn propagation(&self) -> &Propagation {
        &self.propagation
    }

    /// The filter's decision for `request` ([`FilterDecision::TRACE`] without a filter).
    #[inline]
    pub fn filter_decision(&self, request: &A::Request<'_>) -> FilterDecision {
        match &self.filter {
            Some(filter) => filter(request),
            None => FilterDecision::TRACE,
        }
    }

    /// What records the outcome of a response ([`Responder`]): the classifier and the
    /// response-attribute hook. Costs nothing (no reference count) while neither is set.
    #[inline]
    pub fn responder(&self) -> Responder<A> {
        self.responder.clone()
    }

    /// The span name for `request`: the callback's, else `default()`; then the attributes:
    /// `attributes`, then the request hook's.
    #[inline]
    fn name_and_attributes(
        &self,
        request: &A::Request<'_>,
        default: impl FnOnce() -> Cow<'static, str>,
        attributes: &mut Vec<KeyValue>,
    ) -> Cow<'static, str> {
        if let Some(hook) = &self.request_attributes {
            hook(request, attributes);
        }
        match &self.span_name {
            Some(name) => name(request),
            None => default(),
        }
    }

    /// With the baggage-keys knob on, pushes `lens.baggage.keys` of the baggage in `cx` (the
    /// Context a SERVER or CONSUMER span starts under): nothing, and no allocation, when off.
    #[inline]
    pub(crate) fn push_baggage_keys(&self, attributes: &mut Vec<KeyValue>, cx: &Context) {
        if self.baggage_keys {
            attributes.push(crate::baggage_keys::of(cx));
        }
    }

    /// With the baggage-keys knob on ([`SpanOptions::set_baggage_keys`]), records on a CLIENT or
    /// PRODUCER `span` the keys of the baggage its request or message carried: those of the
    /// span's Context when `sent` (the adapter injected with the outbound decision's `baggage`
    /// set), none (an empty list) when not. Call it once, after injecting. Nothing when off.
    #[inline]
    pub fn record_baggage_sent(&self, span: &LiveSpan, sent: bool) {
        if !self.baggage_keys {
            return;
        }
        let attribute = if sent {
            crate::baggage_keys::of(span.context())
        } else {
            crate::baggage_keys::attribute(&lens_core::baggage::BaggageList::new())
        };
        span.span().set_attribute(attribute);
    }

    /// Starts the span `builder` describes under `parent`, and the call's metrics (with a
    /// meter) with the first `metric_attributes` of its attributes (the adapter's, never the
    /// hook's). A `LiveSpan` is large (the metric state is inline) and each move of it is a
    /// copy: it is built where it is returned, and without a meter no metric state is moved.
    #[inline(never)]
    fn live(&self, builder: SpanBuilder, parent: &Context, metric_attributes: usize) -> LiveSpan {
        let start = start_of(&builder);
        let on_failure = self.on_failure.clone();
        let gen_ai = self.gen_ai.clone();
        match &self.metrics.recorder {
            None => {
                let cx = self.start_span(builder, parent, gen_ai.as_deref());
                LiveSpan {
                    cx,
                    gen_ai,
                    start,
                    on_failure,
                    metrics: None,
                }
            }
            Some(recorder) => {
                let attributes = builder.attributes.as_deref().unwrap_or_default();
                let metrics = CallMetrics::start(
                    recorder,
                    &attributes[..metric_attributes.min(attributes.len())],
                );
                let cx = self.start_span(builder, parent, gen_ai.as_deref());
                LiveSpan {
                    cx,
                    gen_ai,
                    start,
                    on_failure,
                    metrics: Some(metrics),
                }
            }
        }
    }

    /// Starts the span `builder` describes under `parent`, with the GenAI operation's
    /// attributes when the call is one ([`LiveSpan::set_gen_ai`] records the same).
    #[inline]
    fn start_span(
        &self,
        builder: SpanBuilder,
        parent: &Context,
        gen_ai: Option<&GenAi>,
    ) -> Context {
        let cx = self
            .tracer
            .start(builder, parent, self.random_flag_on_new_traces);
        if let Some(gen_ai) = gen_ai {
            let mut attributes = Vec::with_capacity(3);
            gen_ai.push_attributes(&mut attributes);
            cx.span().set_attributes(attributes);
        }
        cx
    }

    /// Starts a SERVER span for `request` from what the inbound policy let through: the trusted
    /// remote span as parent (its baggage kept), else a new root with a Link to it (Link) or
    /// without (Ignore). Named by the span-name hook, else `default_name()`; its attributes are
    /// `attributes` (the adapter's), then the request hook's.
    #[inline]
    pub fn start_server(
        &self,
        request: &A::Request<'_>,
        default_name: impl FnOnce() -> Cow<'static, str>,
        mut attributes: Vec<KeyValue>,
        inbound: InboundContext,
    ) -> LiveSpan {
        let metric_attributes = attributes.len();
        self.push_baggage_keys(&mut attributes, &inbound.parent);
        let name = self.name_and_attributes(request, default_name, &mut attributes);
        let mut builder = builder(name, SpanKind::Server, attributes);
        if let Some(link) = inbound.link {
            builder.links = Some(vec![Link::with_context(link)]);
        }
        self.live(builder, &inbound.parent, metric_attributes)
    }

    /// Starts a span of `kind` for `request` under `parent` with `links` (the messaging
    /// lifecycle): named and with attributes as [`SpanOptions::start_server`] has them;
    /// `attributes` are the adapter's and how many of the first of them the call's metrics see.
    #[inline]
    pub(crate) fn start_kind(
        &self,
        request: &A::Request<'_>,
        default_name: impl FnOnce() -> Cow<'static, str>,
        (mut attributes, metric_attributes): (Vec<KeyValue>, usize),
        kind: SpanKind,
        parent: &Context,
        links: Vec<Link>,
    ) -> LiveSpan {
        let name = self.name_and_attributes(request, default_name, &mut attributes);
        let mut builder = builder(name, kind, attributes);
        if !links.is_empty() {
            builder.links = Some(links);
        }
        self.live(builder, parent, metric_attributes)
    }

    /// Starts a CLIENT span for `request` under `parent`, named and with attributes as
    /// [`SpanOptions::start_server`] has them; the trace's random flag kept, or set on a new
    /// trace.
    #[inline]
    pub fn start_client(
        &self,
        request: &A::Request<'_>,
        default_name: impl FnOnce() -> Cow<'static, str>,
        mut attributes: Vec<KeyValue>,
        parent: &Context,
    ) -> LiveSpan {
        let metric_attributes = attributes.len();
        let name = self.name_and_attributes(request, default_name, &mut attributes);
        self.live(
            builder(name, SpanKind::Client, attributes),
            parent,
            metric_attributes,
        )
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

/// The hooks a response runs, set together: `None` in [`Responder`] while neither is set.
struct ResponseHooks<A: Adapter> {
    classifier: Option<Arc<ClassifierFn<A>>>,
    response_attributes: Option<Arc<ResponseAttributesFn<A>>>,
}

impl<A: Adapter> Clone for ResponseHooks<A> {
    fn clone(&self) -> Self {
        ResponseHooks {
            classifier: self.classifier.clone(),
            response_attributes: self.response_attributes.clone(),
        }
    }
}

/// Records what a response means on its span, with the hooks of one adapter: its classifier
/// (else the adapter's default) and its response-attribute hook. An adapter's response future
/// or body holds one ([`SpanOptions::responder`]) and calls [`Responder::respond`] (or
/// [`Responder::outcome`] then [`Responder::record`]) once the response's status is known.
pub struct Responder<A: Adapter> {
    hooks: Option<Arc<ResponseHooks<A>>>,
}

impl<A: Adapter> Clone for Responder<A> {
    fn clone(&self) -> Self {
        Responder {
            hooks: self.hooks.clone(),
        }
    }
}

impl<A: Adapter> Default for Responder<A> {
    /// The adapter's default classifier and no response hook.
    fn default() -> Self {
        Responder { hooks: None }
    }
}

impl<A: Adapter> fmt::Debug for Responder<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hooks = self.hooks.as_deref();
        f.debug_struct("Responder")
            .field("classifier", &hooks.is_some_and(|h| h.classifier.is_some()))
            .field(
                "response_attributes",
                &hooks.is_some_and(|h| h.response_attributes.is_some()),
            )
            .finish()
    }
}

impl<A: Adapter> Responder<A> {
    fn hooks(&self) -> ResponseHooks<A> {
        match self.hooks.as_deref() {
            Some(hooks) => hooks.clone(),
            None => ResponseHooks {
                classifier: None,
                response_attributes: None,
            },
        }
    }

    /// What `status` means: the classifier's outcome, else `default`'s (the adapter's).
    #[inline]
    pub fn outcome<D>(&self, status: &A::Status, default: &D) -> Outcome
    where
        D: Classify<A::Status> + ?Sized,
    {
        match self.hooks.as_deref().and_then(|h| h.classifier.as_deref()) {
            Some(classifier) => classifier.classify(status),
            None => default.classify(status),
        }
    }

    /// Records `outcome` on `span` ([`LiveSpan::record`]: the failure hook runs on a failure),
    /// then runs the response-attribute hook on `response`.
    #[inline]
    pub fn record(&self, span: &mut LiveSpan, outcome: Outcome, response: &A::Response<'_>) {
        span.record(outcome);
        if let Some(hook) = self
            .hooks
            .as_deref()
            .and_then(|h| h.response_attributes.as_deref())
        {
            hook(response, &span.span());
        }
    }

    /// [`Responder::outcome`] of `status`, then [`Responder::record`].
    #[inline]
    pub fn respond<D>(
        &self,
        span: &mut LiveSpan,
        status: &A::Status,
        response: &A::Response<'_>,
        default: &D,
    ) where
        D: Classify<A::Status> + ?Sized,
    {
        self.record(span, self.outcome(status, default), response);
    }
}

/// A builder with the fields set directly: `with_attributes` would collect the vector again.
/// Its start time is read here rather than by the SDK (the same one clock read), so that the
/// span's marks ([`crate::stream`]) are measured from the start the span records.
#[inline]
fn builder(name: Cow<'static, str>, kind: SpanKind, attributes: Vec<KeyValue>) -> SpanBuilder {
    SpanBuilder {
        name,
        span_kind: Some(kind),
        attributes: Some(attributes),
        start_time: Some(opentelemetry::time::now()),
        ..SpanBuilder::default()
    }
}

/// The start time `builder` sets (now, when it sets none).
#[inline]
fn start_of(builder: &SpanBuilder) -> SystemTime {
    builder.start_time.unwrap_or_else(opentelemetry::time::now)
}

/// A started span until it ends: ends when [`LiveSpan::end`] or [`LiveSpan::end_with`] is
/// called or when it is dropped (the response was dropped, the call cancelled), whichever comes
/// first, so that every path ends it exactly once. Made only by the lifecycle
/// ([`SpanOptions::start_server`], [`SpanOptions::start_client`], [`in_span`]).
///
/// With metrics on ([`SpanOptions::set_meter`]), the call's duration is recorded when the span
/// ends, with the metric attributes the adapter set ([`LiveSpan::set_attribute`], `error.type`).
pub struct LiveSpan {
    cx: Context,
    /// The GenAI operation the call is, when the user said so ([`crate::genai`]).
    gen_ai: Option<Arc<GenAi>>,
    /// When the span started (the time its record carries).
    start: SystemTime,
    on_failure: Option<Arc<OnFailureFn>>,
    metrics: Option<CallMetrics>,
}

impl fmt::Debug for LiveSpan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LiveSpan")
            .field("span", &self.cx.span().span_context())
            .field("on_failure", &self.on_failure.is_some())
            .field("metrics", &self.metrics.is_some())
            .finish()
    }
}

impl LiveSpan {
    /// The Context holding the span (the parent of the work done for the call).
    pub fn context(&self) -> &Context {
        &self.cx
    }

    /// The span.
    pub fn span(&self) -> SpanRef<'_> {
        self.cx.span()
    }

    /// When the span started: the start time its record carries.
    pub fn start_time(&self) -> SystemTime {
        self.start
    }

    /// The call is the GenAI operation `gen_ai` ([`crate::genai`]): its attributes go on the
    /// span now, its figures when the response is streamed (replacing an operation set before).
    pub fn set_gen_ai(&mut self, gen_ai: Arc<GenAi>) {
        let mut attributes = Vec::with_capacity(3);
        gen_ai.push_attributes(&mut attributes);
        self.cx.span().set_attributes(attributes);
        self.gen_ai = Some(gen_ai);
    }

    /// The first chunk passed `seconds` after the span started ([`crate::stream`]).
    pub(crate) fn first_chunk(&mut self, seconds: f64) {
        let Some(gen_ai) = &self.gen_ai else {
            return;
        };
        self.cx.span().set_attribute(KeyValue::new(
            crate::genai::RESPONSE_TIME_TO_FIRST_CHUNK,
            seconds,
        ));
        if let Some(metrics) = &self.metrics {
            metrics.record_time_to_first_chunk(gen_ai, seconds);
        }
    }

    /// A streamed response of `chunks` chunks, the first at `first`, ended complete now.
    pub(crate) fn stream_completed(&mut self, first: SystemTime, chunks: u64) {
        let (Some(gen_ai), Some(metrics)) = (&self.gen_ai, &self.metrics) else {
            return;
        };
        if chunks < 2 {
            return;
        }
        let elapsed = opentelemetry::time::now()
            .duration_since(first)
            .unwrap_or_default()
            .as_secs_f64();
        metrics.record_time_per_chunk(gen_ai, elapsed / (chunks - 1) as f64);
    }

    fn attach(&self) -> ContextGuard {
        self.cx.clone().attach()
    }

    /// Runs `f` with the span's Context current (a service's `call`, which may do work of its
    /// own before it returns its future).
    #[inline]
    pub fn in_scope<R>(&self, f: impl FnOnce() -> R) -> R {
        let _guard = self.attach();
        f()
    }

    /// Sets `attribute` on the span, and on the call's metrics when it is one of theirs (a
    /// response status code).
    pub fn set_attribute(&mut self, attribute: KeyValue) {
        if let Some(metrics) = &mut self.metrics {
            metrics.set(&attribute);
        }
        self.cx.span().set_attribute(attribute);
    }

    /// `n` more bytes of the response body went out (counted for the body-size metric, when it
    /// is on).
    #[inline]
    pub fn add_body_bytes(&mut self, n: usize) {
        if let Some(metrics) = &mut self.metrics {
            metrics.add_body_bytes(n);
        }
    }

    /// The request body has `n` bytes, known before it is sent (a client's buffered body):
    /// recorded as the request body size when the span ends, with body sizes on.
    #[inline]
    pub fn set_request_body_size(&mut self, n: u64) {
        if let Some(metrics) = &mut self.metrics {
            metrics.set_request_body_size(n);
        }
    }

    /// With body sizes on, a counter of the request body's bytes as they are read (wrap the
    /// body in a [`CountedBody`](crate::CountedBody) with it): the bytes read when the span
    /// ends are recorded as the request body size (a body the handler read in part, or not at
    /// all, records what was read). `None` with body sizes off: leave the body as it is.
    pub fn count_request_body(&mut self) -> Option<BodyBytes> {
        self.metrics.as_mut()?.count_request_body()
    }

    /// With body sizes on, a counter for a response body that outlives the span (an adapter
    /// that ends its span before the body, unlike [`TracedBody`](crate::TracedBody)): the size is recorded, with the span's metric
    /// attributes as they are now, when the body ends or the counter is dropped. Call it once
    /// the status code and the outcome are recorded. `None` with body sizes off.
    pub fn count_response_body(&mut self) -> Option<BodyBytes> {
        self.metrics.as_mut()?.count_response_body()
    }

    /// Messaging: the operation sent or delivered `n` messages, counted by
    /// `messaging.client.sent.messages` / `messaging.client.consumed.messages` when the span
    /// ends (1 unless set).
    #[inline]
    pub fn set_messages(&mut self, n: u64) {
        if let Some(metrics) = &mut self.metrics {
            metrics.set_messages(n);
        }
    }

    /// Records `outcome`: on a failure, `error.type` (on the span and the call's metrics) and
    /// status Error, then the failure hook.
    pub fn record(&mut self, outcome: Outcome) {
        if let Outcome::Failure {
            error_type,
            description,
        } = outcome
        {
            let error_type = KeyValue::new(ERROR_TYPE, error_type);
            if let Some(metrics) = &mut self.metrics {
                metrics.set(&error_type);
            }
            let span = self.cx.span();
            let error_type = error_type.value;
            span.set_attribute(KeyValue::new(ERROR_TYPE, error_type.clone()));
            if let Some(hook) = &self.on_failure {
                hook(
                    &Failure {
                        error_type: &error_type,
                        description: &description,
                    },
                    &span,
                );
            }
            span.set_status(Status::Error { description });
        }
    }

    /// Records `outcome` and ends the span.
    pub fn end_with(mut self, outcome: Outcome) {
        self.record(outcome);
    }

    /// Ends the span.
    pub fn end(self) {}
}

impl Drop for LiveSpan {
    fn drop(&mut self) {
        // The metrics first: whoever sees the span ended sees its duration recorded.
        if let Some(metrics) = self.metrics.take() {
            metrics.end();
        }
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
    /// Made by [`in_span`].
    pub struct InSpan<F> {
        #[pin]
        inner: F,
        span: Option<LiveSpan>,
    }
}

/// Runs `future` inside a span started now from `builder` under `parent` and made current in
/// the Context current now (a Ray-style remote call: the carrier's span is the parent, the
/// caller's Context stays current, its baggage not replaced by the carrier's); the trace's random
/// flag kept, or set on a new trace. The span ends when the future completes, is dropped, or
/// panics (`error.type` = `panic`).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use opentelemetry::Context;
/// use opentelemetry::trace::{SpanBuilder, TraceContextExt, TracerProvider};
///
/// let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
/// let tracer = provider.tracer("doc");
/// let work = async { Context::current().span().span_context().is_valid() };
/// let traced = lens_span::in_span(&tracer, SpanBuilder::from_name("work"), &Context::new(), work);
/// assert!(traced.await);
/// # }
/// ```
pub fn in_span<T, F>(tracer: &T, builder: SpanBuilder, parent: &Context, future: F) -> InSpan<F>
where
    T: Tracer,
    T::Span: Send + Sync + 'static,
{
    let mut builder = builder;
    let start = *builder
        .start_time
        .get_or_insert_with(opentelemetry::time::now);
    let span = builder.start_with_context(tracer, parent);
    let cx = context_with_span_in(&Context::current(), parent, span, true);
    InSpan {
        inner: future,
        span: Some(LiveSpan {
            cx,
            gen_ai: None,
            start,
            on_failure: None,
            metrics: None,
        }),
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
