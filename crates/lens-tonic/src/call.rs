//! What [`crate::ClientLayer`] and [`crate::ServerLayer`] share: their configuration (tracer,
//! policy, propagator), the RPC span they start for each call, and the tower plumbing of a layer
//! and its service.

use std::sync::Arc;

use lens_core::W3cPropagator;
use opentelemetry::trace::{Link, SpanKind, TraceContextExt, Tracer};
use opentelemetry::{Context, KeyValue, Value};

use crate::GrpcMethod;
use crate::status::{RPC_SYSTEM, SERVER_ADDRESS, SERVER_PORT};

/// The configuration of a layer: the tracer, the side's policy `P`, and a propagator that
/// replaces lens's process-wide one.
pub(crate) struct CallConfig<T, P> {
    pub(crate) tracer: Arc<T>,
    pub(crate) policy: P,
    pub(crate) propagator: Option<Arc<W3cPropagator>>,
}

impl<T, P: Clone> Clone for CallConfig<T, P> {
    fn clone(&self) -> Self {
        CallConfig {
            tracer: Arc::clone(&self.tracer),
            policy: self.policy.clone(),
            propagator: self.propagator.clone(),
        }
    }
}

impl<T, P> CallConfig<T, P> {
    pub(crate) fn new(tracer: T, policy: P) -> Self {
        CallConfig {
            tracer: Arc::new(tracer),
            policy,
            propagator: None,
        }
    }

    /// The propagator given, else lens's process-wide one.
    pub(crate) fn propagator(&self) -> &W3cPropagator {
        match &self.propagator {
            Some(p) => p,
            None => lens_core::propagator(),
        }
    }
}

impl<T, P> CallConfig<T, P>
where
    T: Tracer + Send + Sync + 'static,
    T::Span: Send + Sync + 'static,
{
    /// Starts the `kind` span of a call to `method` under `parent` (named
    /// `{package.Service}/{Method}`, with `rpc.system`, `rpc.service`, `rpc.method` and
    /// `attributes`); the Context holding it.
    pub(crate) fn start_span(
        &self,
        method: &GrpcMethod<'_>,
        kind: SpanKind,
        attributes: Vec<KeyValue>,
        link: Option<Link>,
        parent: &Context,
    ) -> Context {
        let mut builder = self
            .tracer
            .span_builder(method.span_name())
            .with_kind(kind)
            .with_attributes(attributes);
        if let Some(link) = link {
            builder = builder.with_links(vec![link]);
        }
        let span = builder.start_with_context(&*self.tracer, parent);
        parent.with_span(span)
    }
}

/// The RPC attributes every call span has: `rpc.system` = `grpc`, `rpc.service`, `rpc.method`
/// (room for `server.address` and `server.port`).
pub(crate) fn rpc_attributes(method: &GrpcMethod<'_>) -> Vec<KeyValue> {
    let mut attributes = Vec::with_capacity(5);
    attributes.push(KeyValue::new(RPC_SYSTEM, "grpc"));
    method.push_attributes(&mut attributes);
    attributes
}

/// Adds `server.address` and `server.port` where known.
pub(crate) fn push_server_address(
    attributes: &mut Vec<KeyValue>,
    host: Option<impl Into<Value>>,
    port: Option<u16>,
) {
    if let Some(host) = host {
        attributes.push(KeyValue::new(SERVER_ADDRESS, host));
    }
    if let Some(port) = port {
        attributes.push(KeyValue::new(SERVER_PORT, i64::from(port)));
    }
}

/// `Clone` for the layer `$layer<T> { config }`, `Layer` making `$service<S, T> { inner, config:
/// Arc<config> }`, and `Clone` and `Debug` for the service.
macro_rules! layer_and_service {
    ($layer:ident, $service:ident) => {
        impl<T> Clone for $layer<T> {
            fn clone(&self) -> Self {
                $layer {
                    config: self.config.clone(),
                }
            }
        }

        impl<S, T> tower_layer::Layer<S> for $layer<T> {
            type Service = $service<S, T>;

            fn layer(&self, inner: S) -> Self::Service {
                $service {
                    inner,
                    config: std::sync::Arc::new(self.config.clone()),
                }
            }
        }

        impl<S: Clone, T> Clone for $service<S, T> {
            fn clone(&self) -> Self {
                $service {
                    inner: self.inner.clone(),
                    config: std::sync::Arc::clone(&self.config),
                }
            }
        }

        impl<S: std::fmt::Debug, T> std::fmt::Debug for $service<S, T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($service))
                    .field("inner", &self.inner)
                    .finish_non_exhaustive()
            }
        }
    };
}
pub(crate) use layer_and_service;
