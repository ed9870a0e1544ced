//! Running work inside a span: [`poll_in`] and [`in_span`] (a panic ends the span first).

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::task::Poll;

use lens_core::random_flag::context_with_span_in;
use opentelemetry::Context;
use opentelemetry::trace::{SpanBuilder, Tracer};

use crate::classify::Outcome;

use super::live_span::LiveSpan;

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
