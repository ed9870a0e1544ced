//! What [`crate::ClientLayer`] and [`crate::ServerLayer`] share: their configuration (lens-span's
//! options plus the RPC conventions), the attributes every call span starts with, and the tower
//! plumbing of a layer and its service.

use std::sync::Arc;

use lens_span::SpanOptions;
use lens_span::metrics::Instruments;
use lens_span::rpc::RpcConventions;
use opentelemetry::{KeyValue, Value};
use opentelemetry_semantic_conventions::attribute::{SERVER_ADDRESS, SERVER_PORT};

use crate::adapter::Grpc;
use crate::method::GrpcMethod;
use crate::response::CallEnd;
use crate::status::SpanSide;

/// The instrumentation scope of the client and server spans.
pub const TRACER_NAME: &str = "lens-tonic";

/// The configuration of a layer: lens-span's options with the side's policy `P`, the RPC
/// conventions (read from the environment when the layer was built), and for clients the
/// server address given.
pub(crate) struct CallConfig<P> {
    pub(crate) options: SpanOptions<Grpc, P>,
    pub(crate) conventions: RpcConventions,
    pub(crate) server: Option<(Arc<str>, u16)>,
    /// The side's instruments under given conventions.
    pub(crate) instruments: fn(RpcConventions) -> Instruments,
}

impl<P: Clone> Clone for CallConfig<P> {
    fn clone(&self) -> Self {
        CallConfig {
            options: self.options.clone(),
            conventions: self.conventions,
            server: self.server.clone(),
            instruments: self.instruments,
        }
    }
}

impl<P> CallConfig<P> {
    /// Spans from the global tracer provider (scope `lens-tonic`, this crate's version, the
    /// conventions' schema URL), conventions from `OTEL_SEMCONV_STABILITY_OPT_IN`.
    pub(crate) fn new(policy: P, instruments: fn(RpcConventions) -> Instruments) -> Self {
        let conventions = RpcConventions::from_env();
        let mut options = SpanOptions::global(TRACER_NAME, env!("CARGO_PKG_VERSION"), policy);
        options.set_instruments(instruments(conventions));
        CallConfig {
            options,
            conventions,
            server: None,
            instruments,
        }
    }

    /// How the span of a call on `side` ends.
    pub(crate) fn call_end(&self, side: SpanSide) -> CallEnd {
        CallEnd::new(side, self.conventions, self.options.responder())
    }

    /// The attributes a call span starts with (room for `server.address`, `server.port` and
    /// the status attributes).
    pub(crate) fn rpc_attributes(&self, method: &GrpcMethod<'_>) -> Vec<KeyValue> {
        let mut attributes = Vec::with_capacity(8);
        method.push_attributes(self.conventions, &mut attributes);
        attributes
    }
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

/// `Layer` making `$service<S> { inner, config: Arc<config> }` from `$layer { config }`,
/// `Clone` and `Debug` for the service, the knob of the RPC conventions, and `options_mut` for
/// lens-span's knobs.
macro_rules! layer_and_service {
    ($layer:ident, $service:ident, $policy_fn:ident($policy:ty)) => {
        impl<S> tower_layer::Layer<S> for $layer {
            type Service = $service<S>;

            fn layer(&self, inner: S) -> Self::Service {
                $service {
                    inner,
                    config: std::sync::Arc::new(self.config.clone()),
                }
            }
        }

        impl<S: Clone> Clone for $service<S> {
            fn clone(&self) -> Self {
                $service {
                    inner: self.inner.clone(),
                    config: std::sync::Arc::clone(&self.config),
                }
            }
        }

        impl<S: std::fmt::Debug> std::fmt::Debug for $service<S> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($service))
                    .field("inner", &self.inner)
                    .finish_non_exhaustive()
            }
        }

        impl std::fmt::Debug for $layer {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($layer))
                    .field("options", &self.config.options)
                    .field("conventions", &self.config.conventions)
                    .finish_non_exhaustive()
            }
        }

        impl $layer {
            fn options_mut(&mut self) -> &mut lens_span::SpanOptions<crate::adapter::Grpc, $policy> {
                &mut self.config.options
            }

            /// Which RPC semantic conventions the spans follow, instead of what
            /// `OTEL_SEMCONV_STABILITY_OPT_IN` said when the layer was built.
            pub fn with_rpc_conventions(
                mut self,
                conventions: lens_span::rpc::RpcConventions,
            ) -> Self {
                self.config.conventions = conventions;
                self.config
                    .options
                    .set_instruments((self.config.instruments)(conventions));
                self
            }

            /// Every call is the GenAI operation `gen_ai` (off by default): the spans get the GenAI
            /// attributes (`gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`)
            /// and, on a streamed response, `gen_ai.response.time_to_first_chunk`; with metrics on, the
            /// GenAI time-to-first-chunk and time-per-chunk histograms (docs/streaming.md).
            pub fn with_gen_ai(mut self, gen_ai: lens_span::genai::GenAi) -> Self {
                self.config.options.set_gen_ai(Some(gen_ai));
                self
            }
        }

        lens_span::span_knobs!(
            $layer,
            request: crate::adapter::RequestInfo<'_>,
            response: crate::adapter::ResponseInfo<'_>,
            status: tonic::Code,
            policy: $policy_fn($policy)
        );
    };
}
pub(crate) use layer_and_service;
