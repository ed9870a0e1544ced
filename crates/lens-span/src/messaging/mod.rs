//! The messaging lifecycle: spans for a message queue per the OpenTelemetry messaging semantic
//! conventions (1.44, status Development: the keys may still change), on top of the same
//! [`SpanOptions`](crate::SpanOptions) every adapter uses (filter, span name, attribute hooks, classifier, failure
//! hook, meter).
//!
//! | operation | [`OperationType`] | span kind | span name | parent |
//! | --- | --- | --- | --- | --- |
//! | publish one message | `send` | PRODUCER | `send {destination}` | the caller's Context |
//! | pull a batch | `receive` | CLIENT | `receive {destination}` | the caller's Context; a link to every message's context |
//! | handle one message | `process` | CONSUMER | `process {destination}` | the span current when processing begins, with a link to the message's context, else the message's context ([`ConsumerParent::Ambient`]); the message's context ([`ConsumerParent::Message`]); or a new trace with a link to it ([`ConsumerParent::Links`]) |
//! | ack / nak / term | `settle` | CLIENT | `{operation} {destination}` (`ack orders`) | the process span, when current |
//!
//! A temporary destination (a reply inbox) is left out of the span name (`send`) and of the
//! metrics, and marked `messaging.destination.temporary`.
//!
//! Which context a consumer trusts is the inbound policy's to say, chosen per destination
//! ([`DestinationPolicy`]): Trust (the message's span is the parent, its baggage kept), Link
//! (a new trace with a link to it), Ignore. A CONSUMER span that starts a new trace records
//! `lens.trace.new_root` ([`crate::new_root`]) as the HTTP and gRPC servers do.
//!
//! ```
//! use std::collections::HashMap;
//! use lens_core::InboundPolicy;
//! use lens_span::messaging::{ConsumerParent, DestinationPolicy, Operation, OperationType};
//! use lens_span::{Adapter, SpanOptions};
//! use opentelemetry::Context;
//! use opentelemetry::trace::TracerProvider;
//! use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
//!
//! // What the hooks of this (made-up) adapter see: the destination.
//! struct Demo;
//! impl Adapter for Demo {
//!     type Request<'a> = str;
//!     type Response<'a> = ();
//!     type Status = lens_span::messaging::OperationStatus;
//! }
//!
//! let exporter = InMemorySpanExporter::default();
//! let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
//! let options: SpanOptions<Demo, DestinationPolicy> =
//!     SpanOptions::new(provider.tracer("demo"), DestinationPolicy::new(InboundPolicy::trust_all()));
//!
//! // A message that arrived with its headers, read through lens-core's carrier.
//! let headers = HashMap::from([(
//!     "traceparent".to_owned(),
//!     "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".to_owned(),
//! )]);
//! let carrier = lens_core::MapCarrier(&headers);
//! let operation = Operation::new("demo", "process", OperationType::Process).with_destination("orders", false);
//! let span = options.start_process("orders", &operation, &carrier, ConsumerParent::Message, &Context::current());
//! span.end();
//!
//! let spans = exporter.get_finished_spans().unwrap();
//! assert_eq!(spans[0].name, "process orders");
//! assert_eq!(spans[0].parent_span_id.to_string(), "00f067aa0ba902b7");
//! ```

mod operation;
mod outcome;
mod policies;
mod spans;

pub use operation::{Operation, OperationType};
pub use outcome::{MessagingErrors, OperationStatus};
pub use policies::{DestinationPolicy, DestinationTemplates, OutboundDestinationPolicy};
pub use spans::ConsumerParent;
