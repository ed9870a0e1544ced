//! Starting a span: its name and attributes, the parent, the inbound extraction.

use std::borrow::Cow;
use std::net::IpAddr;
use std::time::SystemTime;

use http::HeaderMap;
use lens_core::HeaderCarrier;
use lens_core::policy::{InboundContext, InboundPolicy, InboundRequest};
use opentelemetry::trace::{Link, SpanBuilder, SpanKind, TraceContextExt};
use opentelemetry::{Context, KeyValue};

use crate::genai::GenAi;
use crate::metrics::CallMetrics;

use super::adapter::Adapter;
use super::live_span::LiveSpan;
use super::options::SpanOptions;

impl<A: Adapter, P> SpanOptions<A, P> {
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

/// A builder with the fields set directly: `with_attributes` would collect the vector again.
/// Its start time is read here rather than by the SDK (the same one clock read), so that the
/// span's marks ([`crate::stream`]) are measured from the start the span records.
#[inline]
pub(super) fn builder(
    name: Cow<'static, str>,
    kind: SpanKind,
    attributes: Vec<KeyValue>,
) -> SpanBuilder {
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
pub(super) fn start_of(builder: &SpanBuilder) -> SystemTime {
    builder.start_time.unwrap_or_else(opentelemetry::time::now)
}
