//! `create_linked_span` with the global tracer (a `BoxedTracer`), as NeMo Lens users call it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lens_core::Carrier;
use lens_dist::create_linked_span;
use opentelemetry::global;
use opentelemetry::trace::Span;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};

#[test]
fn the_global_boxed_tracer_makes_linked_spans() {
    let exporter = InMemorySpanExporter::default();
    global::set_tracer_provider(
        SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build(),
    );
    let tracer = global::tracer("lens-dist-test");
    let mut carrier = Carrier::new();
    carrier.insert(
        "traceparent",
        "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    );
    let mut span = create_linked_span(&tracer, "stage", &carrier, []);
    span.end();
    let spans = exporter.get_finished_spans().unwrap();
    assert_eq!(spans.len(), 1);
    assert_eq!(
        spans[0].links.links[0].span_context.span_id().to_string(),
        "b7ad6b7169203331"
    );
}
