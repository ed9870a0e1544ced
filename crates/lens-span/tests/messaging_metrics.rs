//! Messaging metrics: with a meter, `messaging.client.operation.duration` and
//! `messaging.client.sent.messages` for a send, `messaging.process.duration` and
//! `messaging.client.consumed.messages` for a process, the batch's count for a receive, with
//! the conventions' attributes (never a temporary destination's name); without a meter, none.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lens_core::{InboundPolicy, MapCarrier};
use lens_span::messaging::{
    ConsumerParent, DestinationPolicy, Operation, OperationStatus, OperationType,
};
use lens_span::metrics::Instruments;
use lens_span::{Adapter, SpanOptions};
use lens_testkit::metrics::Metrics;
use opentelemetry::Context;
use opentelemetry::trace::TracerProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use std::collections::HashMap;

struct Queue;
impl Adapter for Queue {
    type Request<'a> = str;
    type Response<'a> = ();
    type Status = OperationStatus;
}

fn options(metrics: Option<&Metrics>) -> SpanOptions<Queue, DestinationPolicy> {
    let provider = SdkTracerProvider::builder().build();
    let mut options = SpanOptions::new(provider.tracer("t"), InboundPolicy::trust_all().into());
    options.set_instruments(Instruments::Messaging);
    if let Some(metrics) = metrics {
        options.set_meter(metrics.meter("t"));
    }
    options
}

fn run(options: &SpanOptions<Queue, DestinationPolicy>) {
    let send =
        Operation::new("test", "send", OperationType::Send).with_destination("orders", false);
    options
        .start_operation("orders", &send, &Context::new(), Vec::new())
        .end();
    let reply =
        Operation::new("test", "send", OperationType::Send).with_destination("_INBOX.x1", true);
    options
        .start_operation("_INBOX.x1", &reply, &Context::new(), Vec::new())
        .end();
    let receive = Operation::new("test", "receive", OperationType::Receive)
        .with_destination("orders", false)
        .with_batch_count(3);
    let mut span = options.start_operation("orders", &receive, &Context::new(), Vec::new());
    span.set_messages(3);
    span.end();
    let headers: HashMap<String, String> = HashMap::new();
    let process =
        Operation::new("test", "process", OperationType::Process).with_destination("orders", false);
    options
        .start_process(
            "orders",
            &process,
            &MapCarrier(&headers),
            ConsumerParent::Message,
            &Context::new(),
        )
        .end();
}

#[test]
fn each_operation_records_its_instruments() {
    let metrics = Metrics::new();
    run(&options(Some(&metrics)));

    let durations = metrics.series("messaging.client.operation.duration");
    // send orders, send (temporary), receive orders.
    assert_eq!(durations.len(), 3, "{durations:?}");
    assert!(durations.iter().all(|p| p.unit == "s" && p.value == 1.0));
    let temporary = durations
        .iter()
        .find(|p| {
            p.get("messaging.operation.type") == Some("send")
                && p.get("messaging.destination.name").is_none()
        })
        .expect("the reply's series has no destination name");
    assert_eq!(temporary.get("messaging.system"), Some("test"));

    let process = metrics.series("messaging.process.duration");
    assert_eq!(process.len(), 1);
    assert_eq!(process[0].get("messaging.destination.name"), Some("orders"));
    assert_eq!(process[0].get("messaging.operation.name"), Some("process"));

    let sent = metrics.series("messaging.client.sent.messages");
    assert_eq!(sent.iter().map(|p| p.value).sum::<f64>(), 2.0);
    let consumed = metrics.series("messaging.client.consumed.messages");
    let by_type = |t: &str| {
        consumed
            .iter()
            .filter(|p| p.get("messaging.operation.type") == Some(t))
            .map(|p| p.value)
            .sum::<f64>()
    };
    assert_eq!(by_type("receive"), 3.0);
    assert_eq!(by_type("process"), 1.0);
}

#[test]
fn without_a_meter_no_span_carries_metric_state() {
    let send =
        Operation::new("test", "send", OperationType::Send).with_destination("orders", false);
    let metrics = Metrics::new();
    let with =
        options(Some(&metrics)).start_operation("orders", &send, &Context::new(), Vec::new());
    assert!(format!("{with:?}").contains("metrics: true"));
    let without = options(None).start_operation("orders", &send, &Context::new(), Vec::new());
    assert!(format!("{without:?}").contains("metrics: false"));
}
