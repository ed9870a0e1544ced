//! The inbound policy per destination: trust, link or ignore the context a message carried; a
//! `process` span that starts a new trace records why (`lens.trace.new_root`), exactly as the
//! HTTP and gRPC servers do.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;

use lens_core::{InboundPolicy, MapCarrier};
use lens_span::messaging::{
    ConsumerParent, DestinationPolicy, Operation, OperationStatus, OperationType,
};
use lens_span::{Adapter, SpanOptions};
use opentelemetry::Context;
use opentelemetry::baggage::BaggageExt;
use opentelemetry::trace::TracerProvider;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};

struct Queue;
impl Adapter for Queue {
    type Request<'a> = str;
    type Response<'a> = ();
    type Status = OperationStatus;
}

const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn new_root(span: &SpanData) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == "lens.trace.new_root")
        .map(|kv| kv.value.as_str().into_owned())
}

/// The process span of a message on `subject` with these headers, and whether its Context
/// kept the message's baggage.
fn process(subject: &str, headers: &[(&str, &str)]) -> (SpanData, bool) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let policy = DestinationPolicy::new(InboundPolicy::trust_all())
        .for_destination("partner.>", InboundPolicy::link_all())
        .for_destination("public.*", InboundPolicy::ignore_all());
    let options: SpanOptions<Queue, DestinationPolicy> =
        SpanOptions::new(provider.tracer("t"), policy);
    let headers: HashMap<String, String> = headers
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let op =
        Operation::new("test", "process", OperationType::Process).with_destination(subject, false);
    let span = options.start_process(
        subject,
        &op,
        &MapCarrier(&headers),
        ConsumerParent::Message,
        &Context::new(),
    );
    let baggage = span.context().baggage().get("k").is_some();
    span.end();
    (exporter.get_finished_spans().unwrap().remove(0), baggage)
}

#[test]
fn trusted_destination_continues_the_trace() {
    let (span, baggage) = process("orders", &[("traceparent", TP), ("baggage", "k=v")]);
    assert_eq!(span.parent_span_id.to_string(), "00f067aa0ba902b7");
    assert_eq!(new_root(&span), None);
    assert!(baggage);
}

#[test]
fn linked_destination_starts_a_new_trace_with_a_link_and_no_baggage() {
    let (span, baggage) = process("partner.x.y", &[("traceparent", TP), ("baggage", "k=v")]);
    assert_ne!(
        span.span_context.trace_id().to_string(),
        "4bf92f3577b34da6a3ce929d0e0e4736"
    );
    assert_eq!(span.links.len(), 1);
    assert_eq!(
        span.links[0].span_context.span_id().to_string(),
        "00f067aa0ba902b7"
    );
    assert_eq!(new_root(&span).as_deref(), Some("untrusted:linked"));
    assert!(!baggage);
}

#[test]
fn ignored_destination_keeps_nothing() {
    let (span, baggage) = process("public.a", &[("traceparent", TP), ("baggage", "k=v")]);
    assert!(span.links.is_empty());
    assert_eq!(new_root(&span).as_deref(), Some("untrusted:ignored"));
    assert!(!baggage);
}

#[test]
fn each_cause_of_a_new_root_from_message_headers() {
    let zero = "00-00000000000000000000000000000000-00f067aa0ba902b7-01";
    let two = [("traceparent", TP), ("traceparent", zero)];
    let cases: [(&[(&str, &str)], &str); 4] = [
        (&[], "none"),
        (&[("baggage", "k=v")], "none"),
        (
            &[(
                "traceparent",
                "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            )],
            "rejected:traceparent-versions",
        ),
        (&[("traceparent", zero)], "rejected:traceparent-zero-ids"),
    ];
    for (headers, want) in cases {
        let (span, _) = process("orders", headers);
        assert_eq!(new_root(&span).as_deref(), Some(want), "{headers:?}");
        assert_eq!(span.parent_span_id, opentelemetry::trace::SpanId::INVALID);
    }
    // A map carrier holds one value per key: the last of `two` stands.
    let (span, _) = process("orders", &two);
    assert_eq!(
        new_root(&span).as_deref(),
        Some("rejected:traceparent-zero-ids")
    );
}
