//! The adapter for another broker that docs/messaging.md shows ("An adapter for another
//! broker"): a message with a plain header map of bytes, a producer and a consumer on lens-span's
//! messaging lifecycle. The code between the markers below is the page's code, character for
//! character (the last test checks it), and these tests run it: one trace from the `send` span to
//! the `process` span, the baggage read back, a header that is not UTF-8 costing no message, a
//! failed send classified.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    missing_docs,
    unreachable_pub
)]

use lens_core::InboundPolicy;
use lens_span::metrics::Instruments;
use opentelemetry::baggage::BaggageExt;
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer, TracerProvider as _};
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracer, SdkTracerProvider, SpanData};

// --- docs/messaging.md: an adapter for another broker ---
use std::collections::HashMap;

use lens_core::OutboundPolicy;
use lens_span::messaging::{ConsumerParent, DestinationPolicy, MessagingErrors};
use lens_span::messaging::{Operation, OperationStatus, OperationType};
use lens_span::{Adapter, MessageCarrier, SpanOptions};
use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, Injector};

/// A message of the broker: a topic, headers whose values are bytes, a body.
pub struct Message {
    pub topic: String,
    pub headers: HashMap<String, Vec<u8>>,
    pub body: Vec<u8>,
}

/// The headers as a carrier: a value that is not UTF-8 reads as absent (a new trace, never a
/// lost message).
struct Headers<M>(M);

impl Extractor for Headers<&HashMap<String, Vec<u8>>> {
    fn get(&self, key: &str) -> Option<&str> {
        std::str::from_utf8(self.0.get(key)?).ok()
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

impl Injector for Headers<&mut HashMap<String, Vec<u8>>> {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_owned(), value.into_bytes());
    }
}

impl MessageCarrier for Headers<&mut HashMap<String, Vec<u8>>> {
    fn remove(&mut self, field: &str) {
        self.0.remove(field);
    }
}

/// What the hooks (filter, span name, attributes) and the classifier see.
pub struct MyBroker;

impl Adapter for MyBroker {
    type Request<'a> = str; // the topic
    type Response<'a> = OperationStatus;
    type Status = OperationStatus;
}

fn operation<'m>(message: &'m Message, name: &'static str, kind: OperationType) -> Operation<'m> {
    Operation::new("mybroker", name, kind)
        .with_destination(&message.topic, false)
        .with_body_size(message.body.len())
}

/// Sends each message in a PRODUCER `send {topic}` span, its context in the headers.
pub struct Producer(pub SpanOptions<MyBroker, OutboundPolicy>);

impl Producer {
    /// `deliver` hands the message to the broker's client.
    pub fn send<E: std::fmt::Display>(
        &self,
        mut message: Message,
        deliver: impl FnOnce(Message) -> Result<(), E>,
    ) -> Result<(), E> {
        let send = operation(&message, "send", OperationType::Send);
        let cx = Context::current();
        let mut span = self
            .0
            .start_operation(&message.topic, &send, &cx, Vec::new());
        let decision = self.0.policy().decide("broker.internal");
        let headers = &mut Headers(&mut message.headers);
        self.0
            .propagation()
            .inject_message(decision, span.context(), headers);
        let result = deliver(message);
        let status = match &result {
            Ok(()) => OperationStatus::Ok,
            Err(e) => OperationStatus::Failed {
                error_type: "send_failed".into(),
                description: e.to_string(),
            },
        };
        self.0
            .responder()
            .respond(&mut span, &status, &status, &MessagingErrors);
        result
    }
}

/// Handles each message in a CONSUMER `process {topic}` span, the child of the message's
/// context (its baggage current) when the policy for the topic trusts it.
pub struct Consumer(pub SpanOptions<MyBroker, DestinationPolicy>);

impl Consumer {
    pub fn process<R>(&self, message: &Message, handle: impl FnOnce(&Message) -> R) -> R {
        let process = operation(message, "process", OperationType::Process);
        let (headers, cx) = (&Headers(&message.headers), Context::current());
        let parent = ConsumerParent::Message;
        let span = self
            .0
            .start_process(&message.topic, &process, headers, parent, &cx);
        span.in_scope(|| handle(message)) // the span ends here, when dropped
    }
}
// --- end of the page's code ---

struct Setup {
    exporter: InMemorySpanExporter,
    provider: SdkTracerProvider,
}

impl Setup {
    fn new() -> Self {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        Setup { exporter, provider }
    }

    fn tracer(&self) -> SdkTracer {
        self.provider.tracer("custom-broker")
    }

    fn spans(&self) -> Vec<SpanData> {
        self.exporter.get_finished_spans().unwrap()
    }
}

/// How a user builds them: their tracer, their policies; metrics once a meter is set.
fn producer(setup: &Setup) -> Producer {
    let mut options = SpanOptions::new(setup.tracer(), OutboundPolicy::default());
    options.set_instruments(Instruments::Messaging);
    Producer(options)
}

