//! [`Responder`]: what a response means (classification) and its attributes, on the span.

use std::fmt;
use std::sync::Arc;

use crate::classify::{Classify, Outcome};

use super::adapter::{Adapter, ClassifierFn, ResponseAttributesFn};
use super::live_span::LiveSpan;

/// The hooks a response runs, set together: `None` in [`Responder`] while neither is set.
pub(super) struct ResponseHooks<A: Adapter> {
    pub(super) classifier: Option<Arc<ClassifierFn<A>>>,
    pub(super) response_attributes: Option<Arc<ResponseAttributesFn<A>>>,
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
/// or body holds one ([`SpanOptions::responder`](crate::SpanOptions::responder)) and calls [`Responder::respond`] (or
/// [`Responder::outcome`] then [`Responder::record`]) once the response's status is known.
pub struct Responder<A: Adapter> {
    pub(super) hooks: Option<Arc<ResponseHooks<A>>>,
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
    pub(super) fn hooks(&self) -> ResponseHooks<A> {
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
