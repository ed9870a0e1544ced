//! lens-tonic: W3C trace context and baggage across gRPC ([tonic] 0.14) and Ray-style remote
//! calls, wire-compatible with NVIDIA NeMo Lens.
//!
//! ```
//! use lens_core::Carrier;
//! use lens_tonic::{extract_ray_context, inject_metadata, extract_metadata};
//! use opentelemetry::trace::TraceContextExt;
//!
//! // A Python NeMo Lens driver sent this carrier as `_otel_carrier`.
//! let carrier = Carrier::from_json_bytes(
//!     br#"{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "baggage": "job=rl"}"#,
//! ).unwrap();
//! let cx = extract_ray_context(Some(&carrier));
//!
//! // The actor calls a gRPC service on behalf of that call: same trace, same baggage.
//! let mut metadata = tonic::metadata::MetadataMap::new();
//! inject_metadata(&cx, &mut metadata);
//! assert_eq!(metadata.get("traceparent").unwrap(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
//! assert_eq!(metadata.get("baggage").unwrap(), "job=rl");
//!
//! let server_side = extract_metadata(&metadata);
//! assert_eq!(server_side.span().span_context().trace_id(), cx.span().span_context().trace_id());
//! ```
//!
//! - gRPC clients: [`ClientInterceptor`] (a tonic interceptor that injects the current Context
//!   into request metadata) or [`ClientLayer`] (a tower layer for channels with a CLIENT span per
//!   call).
//! - gRPC servers: [`ServerLayer`]: extraction through lens's [`InboundPolicy`](lens_core::policy::InboundPolicy),
//!   a SERVER span per call with the RPC semantic-convention attributes (and, on a span that
//!   starts a new trace, `lens.trace.new_root` saying why: see [`lens_span::new_root`]), the
//!   status code read from the response headers or trailers (streaming responses included);
//!   a call dropped before its status (the client went away) ends with code 1, `CANCELLED`.
//! - Both layers run lens-span's span lifecycle, shared with lens-axum and lens-reqwest, with
//!   the same knobs under the same names (`with_tracer`, `with_propagator`,
//!   `with_global_propagator`, `with_inbound_policy` / `with_outbound_policy`, `with_filter`,
//!   `with_span_name`, `with_random_flag_on_new_traces`, `with_request_attributes`,
//!   `with_response_attributes`, `with_classifier`, `with_on_failure`, `with_baggage_keys`) plus
//!   `with_rpc_conventions`. A classifier sees the call's [`tonic::Code`]; the default is the
//!   side's ([`SpanSide`]: any code but OK on clients, the six server codes of the conventions
//!   on servers), classified when the status arrives (in the trailers, at the end of a stream). The RPC attributes follow
//!   `OTEL_SEMCONV_STABILITY_OPT_IN` (read when a layer is built): unset, the attributes before
//!   semantic conventions 1.37; `rpc`, those of 1.42; `rpc/dup`, both (see [`lens_span::rpc`]).
//! - Metadata: [`MetadataCarrier`] (lowercase keys, ASCII values only, `-bin` keys skipped).
//! - Ray-style remote calls: [`inject_ray_context`], [`extract_ray_context`], [`RemoteCall`]
//!   (arguments plus `_otel_carrier`), [`traced_remote_call`], [`dispatch_with_context`].
//! - [`JsonCodec`]: a tonic codec for serde messages, for services written without protobuf.
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod adapter;
mod call;
mod client;
mod codec;
mod error;
mod metadata;
mod method;
mod ray;
mod response;
mod server;
pub mod status;

pub use adapter::{RequestInfo, ResponseInfo};
pub use call::TRACER_NAME;
pub use client::{ClientInterceptor, ClientLayer, ClientService};
pub use codec::{JsonCodec, JsonDecoder, JsonEncoder};
pub use error::Error;
/// What the knobs take: a filter's decision, a classifier and its outcome (the default
/// classifier is [`SpanSide`]'s), what the failure hook sees, and the RPC conventions.
pub use lens_span::FilterDecision;
pub use lens_span::classify::{Classify, Failure, Outcome};
/// What a call says it is with the GenAI opt-in (`with_gen_ai`, or per call: docs/streaming.md).
pub use lens_span::genai::GenAi;
pub use lens_span::rpc::RpcConventions;
pub use metadata::{MetadataCarrier, extract_metadata, inject_metadata};
pub use method::GrpcMethod;
pub use ray::{
    OTEL_CARRIER_FIELD, RAY_TRACER_NAME, RemoteCall, dispatch_with_context, extract_ray_context,
    inject_ray_context, traced_remote_call, traced_remote_call_with_tracer,
};
pub use response::{CallEnd, ResponseBody, ResponseFuture};
pub use server::{ServerLayer, ServerService};
pub use status::SpanSide;
