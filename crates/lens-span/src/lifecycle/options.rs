//! [`SpanOptions`]: the knobs every adapter has, and how they are set.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use lens_core::random_flag::SpanStarter;
use opentelemetry::KeyValue;
use opentelemetry::trace::{SpanRef, Tracer};

use crate::classify::{Classify, Failure};
use crate::genai::GenAi;
use crate::metrics::{Instruments, OptIn, Recorder};
use crate::propagation::Propagation;

use super::adapter::{
    Adapter, FilterDecision, FilterFn, OnFailureFn, RequestAttributesFn, SpanNameFn,
};
use super::responder::Responder;

/// The knobs every adapter has, with `P` its inbound or outbound policy; set through the
/// adapter's `with_*` methods ([`span_knobs!`](crate::span_knobs)), which call the `set_*`
/// methods here. An adapter reads them only through the lifecycle: [`SpanOptions::filter_decision`],
/// [`SpanOptions::extract_inbound`], [`SpanOptions::start_server`] or
/// [`SpanOptions::start_client`] (which run the span-name and request-attribute hooks), and
/// [`SpanOptions::responder`] (the classifier and the response-attribute hook).
pub struct SpanOptions<A: Adapter, P> {
    pub(super) tracer: Arc<dyn SpanStarter>,
    pub(super) propagation: Propagation,
    pub(super) policy: P,
    pub(super) random_flag_on_new_traces: bool,
    pub(super) filter: Option<Arc<FilterFn<A>>>,
    pub(super) span_name: Option<Arc<SpanNameFn<A>>>,
    pub(super) request_attributes: Option<Arc<RequestAttributesFn<A>>>,
    pub(super) responder: Responder<A>,
    pub(super) on_failure: Option<Arc<OnFailureFn>>,
    pub(super) metrics: MetricsConfig,
    pub(super) baggage_keys: bool,
    pub(super) gen_ai: Option<Arc<GenAi>>,
}

/// The metrics knobs: the adapter's kind of call, the meter (none: metrics off), the opt-ins,
/// and the instruments built from them.
#[derive(Clone, Debug)]
pub(super) struct MetricsConfig {
    pub(super) scope: (&'static str, &'static str),
    pub(super) kind: Option<Instruments>,
    pub(super) meter: Option<opentelemetry::metrics::Meter>,
    pub(super) opt_in: OptIn,
    pub(super) recorder: Option<Arc<Recorder>>,
}

impl MetricsConfig {
    pub(super) fn rebuild(&mut self) {
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
    /// ([`LiveSpan::add_body_bytes`](crate::LiveSpan::add_body_bytes)), of a body counted through [`LiveSpan::count_request_body`](crate::LiveSpan::count_request_body)
    /// or [`LiveSpan::count_response_body`](crate::LiveSpan::count_response_body), or a size known in advance
    /// ([`LiveSpan::set_request_body_size`](crate::LiveSpan::set_request_body_size)).
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
}
