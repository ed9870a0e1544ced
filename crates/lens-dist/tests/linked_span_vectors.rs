//! `create_linked_span(tracer, name, carrier)` links to exactly the span context docs/propagation-rules.md
//! extracts from each recorded carrier (`lens-expected-public.json`), and matches NeMo Lens's
//! recorded links wherever docs/propagation-rules.md does not differ from Python.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use lens_core::Carrier;
use lens_dist::create_linked_span;
use lens_testkit::cases;
use opentelemetry::trace::{Span, SpanContext, TraceState, TracerProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use serde_json::Value;

/// `expected` (a vectors `span_context` object) describes `sc`.
fn same(sc: &SpanContext, expected: &Value) -> Result<(), String> {
    let got = (
        sc.trace_id().to_string(),
        sc.span_id().to_string(),
        sc.is_sampled(),
        sc.is_remote(),
    );
    let want = (
        expected["trace_id"].as_str().unwrap().to_owned(),
        expected["span_id"].as_str().unwrap().to_owned(),
        expected["sampled"].as_bool().unwrap(),
        expected["is_remote"].as_bool().unwrap(),
    );
    if got != want {
        return Err(format!("{got:?} != {want:?}"));
    }
    // Where opentelemetry's TraceState can hold the expected list (docs/propagation-rules.md#opentelemetry-types), it does.
    let header = expected["tracestate"].as_str().unwrap();
    if let Ok(ts) = header.parse::<TraceState>()
        && sc.trace_state().header() != ts.header()
    {
        return Err(format!(
            "tracestate {:?} != {:?}",
            sc.trace_state().header(),
            header
        ));
    }
    Ok(())
}

#[test]
fn links_follow_the_extracted_span_context() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let tracer = provider.tracer("vectors");
    let (mut linked, mut unlinked, mut as_python) = (0, 0, 0);
    for case in cases() {
        let Some(python) = case.python().get("create_linked_span") else {
            continue;
        };
        let id = case.id.as_str();
        let lens = &case.expected;
        let carrier = Carrier::from_json_bytes(&case.input_bytes()).unwrap();
        let mut span = create_linked_span(&tracer, "stage", &carrier, []);
        span.end();
        let span = exporter.get_finished_spans().unwrap().remove(0);
        exporter.reset();

        let lens_sc = &lens["lens_expected"]["extract"]["context"]["span_context"];
        match (span.links.links.as_slice(), lens_sc) {
            ([], Value::Null) => unlinked += 1,
            ([link], sc) if !sc.is_null() => {
                same(&link.span_context, sc).unwrap_or_else(|e| panic!("{id}: {e}"));
                linked += 1;
            }
            (links, sc) => panic!("{id}: links {links:?}, expected {sc}"),
        }
        if lens["differs_from_python"] == false {
            let python_links = python["links"].as_array().unwrap();
            assert_eq!(span.links.links.len(), python_links.len(), "{id}");
            if let (Some(link), Some(want)) = (span.links.links.first(), python_links.first()) {
                same(&link.span_context, want).unwrap_or_else(|e| panic!("{id} (Python): {e}"));
            }
            as_python += 1;
        }
    }
    assert!(
        linked >= 30 && unlinked >= 30,
        "{linked} linked, {unlinked} unlinked"
    );
    assert!(as_python >= 60, "{as_python}");
}
