//! The CONSUMER `process` span of a message whose carrier was rejected whole before any field of
//! it could be read (a context frame or field that is not JSON, not a map, not UTF-8 or over
//! the limits): a new trace whose `lens.trace.new_root` names the rule that rejected it.

use opentelemetry::trace::{Link, SpanKind, TraceContextExt};
use opentelemetry::{Context, KeyValue};

use crate::lifecycle::{Adapter, LiveSpan, SpanOptions};
use crate::messaging::{DestinationPolicy, Operation};

impl<A: Adapter> SpanOptions<A, DestinationPolicy> {
    /// Starts the CONSUMER `process` span of one message whose carrier was rejected whole by
    /// the rule at `anchor` of docs/propagation-rules.md (`json-carrier-rejected`): a new
    /// trace, `lens.trace.new_root` = `rejected:<anchor>`, linked to the span of `current`
    /// when it has one. Named and with attributes as [`SpanOptions::start_process`] has them.
    ///
    /// ```
    /// use lens_core::InboundPolicy;
    /// use lens_span::messaging::{DestinationPolicy, Operation, OperationStatus, OperationType};
    /// use lens_span::{Adapter, SpanOptions};
    /// use opentelemetry::Context;
    /// use opentelemetry::trace::TracerProvider;
    /// use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
    ///
    /// struct Demo;
    /// impl Adapter for Demo {
    ///     type Request<'a> = str;
    ///     type Response<'a> = ();
    ///     type Status = OperationStatus;
    /// }
    /// let exporter = InMemorySpanExporter::default();
    /// let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
    /// let options: SpanOptions<Demo, DestinationPolicy> =
    ///     SpanOptions::new(provider.tracer("demo"), InboundPolicy::trust_all().into());
    /// let operation = Operation::new("demo", "process", OperationType::Process).with_destination("jobs", false);
    /// options.start_process_rejected("jobs", &operation, "json-carrier-rejected", &Context::new()).end();
    /// let span = &exporter.get_finished_spans().unwrap()[0];
    /// assert!(span.attributes.iter().any(|kv| kv.key.as_str() == "lens.trace.new_root"
    ///     && kv.value.as_str() == "rejected:json-carrier-rejected"));
    /// ```
    pub fn start_process_rejected(
        &self,
        request: &A::Request<'_>,
        operation: &Operation<'_>,
        anchor: &str,
        current: &Context,
    ) -> LiveSpan {
        let (mut attributes, metric_attributes) = operation.attributes();
        let mut cause = String::with_capacity(9 + anchor.len());
        cause.push_str("rejected:");
        cause.push_str(anchor);
        attributes.push(KeyValue::new(crate::new_root::NEW_ROOT, cause));
        let current_span = current.span();
        let current_sc = current_span.span_context();
        let links = if current_sc.is_valid() {
            vec![Link::with_context(current_sc.clone())]
        } else {
            Vec::new()
        };
        self.start_kind(
            request,
            || operation.span_name(),
            (attributes, metric_attributes),
            SpanKind::Consumer,
            &Context::new(),
            links,
        )
    }
}