fn consumer(setup: &Setup) -> Consumer {
    let policy = DestinationPolicy::new(InboundPolicy::trust_all());
    let mut options = SpanOptions::new(setup.tracer(), policy);
    options.set_instruments(Instruments::Messaging);
    Consumer(options)
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    let found: Vec<&SpanData> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "{name}: {spans:?}");
    found[0]
}

fn attr(span: &SpanData, key: &str) -> Option<Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.clone())
}

fn message(topic: &str) -> Message {
    Message {
        topic: topic.to_owned(),
        headers: HashMap::from([("x-app".to_owned(), b"kept".to_vec())]),
        body: b"payload".to_vec(),
    }
}

#[test]
fn one_trace_from_send_to_process_with_the_baggage() {
    let setup = Setup::new();
    let producer = producer(&setup);
    let consumer = consumer(&setup);
    let mut queue = Vec::new();
    let caller = setup.tracer().start("caller");
    let cx =
        Context::current_with_span(caller).with_baggage(vec![KeyValue::new("tenant", "acme corp")]);
    {
        let _current = cx.clone().attach();
        producer
            .send(message("orders"), |m| {
                queue.push(m);
                Ok::<(), String>(())
            })
            .unwrap();
    }
    cx.span().end();

    let delivered = queue.pop().unwrap();
    // The caller's own header kept; the context added as bytes.
    assert_eq!(delivered.headers["x-app"], b"kept");
    assert!(delivered.headers["traceparent"].starts_with(b"00-"));
    let (seen_trace, tenant) = consumer.process(&delivered, |m| {
        assert_eq!(m.body, b"payload");
        let current = Context::current();
        (
            current.span().span_context().trace_id(),
            current.baggage().get("tenant").map(|v| v.to_string()),
        )
    });

    let spans = setup.spans();
    let caller = named(&spans, "caller");
    let send = named(&spans, "send orders");
    let process = named(&spans, "process orders");
    assert_eq!(send.span_kind, SpanKind::Producer);
    assert_eq!(process.span_kind, SpanKind::Consumer);
    assert_eq!(send.parent_span_id, caller.span_context.span_id());
    assert_eq!(process.parent_span_id, send.span_context.span_id());
    assert!(process.parent_span_is_remote);
    assert_eq!(seen_trace, caller.span_context.trace_id());
    assert_eq!(tenant.as_deref(), Some("acme corp"));
    for (span, operation) in [(send, "send"), (process, "process")] {
        assert_eq!(attr(span, "messaging.system"), Some("mybroker".into()));
        assert_eq!(
            attr(span, "messaging.operation.type"),
            Some(operation.into())
        );
        assert_eq!(
            attr(span, "messaging.destination.name"),
            Some("orders".into())
        );
        assert_eq!(attr(span, "messaging.message.body.size"), Some(7.into()));
    }
    assert_eq!(attr(process, "lens.trace.new_root"), None);
}

#[test]
fn a_header_that_is_not_utf8_costs_no_message() {
    let setup = Setup::new();
    let consumer = consumer(&setup);
    let mut bad = message("orders");
    bad.headers
        .insert("traceparent".to_owned(), vec![0xff, 0xfe, b'-', 0x80]);
    let body = consumer.process(&bad, |m| m.body.clone());
    assert_eq!(body, b"payload");
    let spans = setup.spans();
    let process = named(&spans, "process orders");
    // A new trace, and why: the value could not be read, as if absent.
    assert_eq!(
        process.parent_span_id,
        opentelemetry::trace::SpanId::INVALID
    );
    assert_eq!(attr(process, "lens.trace.new_root"), Some("none".into()));
}

#[test]
fn a_failed_send_is_classified() {
    let setup = Setup::new();
    let producer = producer(&setup);
    let result = producer.send(message("orders"), |_| Err("broker down"));
    assert_eq!(result, Err("broker down"));
    let spans = setup.spans();
    let send = named(&spans, "send orders");
    assert_eq!(attr(send, "error.type"), Some("send_failed".into()));
    assert!(matches!(&send.status, Status::Error { description } if description == "broker down"));
}

/// The page shows exactly the code between this file's markers.
#[test]
fn the_page_shows_this_code() {
    let this = include_str!("messaging_custom_broker.rs");
    let code = this
        .split("// --- docs/messaging.md: an adapter for another broker ---\n")
        .nth(1)
        .and_then(|rest| rest.split("// --- end of the page's code ---").next())
        .unwrap();
    let page = include_str!("../../../docs/messaging.md");
    let block = page
        .split("<!-- crates/lens-span/tests/messaging_custom_broker.rs -->\n```rust\n")
        .nth(1)
        .and_then(|rest| rest.split("```\n").next())
        .expect("docs/messaging.md has the adapter's code block");
    assert_eq!(
        block, code,
        "docs/messaging.md's adapter and this test differ"
    );
}
