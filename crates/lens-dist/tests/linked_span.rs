//! `create_linked_span`: a Link to the remote span context when it is valid (from a Context, a
//! Carrier, a broadcast result or a SpanContext), no link otherwise; the span's parent is the
//! current Context; attributes are redacted.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lens_core::{Carrier, extract_context};
use lens_dist::{Redaction, Remote, create_linked_span, create_linked_span_with};
use opentelemetry::trace::{
    Span, SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState, Tracer,
    TracerProvider,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracer, SdkTracerProvider, SpanData};

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn setup() -> (SdkTracerProvider, SdkTracer, InMemorySpanExporter) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let tracer = provider.tracer("test");
    (provider, tracer, exporter)
}

fn finish(span: impl Span, exporter: &InMemorySpanExporter) -> SpanData {
    let mut span = span;
    span.end();
    let mut spans = exporter.get_finished_spans().unwrap();
    exporter.reset();
    assert_eq!(spans.len(), 1);
    spans.remove(0)
}

fn remote_carrier() -> Carrier {
    let mut carrier = Carrier::new();
    carrier.insert("traceparent", TRACEPARENT);
    carrier.insert("tracestate", "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE");
    carrier.insert("baggage", "user=alice");
    carrier
}

fn expected_remote() -> SpanContext {
    SpanContext::new(
        TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
        SpanId::from_hex("00f067aa0ba902b7").unwrap(),
        TraceFlags::SAMPLED,
        true,
        "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
            .parse::<TraceState>()
            .unwrap(),
    )
}

#[test]
fn a_carrier_gives_a_link_with_tracestate_and_no_parent() {
    let (_p, tracer, exporter) = setup();
    let carrier = remote_carrier();
    let span = finish(
        create_linked_span(&tracer, "stage", &carrier, []),
        &exporter,
    );
    assert_eq!(span.name, "stage");
    assert_eq!(span.links.links.len(), 1);
    assert_eq!(span.links.links[0].span_context, expected_remote());
    // A link, not a parent: a new trace starts (nothing was current).
    assert_eq!(span.parent_span_id, SpanId::INVALID);
    assert_ne!(span.span_context.trace_id(), expected_remote().trace_id());
}

#[test]
fn a_context_and_a_span_context_give_the_same_link() {
    let (_p, tracer, exporter) = setup();
    let cx = extract_context(&remote_carrier());
    let from_cx = finish(create_linked_span(&tracer, "a", &cx, []), &exporter);
    let sc = expected_remote();
    let from_sc = finish(create_linked_span(&tracer, "b", &sc, []), &exporter);
    assert_eq!(from_cx.links.links[0].span_context, expected_remote());
    assert_eq!(from_sc.links.links[0].span_context, expected_remote());
}

#[test]
fn a_broadcast_result_converts_directly() {
    let (_p, tracer, exporter) = setup();
    let some: Option<Carrier> = Some(remote_carrier());
    let none: Option<Carrier> = None;
    let linked = finish(create_linked_span(&tracer, "a", &some, []), &exporter);
    let unlinked = finish(create_linked_span(&tracer, "b", &none, []), &exporter);
    assert_eq!(linked.links.links.len(), 1);
    assert!(unlinked.links.links.is_empty());
}

#[test]
fn an_invalid_remote_gives_an_unlinked_span() {
    let (_p, tracer, exporter) = setup();
    let mut bad = Carrier::new();
    bad.insert(
        "traceparent",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
    );
    let empty_cx = Context::new();
    let invalid_sc = SpanContext::empty_context();
    let remotes: [Remote<'_>; 4] = [
        (&bad).into(),
        (&empty_cx).into(),
        (&invalid_sc).into(),
        Remote::None,
    ];
    for remote in remotes {
        let span = finish(create_linked_span(&tracer, "x", remote, []), &exporter);
        assert!(span.links.links.is_empty(), "{remote:?}");
        assert!(span.span_context.is_valid());
    }
}

#[test]
fn the_current_context_is_the_parent() {
    let (_p, tracer, exporter) = setup();
    let parent = tracer.start("parent");
    let parent_sc = parent.span_context().clone();
    let cx = Context::current_with_span(parent);
    let carrier = remote_carrier();
    let child = {
        let _guard = cx.clone().attach();
        create_linked_span(&tracer, "child", &carrier, [])
    };
    let child = finish(child, &exporter);
    assert_eq!(child.parent_span_id, parent_sc.span_id());
    assert_eq!(child.span_context.trace_id(), parent_sc.trace_id());
    assert_eq!(child.links.links[0].span_context, expected_remote());
}

#[test]
fn attributes_are_redacted_and_filtered() {
    let (_p, tracer, exporter) = setup();
    let span = create_linked_span(
        &tracer,
        "s",
        Remote::None,
        [
            KeyValue::new("prompt", "tell me a secret"),
            KeyValue::new("token", 42),
            KeyValue::new("stage", 3),
            KeyValue::new("text", "hello"),
        ],
    );
    let span = finish(span, &exporter);
    assert_eq!(
        span.attributes,
        [
            KeyValue::new("prompt", "[REDACTED]"),
            KeyValue::new("token", 42),
            KeyValue::new("stage", 3),
            KeyValue::new("text", "[REDACTED]"),
        ]
    );

    let custom = Redaction::new(["stage_name"]);
    let span = create_linked_span_with(
        &tracer,
        "s",
        Remote::None,
        [
            KeyValue::new("prompt", "kept"),
            KeyValue::new("stage_name", "hidden"),
        ],
        &custom,
    );
    let span = finish(span, &exporter);
    assert_eq!(
        span.attributes,
        [
            KeyValue::new("prompt", "kept"),
            KeyValue::new("stage_name", "[REDACTED]"),
        ]
    );
}
