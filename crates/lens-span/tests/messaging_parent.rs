//! Parent or link: a `process` span is the child of the message's context by default and links
//! to the span current when processing began; a consumer can ask for links only, and then the
//! span starts a new trace (`lens.trace.new_root` = `linked`) that links to the message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;

use lens_core::{InboundPolicy, MapCarrier};
use lens_span::messaging::{
    ConsumerParent, DestinationPolicy, Operation, OperationStatus, OperationType,
};
use lens_span::{Adapter, SpanOptions};
use opentelemetry::baggage::BaggageExt;
use opentelemetry::trace::{SpanKind, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Context, Value};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};

struct Queue;
impl Adapter for Queue {
    type Request<'a> = str;
    type Response<'a> = ();
    type Status = OperationStatus;
}

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const SPAN: &str = "00f067aa0ba902b7";

fn headers() -> HashMap<String, String> {
    HashMap::from([
        ("traceparent".to_owned(), format!("00-{TRACE}-{SPAN}-01")),
        ("baggage".to_owned(), "tenant=a".to_owned()),
    ])
}

fn attr(span: &SpanData, key: &str) -> Option<Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
}

fn process(mode: ConsumerParent, current: &Context) -> (SpanData, bool) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let options: SpanOptions<Queue, DestinationPolicy> =
        SpanOptions::new(provider.tracer("t"), InboundPolicy::trust_all().into());
    let headers = headers();
    let op = Operation::new("test", "process", OperationType::Process)
        .with_destination("orders", false)
        .with_body_size(5);
    let span = options.start_process("orders", &op, &MapCarrier(&headers), mode, current);
    let has_baggage = span.context().baggage().get("tenant").is_some();
    span.end();
    let mut spans = exporter.get_finished_spans().unwrap();
    assert_eq!(spans.len(), 1);
    (spans.remove(0), has_baggage)
}

#[test]
fn by_default_the_process_span_is_the_child_of_the_message_and_links_to_the_current_span() {
    let provider = SdkTracerProvider::builder().build();
    let current_span = provider.tracer("caller").start("poll loop");
    let current = Context::new().with_span(current_span);
    let current_sc = current.span().span_context().clone();

    let (span, baggage) = process(ConsumerParent::Message, &current);
    assert_eq!(span.name, "process orders");
    assert_eq!(span.span_kind, SpanKind::Consumer);
    assert_eq!(span.span_context.trace_id().to_string(), TRACE);
    assert_eq!(span.parent_span_id.to_string(), SPAN);
    assert!(baggage, "a trusted message's baggage is kept");
    assert_eq!(attr(&span, "lens.trace.new_root"), None);
    let links: Vec<_> = span.links.iter().map(|l| l.span_context.clone()).collect();
    assert_eq!(links, [current_sc]);
    assert_eq!(
        attr(&span, "messaging.operation.type"),
        Some("process".into())
    );
    assert_eq!(
        attr(&span, "messaging.destination.name"),
        Some("orders".into())
    );
    assert_eq!(attr(&span, "messaging.message.body.size"), Some(5.into()));
}

#[test]
fn links_only_starts_a_new_trace_linked_to_the_message() {
    let (span, baggage) = process(ConsumerParent::Links, &Context::new());
    assert_ne!(span.span_context.trace_id().to_string(), TRACE);
    assert_eq!(span.parent_span_id, opentelemetry::trace::SpanId::INVALID);
    assert_eq!(span.links.len(), 1);
    assert_eq!(span.links[0].span_context.span_id().to_string(), SPAN);
    assert_eq!(attr(&span, "lens.trace.new_root"), Some("linked".into()));
    assert!(
        baggage,
        "the trusted message's baggage stays with links only"
    );
}

#[test]
fn no_current_span_no_link() {
    let (span, _) = process(ConsumerParent::Message, &Context::new());
    assert!(span.links.is_empty());
    assert_eq!(span.parent_span_id.to_string(), SPAN);
}
