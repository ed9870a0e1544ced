//! The spans: PRODUCER `send` and CONSUMER `process` through lens-span's messaging lifecycle;
//! parent or links per consumer; the inbound policy per destination; tracestate and baggage
//! carried; a request-reply exchange as two messaging hops in one trace.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Setup, attr};
use lens_core::{InboundPolicy, LensContextExt};
use lens_testkit::fixtures;
use lens_zmq::{ConsumerParent, DestinationPolicy};
use opentelemetry::trace::{SpanId, SpanKind};

#[test]
fn send_and_process_kinds_names_attributes() {
    let setup = Setup::new();
    let mut frames = vec![b"abc".to_vec()];
    setup
        .producer()
        .send_frames("engine.requests", &mut frames)
        .end();
    setup
        .consumer()
        .process_frames("engine.requests", &mut frames)
        .end();
    let send = setup.span("send engine.requests");
    let process = setup.span("process engine.requests");
    assert_eq!(send.span_kind, SpanKind::Producer);
    assert_eq!(process.span_kind, SpanKind::Consumer);
    for (span, op) in [(&send, "send"), (&process, "process")] {
        assert_eq!(attr(span, "messaging.system").as_deref(), Some("zeromq"));
        assert_eq!(attr(span, "messaging.operation.type").as_deref(), Some(op));
        assert_eq!(attr(span, "messaging.operation.name").as_deref(), Some(op));
        assert_eq!(
            attr(span, "messaging.destination.name").as_deref(),
            Some("engine.requests")
        );
        assert_eq!(
            attr(span, "messaging.message.body.size").as_deref(),
            Some("3")
        );
    }
    assert_eq!(process.parent_span_id, send.span_context.span_id());
}

#[test]
fn tracestate_and_baggage_travel_and_read_back() {
    let setup = Setup::new();
    let caller = fixtures::w3c_context(
        true,
        &[("vendor", "x1")],
        &[("tenant", "acme"), ("user", "a b")],
    );
    let mut frames = vec![b"p".to_vec()];
    {
        let _guard = caller.attach();
        setup.producer().send_frames("d", &mut frames).end();
    }
    let json = std::str::from_utf8(&frames[1][10..]).unwrap().to_owned();
    assert!(json.contains(r#""tracestate": "vendor=x1""#), "{json}");
    assert!(
        json.contains(r#""baggage": "tenant=acme,user=a%20b""#),
        "{json}"
    );
    let consumer = setup.consumer();
    let processing = consumer.process_frames("d", &mut frames);
    let user = processing.in_scope(|| opentelemetry::Context::current().baggage_value("user"));
    assert_eq!(user.as_deref(), Some("a b"));
    processing.end();
    let process = setup.span("process d");
    assert_eq!(process.span_context.trace_state().header(), "vendor=x1");
    assert_eq!(
        process.span_context.trace_id().to_string(),
        fixtures::TRACE_ID
    );
}

#[test]
fn unsampled_stays_unsampled() {
    let setup = Setup::new();
    let caller = fixtures::w3c_context(true, &[], &[]);
    let unsampled = {
        use opentelemetry::trace::{SpanContext, TraceContextExt, TraceFlags};
        let sc = caller.span().span_context().clone();
        let sc = SpanContext::new(
            sc.trace_id(),
            sc.span_id(),
            TraceFlags::default(),
            true,
            sc.trace_state().clone(),
        );
        opentelemetry::Context::new().with_remote_span_context(sc)
    };
    let mut frames = vec![b"p".to_vec()];
    {
        let _guard = unsampled.attach();
        setup.producer().send_frames("d", &mut frames).end();
    }
    assert!(
        std::str::from_utf8(&frames[1])
            .unwrap()
            .ends_with(r#"-00"}"#)
    );
    let consumer = setup.consumer();
    let processing = consumer.process_frames("d", &mut frames);
    use opentelemetry::trace::TraceContextExt;
    assert!(!processing.context().span().span_context().is_sampled());
    processing.end();
    // Neither span recorded: the parent-based sampler follows the caller's decision.
    assert!(setup.spans().is_empty());
}

#[test]
fn links_per_consumer_and_policy_per_destination() {
    let setup = Setup::new();
    let mut frames = vec![b"p".to_vec()];
    setup.producer().send_frames("jobs", &mut frames).end();
    let send = setup.span("send jobs");
    // Links: a new trace linked to the message's span.
    let linking = setup.consumer().with_consumer_parent(ConsumerParent::Links);
    linking.process_frames("jobs", &mut frames.clone()).end();
    let process = setup.span("process jobs");
    assert_eq!(process.parent_span_id, SpanId::INVALID);
    assert_ne!(
        process.span_context.trace_id(),
        send.span_context.trace_id()
    );
    assert_eq!(
        process.links.links[0].span_context.span_id(),
        send.span_context.span_id()
    );
    assert_eq!(
        attr(&process, "lens.trace.new_root").as_deref(),
        Some("linked")
    );
    // The policy per destination: partners' messages are ignored.
    let setup2 = Setup::new();
    let guarded = setup2.consumer().with_inbound_policy(
        DestinationPolicy::new(InboundPolicy::trust_all())
            .for_destination("partner.>", InboundPolicy::ignore_all()),
    );
    guarded
        .process_frames("partner.jobs", &mut frames.clone())
        .end();
    let ignored = setup2.span("process partner.jobs");
    assert_eq!(ignored.parent_span_id, SpanId::INVALID);
    assert_eq!(
        attr(&ignored, "lens.trace.new_root").as_deref(),
        Some("untrusted:ignored")
    );
}

/// DEALER/ROUTER request-reply, socket-free: the request's `process` span is the parent of
/// the reply's `send` span, and the reply's `process` span continues it: one trace of four
/// messaging spans, no RPC spans.
#[test]
fn request_reply_is_two_messaging_hops_in_one_trace() {
    let setup = Setup::new();
    let (producer, consumer) = (setup.producer(), setup.consumer());
    let mut request = vec![b"request".to_vec()];
    producer.send_frames("engine", &mut request).end();
    let processing = consumer.process_frames("engine", &mut request);
    let mut reply = vec![b"reply".to_vec()];
    processing.in_scope(|| producer.send_frames("engine.replies", &mut reply).end());
    processing.end();
    consumer.process_frames("engine.replies", &mut reply).end();
    let spans = [
        setup.span("send engine"),
        setup.span("process engine"),
        setup.span("send engine.replies"),
        setup.span("process engine.replies"),
    ];
    for pair in spans.windows(2) {
        assert_eq!(
            pair[1].parent_span_id,
            pair[0].span_context.span_id(),
            "{}",
            pair[1].name
        );
        assert_eq!(
            pair[1].span_context.trace_id(),
            pair[0].span_context.trace_id()
        );
    }
    assert!(spans.iter().all(|s| attr(s, "rpc.system").is_none()));
}

#[test]
fn a_failed_send_is_an_error_span() {
    let setup = Setup::new();
    let producer = setup.producer();
    producer
        .start_send("d", None)
        .fail("eagain", &"resource temporarily unavailable");
    let send = setup.span("send d");
    assert_eq!(attr(&send, "error.type").as_deref(), Some("eagain"));
    assert!(matches!(
        send.status,
        opentelemetry::trace::Status::Error { .. }
    ));
}
