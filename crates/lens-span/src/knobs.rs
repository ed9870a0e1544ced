//! [`span_knobs!`](crate::span_knobs): the knobs every adapter has, under the same names and with
//! the same documentation in every crate.

/// Writes the `with_*` knobs of an adapter type that has
/// `fn options_mut(&mut self) -> &mut lens_span::SpanOptions<A, P>`:
/// `with_tracer`, `with_propagator`, `with_global_propagator`, `with_random_flag_on_new_traces`,
/// `with_filter`, `with_span_name`, `with_request_attributes`, `with_response_attributes`,
/// `with_classifier`, `with_on_failure`, `with_meter`, `with_global_meter`, `with_baggage_keys`,
/// and the policy knob named in the call
/// (`with_inbound_policy` or `with_outbound_policy`, its argument the policy's type or
/// `impl Into<` it `>`); and `Default` as the type's `new()`.
///
/// ```text
/// lens_span::span_knobs!(ServerLayer, request: RequestInfo<'_>, response: ResponseInfo<'_>,
///     status: http::StatusCode, policy: with_inbound_policy(lens_core::policy::InboundPolicy));
/// ```
#[macro_export]
macro_rules! span_knobs {
    ($ty:ty, request: $req:ty, response: $res:ty, status: $status:ty,
        policy: $policy_fn:ident($policy:ty)) => {
        impl ::std::default::Default for $ty {
            /// The adapter's `new()`.
            fn default() -> Self {
                Self::new()
            }
        }

        impl $ty {
            /// Creates spans with this tracer (default: the adapter's scope, with its crate
            /// version and the semantic conventions' schema URL, from the global tracer provider
            /// as it was when the adapter was built).
            pub fn with_tracer<T>(mut self, tracer: T) -> Self
            where
                T: $crate::__private::Tracer + Send + Sync + 'static,
                T::Span: Send + Sync + 'static,
            {
                self.options_mut().set_tracer(tracer);
                self
            }

            /// Reads and writes trace context with this lens propagator instead of lens's
            /// process-wide one.
            pub fn with_propagator(mut self, propagator: $crate::__private::W3cPropagator) -> Self {
                self.options_mut()
                    .set_propagation($crate::__private::Propagation::with(propagator));
                self
            }

            /// Reads and writes trace context with the propagator installed globally in
            /// opentelemetry (`global::set_text_map_propagator`: B3, a composite, ...) instead of
            /// lens's. The policy still decides what is trusted and what goes where.
            pub fn with_global_propagator(mut self) -> Self {
                self.options_mut()
                    .set_propagation($crate::__private::Propagation::global());
                self
            }

            #[doc = concat!("Decides per request what the propagated context may do (docs/propagation-rules.md#trust); default: ",
                "trust every caller, send everything everywhere (NeMo Lens parity).")]
            pub fn $policy_fn(mut self, policy: $policy) -> Self {
                // `$policy` may be `impl Into<P>` (a policy with a simpler one as a shorthand).
                self.options_mut().set_policy($crate::__private::policy_into(policy));
                self
            }

            /// Whether a trace this adapter starts (no trusted parent span) is sent on with the
            /// W3C random flag (`-02`/`-03`, Trace Context Level 2). On by default, right for
            /// opentelemetry_sdk's default random id generator; turn it off with an id generator
            /// whose trace ids are not random. A trace that comes in keeps its own flag.
            pub fn with_random_flag_on_new_traces(mut self, on: bool) -> Self {
                self.options_mut().set_random_flag_on_new_traces(on);
                self
            }

            /// Decides per request whether it gets a span and, for clients, whether trace
            /// context is injected: `false` (or `FilterDecision::SKIP`) leaves the request
            /// untraced (e.g. health checks), `FilterDecision::PROPAGATE_ONLY` sends the
            /// caller's context without a span of its own.
            pub fn with_filter<F, D>(mut self, filter: F) -> Self
            where
                F: Fn(&$req) -> D + Send + Sync + 'static,
                D: Into<$crate::__private::FilterDecision>,
            {
                self.options_mut()
                    .set_filter(move |req: &$req| filter(req).into());
                self
            }

            /// Names each span with `name` instead of the adapter's default name.
            pub fn with_span_name<F>(mut self, name: F) -> Self
            where
                F: Fn(&$req) -> ::std::borrow::Cow<'static, str> + Send + Sync + 'static,
            {
                self.options_mut()
                    .set_span_name(move |req: &$req| name(req));
                self
            }

            /// Adds attributes from each request to its span, when the span starts (after the
            /// adapter's own).
            pub fn with_request_attributes<F>(mut self, hook: F) -> Self
            where
                F: Fn(&$req, &mut ::std::vec::Vec<$crate::__private::KeyValue>) + Send + Sync + 'static,
            {
                self.options_mut()
                    .set_request_attributes(move |req: &$req, attributes: &mut ::std::vec::Vec<$crate::__private::KeyValue>| hook(req, attributes));
                self
            }

            /// Adds attributes from each response to its span, when the response (for gRPC: its
            /// status) arrives.
            pub fn with_response_attributes<F>(mut self, hook: F) -> Self
            where
                F: Fn(&$res, &$crate::__private::SpanRef<'_>) + Send + Sync + 'static,
            {
                self.options_mut()
                    .set_response_attributes(move |res: &$res, span: &$crate::__private::SpanRef<'_>| hook(res, span));
                self
            }

            /// Decides which responses are errors instead of the adapter's classifier: a
            /// `Classify` (the classify module of lens-span) or a closure from the status to an
            /// `Outcome`. A failure sets `error.type` and the span status Error; a streaming
            /// response is classified when its status is known (for gRPC: at the end of the
            /// stream). Transport errors, failed bodies and panics stay failures.
            pub fn with_classifier<C>(mut self, classifier: C) -> Self
            where
                C: $crate::classify::Classify<$status> + Send + Sync + 'static,
            {
                self.options_mut().set_classifier(classifier);
                self
            }

            /// Records the request metrics of the semantic conventions (the call's duration,
            /// recorded when its span ends; docs/metrics.md) with `meter`. Off by default: without
            /// a meter nothing is built per request.
            pub fn with_meter(mut self, meter: $crate::__private::Meter) -> Self {
                self.options_mut().set_meter(meter);
                self
            }

            /// Records the request metrics with the adapter's meter (its scope, crate version
            /// and the conventions' schema URL) from the global meter provider as it is now
            /// (install the provider first, or use `with_meter`).
            pub fn with_global_meter(mut self) -> Self {
                self.options_mut().set_global_meter();
                self
            }

            /// Records on each span the keys of the baggage its call carried, never the values:
            /// `lens.baggage.keys`, a string array in arrival order, empty for no baggage
            /// (lens_span::baggage_keys). A server or consumer records what the inbound policy
            /// let in, a client or producer what the outbound policy let out; `lens check`
            /// compares the two across a hop (docs/doctor.md#baggage-dropped). Off by default:
            /// nothing is built per request.
            pub fn with_baggage_keys(mut self, on: bool) -> Self {
                self.options_mut().set_baggage_keys(on);
                self
            }

            /// Runs `hook` whenever a span records a failure: a response the classifier calls an
            /// error, a transport error, a failed body, a panic. It sees the failure
            /// (`error.type`, the status description) and the span, to add attributes or events,
            /// log, or count.
            pub fn with_on_failure<F>(mut self, hook: F) -> Self
            where
                F: Fn(&$crate::classify::Failure<'_>, &$crate::__private::SpanRef<'_>) + Send + Sync + 'static,
            {
                self.options_mut()
                    .set_on_failure(move |failure: &$crate::classify::Failure<'_>, span: &$crate::__private::SpanRef<'_>| hook(failure, span));
                self
            }
        }
    };
}
