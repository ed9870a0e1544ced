//! [`SpanStarter`]: the tracer of a layer, its spans kept as their own type.

use opentelemetry::Context;
use opentelemetry::trace::{SpanBuilder, Tracer};

use lens_core::random_flag::context_with_span;

/// Starts a span and returns `parent` with it as the current span, for a tracer of any type.
///
/// Stored as `Arc<dyn SpanStarter>` instead of a `BoxedTracer`: a `BoxedTracer`'s span is a
/// `BoxedSpan`, which the Context boxes a second time; here the Context boxes the tracer's own
/// span type once (one allocation and one dynamic call per span operation fewer).
pub(crate) trait SpanStarter: Send + Sync {
    /// `parent` with the span of `builder` started under it; the span shows the W3C random flag
    /// when its trace has it (SPEC §1, see [`context_with_span`]).
    fn start(&self, builder: SpanBuilder, parent: &Context, new_traces_random: bool) -> Context;
}

impl<T> SpanStarter for T
where
    T: Tracer + Send + Sync,
    T::Span: Send + Sync + 'static,
{
    fn start(&self, builder: SpanBuilder, parent: &Context, new_traces_random: bool) -> Context {
        let span = builder.start_with_context(self, parent);
        context_with_span(parent, span, new_traces_random)
    }
}
