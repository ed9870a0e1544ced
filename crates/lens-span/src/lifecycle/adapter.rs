//! What an adapter plugs into the lifecycle: its [`Adapter`] types, the filter's
//! [`FilterDecision`], and the shapes of its hooks.

use std::borrow::Cow;

use opentelemetry::KeyValue;
use opentelemetry::trace::SpanRef;

use crate::classify::{Classify, Failure};

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
pub(super) type FilterFn<A> =
    dyn for<'a> Fn(&<A as Adapter>::Request<'a>) -> FilterDecision + Send + Sync;
/// The span-name callback of adapter `A`.
pub(super) type SpanNameFn<A> =
    dyn for<'a> Fn(&<A as Adapter>::Request<'a>) -> Cow<'static, str> + Send + Sync;
/// The request-attribute hook of adapter `A`: pushes attributes the span starts with.
pub(super) type RequestAttributesFn<A> =
    dyn for<'a> Fn(&<A as Adapter>::Request<'a>, &mut Vec<KeyValue>) + Send + Sync;
/// The response-attribute hook of adapter `A`: sets attributes on the span before it ends.
pub(super) type ResponseAttributesFn<A> =
    dyn for<'a, 's> Fn(&<A as Adapter>::Response<'a>, &SpanRef<'s>) + Send + Sync;
/// The classifier of adapter `A`.
pub(super) type ClassifierFn<A> = dyn Classify<<A as Adapter>::Status> + Send + Sync;
/// The failure hook: runs when a span records a failure, whatever the path (a response its
/// classifier calls an error, a transport error, a failed body, a panic).
pub(super) type OnFailureFn = dyn for<'a, 's> Fn(&Failure<'a>, &SpanRef<'s>) + Send + Sync;
