//! Ray-style remote calls: `RemoteCall` JSON shape, `dispatch_with_context`, and
//! `traced_remote_call` parenting its span on the carrier's context.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use lens_core::{Carrier, LensContextExt};
use lens_tonic::{RemoteCall, dispatch_with_context, traced_remote_call_with_tracer};
use opentelemetry::Context;
use opentelemetry::trace::{SpanKind, TraceContextExt, Tracer};
use serde::{Deserialize, Serialize};
use support::Spans;

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Generate {
    prompt: String,
    max_tokens: u32,
}

const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[test]
fn remote_call_json_is_the_python_kwargs_with_the_carrier() {
    let mut carrier = Carrier::new();
    carrier.insert("traceparent", TP);
    carrier.insert("baggage", "job=caf%C3%A9");
    let call = RemoteCall::new(
        Generate {
            prompt: "hi".into(),
            max_tokens: 8,
        },
        Some(carrier.clone()),
    );
    let json: serde_json::Value = serde_json::to_value(&call).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "prompt": "hi",
            "max_tokens": 8,
            "_otel_carrier": {"traceparent": TP, "baggage": "job=caf%C3%A9"},
        })
    );
    // The carrier object is the one Python's json.loads(serialize) gives.
    let python_carrier: serde_json::Value =
        serde_json::from_slice(&carrier.to_json_bytes()).unwrap();
    assert_eq!(json["_otel_carrier"], python_carrier);

    // Order is kept both ways (serde_json::Value above sorts keys; the text does not).
    let text = serde_json::to_string(&call).unwrap();
    assert_eq!(
        text,
        format!(
            r#"{{"prompt":"hi","max_tokens":8,"_otel_carrier":{{"traceparent":"{TP}","baggage":"job=caf%C3%A9"}}}}"#
        )
    );
    let back: RemoteCall<Generate> = serde_json::from_str(&text).unwrap();
    assert_eq!(back, call);
}

#[test]
fn a_missing_or_null_carrier_is_none_and_gives_the_current_context() {
    for text in [
        r#"{"prompt": "p", "max_tokens": 1}"#,
        r#"{"prompt": "p", "max_tokens": 1, "_otel_carrier": null}"#,
    ] {
        let call: RemoteCall<Generate> = serde_json::from_str(text).unwrap();
        assert_eq!(call.carrier, None);
        let current = Context::new().with_baggage_entry("caller", "yes").unwrap();
        let _guard = current.attach();
        assert_eq!(
            call.context().baggage_value("caller").as_deref(),
            Some("yes")
        );
    }
}

#[test]
fn dispatch_with_context_carries_the_current_span_and_baggage() {
    let spans = Spans::new();
    let span = spans.tracer("driver").start("driver");
    let cx = Context::new()
        .with_span(span)
        .with_baggage_entry("rank", "3")
        .unwrap();
    let call = {
        let _guard = cx.clone().attach();
        dispatch_with_context(Generate {
            prompt: "x".into(),
            max_tokens: 2,
        })
    };
    let carrier = call.carrier.as_ref().unwrap();
    let sc = cx.span().span_context().clone();
    assert_eq!(
        carrier.get("traceparent"),
        Some(format!("00-{}-{}-01", sc.trace_id(), sc.span_id()).as_str())
    );
    assert_eq!(carrier.get("baggage"), Some("rank=3"));
    assert_eq!(call.context().trace_id(), Some(sc.trace_id()));
}

#[tokio::test]
async fn traced_remote_call_runs_in_a_child_of_the_carrier() {
    let spans = Spans::new();
    let tracer = spans.tracer("nemo.lens.ray");
    let mut carrier = Carrier::new();
    carrier.insert("traceparent", TP);
    carrier.insert("baggage", "job=rl");

    // The caller's own Context: baggage of its own, no span.
    let caller = Context::new().with_baggage_entry("caller", "yes").unwrap();
    let run = {
        let _guard = caller.attach();
        traced_remote_call_with_tracer(&tracer, "Actor.generate", Some(&carrier), async {
            let cx = Context::current();
            let span = cx.span();
            (
                span.span_context().clone(),
                cx.baggage_value("job"),
                cx.baggage_value("caller"),
            )
        })
    };
    let seen = run.await;

    let span = spans.one(SpanKind::Internal);
    assert_eq!(span.name, "Actor.generate");
    assert_eq!(
        span.span_context.trace_id().to_string(),
        "4bf92f3577b34da6a3ce929d0e0e4736"
    );
    assert_eq!(span.parent_span_id.to_string(), "00f067aa0ba902b7");
    assert!(span.parent_span_is_remote);
    // The future ran with the span current ...
    assert_eq!(seen.0.span_id(), span.span_context.span_id());
    // ... in the caller's Context, as NeMo Lens's `start_as_current_span(context=ctx)` does:
    // the carrier's baggage is not current, the caller's is.
    assert_eq!(seen.1, None);
    assert_eq!(seen.2.as_deref(), Some("yes"));
}

#[tokio::test]
async fn traced_remote_call_keeps_the_carrier_baggage_out_of_the_worker() {
    let spans = Spans::new();
    let tracer = spans.tracer("nemo.lens.ray");
    let mut carrier = Carrier::new();
    carrier.insert("traceparent", TP);
    carrier.insert("baggage", "job=rl,rank=3");
    // The baggage is in the carrier (extract_ray_context returns it) ...
    assert_eq!(
        lens_tonic::extract_ray_context(Some(&carrier))
            .baggage_value("rank")
            .as_deref(),
        Some("3")
    );
    // ... but not current inside the traced call when the caller has none.
    let inside = traced_remote_call_with_tracer(&tracer, "Actor.m", Some(&carrier), async {
        let cx = Context::current();
        (
            cx.baggage_value("job"),
            cx.baggage_value("rank"),
            cx.trace_id(),
        )
    })
    .await;
    assert_eq!((inside.0, inside.1), (None, None));
    assert_eq!(
        inside.2.map(|t| t.to_string()).as_deref(),
        Some("4bf92f3577b34da6a3ce929d0e0e4736")
    );
    assert_eq!(spans.one(SpanKind::Internal).name, "Actor.m");
}

#[tokio::test]
async fn remote_call_run_uses_its_carrier() {
    let mut carrier = Carrier::new();
    carrier.insert("traceparent", TP);
    let call = RemoteCall::new(
        Generate {
            prompt: "p".into(),
            max_tokens: 1,
        },
        Some(carrier),
    );
    // `run` uses the global tracer; check the parent through the Context instead.
    let trace_id = call
        .run("Actor.m", |args| async move {
            assert_eq!(args.prompt, "p");
            Context::current().span().span_context().trace_id()
        })
        .await;
    assert_eq!(trace_id.to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
}
