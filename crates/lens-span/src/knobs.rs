//! [`span_knobs!`](crate::span_knobs): the knobs every adapter has, under the same names and with
//! the same documentation in every crate.

/// Writes the `with_*` knobs of an adapter type that has
/// `fn options_mut(&mut self) -> &mut lens_span::SpanOptions<A, P>`:
/// `with_tracer`, `with_propagator`, `with_global_propagator`, `with_random_flag_on_new_traces`,
/// `with_filter`, `with_span_name`, `with_request_attributes`, `with_response_attributes`, and
/// the policy knob named in the call (`with_inbound_policy` or `with_outbound_policy`); and
/// `Default` as the type's `new()`; with `renamed_policy: NAME`, the deprecated old name of the
/// policy knob.
///
/// ```text
/// lens_span::span_knobs!(ServerLayer, request: RequestInfo<'_>, response: ResponseInfo<'_>,
///     policy: with_inbound_policy(lens_core::policy::InboundPolicy));
/// ```
#[macro_export]
macro_rules! span_knobs {
    ($ty:ty, request: $req:ty, response: $res:ty, policy: $policy_fn:ident($policy:ty)
        $(, renamed_policy: $old_policy_fn:ident)?) => {
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
                self.options_mut().tracer = ::std::sync::Arc::new(tracer);
                self
            }

            /// Reads and writes trace context with this lens propagator instead of lens's
            /// process-wide one.
            pub fn with_propagator(mut self, propagator: $crate::__private::W3cPropagator) -> Self {
                self.options_mut().propagation =
                    $crate::Propagation::With(::std::sync::Arc::new(propagator));
                self
            }

            /// Reads and writes trace context with the propagator installed globally in
            /// opentelemetry (`global::set_text_map_propagator`: B3, a composite, ...) instead of
            /// lens's. The policy still decides what is trusted and what goes where.
            pub fn with_global_propagator(mut self) -> Self {
                self.options_mut().propagation = $crate::Propagation::Global;
                self
            }

            $(
            #[doc = concat!("The former name of `", stringify!($policy_fn), "`.")]
            #[deprecated(since = "0.2.0", note = "renamed as in every lens adapter")]
            pub fn $old_policy_fn(self, policy: $policy) -> Self {
                self.$policy_fn(policy)
            }
            )?

            #[doc = concat!("Decides per request what the propagated context may do (docs/propagation-rules.md#trust); default: ",
                "trust every caller, send everything everywhere (NeMo Lens parity).")]
            pub fn $policy_fn(mut self, policy: $policy) -> Self {
                self.options_mut().policy = policy;
                self
            }

            /// Whether a trace this adapter starts (no trusted parent span) is sent on with the
            /// W3C random flag (`-02`/`-03`, Trace Context Level 2). On by default, right for
            /// opentelemetry_sdk's default random id generator; turn it off with an id generator
            /// whose trace ids are not random. A trace that comes in keeps its own flag.
            pub fn with_random_flag_on_new_traces(mut self, on: bool) -> Self {
                self.options_mut().random_flag_on_new_traces = on;
                self
            }

            /// Decides per request whether it gets a span and, for clients, whether trace
            /// context is injected: `false` (or [`FilterDecision::SKIP`](lens_span::FilterDecision::SKIP))
            /// leaves the request untraced (e.g. health checks),
            /// [`FilterDecision::PROPAGATE_ONLY`](lens_span::FilterDecision::PROPAGATE_ONLY)
            /// sends the caller's context without a span of its own.
            pub fn with_filter<F, D>(mut self, filter: F) -> Self
            where
                F: Fn(&$req) -> D + Send + Sync + 'static,
                D: Into<$crate::FilterDecision>,
            {
                self.options_mut().filter = Some(::std::sync::Arc::new(move |req: &$req| filter(req).into()));
                self
            }

            /// Names each span with `name` instead of the adapter's default name.
            pub fn with_span_name<F>(mut self, name: F) -> Self
            where
                F: Fn(&$req) -> ::std::borrow::Cow<'static, str> + Send + Sync + 'static,
            {
                self.options_mut().span_name = Some(::std::sync::Arc::new(name));
                self
            }

            /// Adds attributes from each request to its span, when the span starts (after the
            /// adapter's own).
            pub fn with_request_attributes<F>(mut self, hook: F) -> Self
            where
                F: Fn(&$req, &mut ::std::vec::Vec<$crate::__private::KeyValue>) + Send + Sync + 'static,
            {
                self.options_mut().request_attributes = Some(::std::sync::Arc::new(hook));
                self
            }

            /// Adds attributes from each response to its span, when the response (for gRPC: its
            /// status) arrives.
            pub fn with_response_attributes<F>(mut self, hook: F) -> Self
            where
                F: Fn(&$res, &$crate::__private::SpanRef<'_>) + Send + Sync + 'static,
            {
                self.options_mut().response_attributes = Some(::std::sync::Arc::new(hook));
                self
            }
        }
    };
}
