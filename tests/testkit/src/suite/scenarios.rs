//! The scenarios of the suite, run in order through a harness.

use lens_core::policy::InboundDecision;
use opentelemetry::trace::{SpanId, SpanKind, Status, TraceId};

use super::call::{Call, Respond};
use super::harness::Harness;
use super::metric_checks::check_metrics;
use super::names::{
    CLASSIFIED_ERROR, FAILURE_ATTRIBUTE, PARENT_ID, REQUEST_ATTRIBUTE, RESPONSE_ATTRIBUTE,
    SPAN_NAME, TRACE_ID,
};
use super::setup::{Setup, Side};
use super::span_attribute::attr;

fn traceparent(flags: &str) -> (&'static str, String) {
    ("traceparent", format!("00-{TRACE_ID}-{PARENT_ID}-{flags}"))
}

fn parts(scenario: &str, traceparent: Option<&str>) -> (String, String, String) {
    let tp = traceparent.unwrap_or_else(|| panic!("{scenario}: no outgoing traceparent"));
    let fields: Vec<&str> = tp.split('-').collect();
    assert_eq!(fields.len(), 4, "{scenario}: traceparent {tp}");
    (
        fields[1].to_owned(),
        fields[2].to_owned(),
        fields[3].to_owned(),
    )
}

/// Runs every scenario of the suite that `harness` supports.
pub async fn run<H: Harness>(harness: &H) {
    let side = harness.side();
    let protocol = harness.protocol();
    let baggage = ("baggage", "tenant=acme,user=alice%20smith".to_owned());

    // Parent and child across the hop, the trace id kept, trusted baggage kept.
    let scenario = "trust: parent/child and trace id across the hop";
    let seen = harness
        .run(
            Setup::default(),
            Call::new(vec![traceparent("01"), baggage.clone()]),
            1,
        )
        .await;
    let span = seen.one(scenario);
    assert_eq!(
        span.span_context.trace_id().to_string(),
        TRACE_ID,
        "{scenario}"
    );
    assert_eq!(span.parent_span_id.to_string(), PARENT_ID, "{scenario}");
    let (trace, parent, flags) = parts(scenario, seen.header(scenario, "traceparent"));
    assert_eq!(trace, TRACE_ID, "{scenario}");
    assert_eq!(
        parent,
        span.span_context.span_id().to_string(),
        "{scenario}"
    );
    assert_eq!(
        flags, "01",
        "{scenario}: no random flag is invented for a remote trace"
    );
    assert_eq!(
        seen.header(scenario, "baggage"),
        Some(baggage.1.as_str()),
        "{scenario}"
    );
    assert_eq!(
        span.span_kind,
        match side {
            Side::Server => SpanKind::Server,
            Side::Client => SpanKind::Client,
        },
        "{scenario}"
    );

    // The random flag kept across the hop.
    let scenario = "an incoming -03 goes on as -03";
    let seen = harness
        .run(Setup::default(), Call::new(vec![traceparent("03")]), 1)
        .await;
    let (trace, _, flags) = parts(scenario, seen.header(scenario, "traceparent"));
    assert_eq!(
        (trace.as_str(), flags.as_str()),
        (TRACE_ID, "03"),
        "{scenario}"
    );

    // The random flag set on new traces, unless turned off.
    for (random, want) in [(true, "03"), (false, "01")] {
        let scenario = format!("a new trace (random flag on new traces: {random})");
        let setup = Setup {
            random_flag_on_new_traces: random,
            ..Setup::default()
        };
        let seen = harness.run(setup, Call::new(Vec::new()), 1).await;
        let span = seen.one(&scenario);
        assert_eq!(span.parent_span_id, SpanId::INVALID, "{scenario}");
        let (trace, parent, flags) = parts(&scenario, seen.header(&scenario, "traceparent"));
        assert_eq!(
            trace,
            span.span_context.trace_id().to_string(),
            "{scenario}"
        );
        assert_eq!(
            parent,
            span.span_context.span_id().to_string(),
            "{scenario}"
        );
        assert_eq!(flags, want, "{scenario}");
    }

    if side == Side::Server {
        // Link and Ignore: a new trace; baggage of an untrusted caller dropped.
        for decision in [InboundDecision::Link, InboundDecision::Ignore] {
            let scenario = format!("{decision:?}: a new trace, baggage dropped");
            let setup = Setup {
                decision,
                ..Setup::default()
            };
            let seen = harness
                .run(
                    setup,
                    Call::new(vec![traceparent("01"), baggage.clone()]),
                    1,
                )
                .await;
            let span = seen.one(&scenario);
            assert_ne!(
                span.span_context.trace_id().to_string(),
                TRACE_ID,
                "{scenario}"
            );
            assert_ne!(span.span_context.trace_id(), TraceId::INVALID, "{scenario}");
            assert_eq!(span.parent_span_id, SpanId::INVALID, "{scenario}");
            let links: Vec<String> = span
                .links
                .iter()
                .map(|l| l.span_context.span_id().to_string())
                .collect();
            match decision {
                InboundDecision::Link => assert_eq!(links, [PARENT_ID], "{scenario}"),
                _ => assert!(links.is_empty(), "{scenario}: {links:?}"),
            }
            assert_eq!(seen.header(&scenario, "baggage"), None, "{scenario}");
        }
    } else {
        // A stale traceparent on the request is replaced, not sent beside the new one.
        let scenario = "a stale traceparent is replaced";
        let mut call = Call::new(vec![traceparent("01")]);
        call.preset = vec![
            (
                "traceparent",
                "00-11111111111111111111111111111111-2222222222222222-01".to_owned(),
            ),
            ("tracestate", "stale=1".to_owned()),
        ];
        let seen = harness.run(Setup::default(), call, 1).await;
        let span = seen.one(scenario);
        let (trace, parent, _) = parts(scenario, seen.header(scenario, "traceparent"));
        assert_eq!(trace, TRACE_ID, "{scenario}");
        assert_eq!(
            parent,
            span.span_context.span_id().to_string(),
            "{scenario}"
        );
        assert_eq!(seen.header(scenario, "tracestate"), None, "{scenario}");
    }

    // Error classification: the adapter's default classifier, then a classifier of the user's
    // (the caller's error is the only failure, under its own `error.type`) with a failure hook,
    // which runs on every failure, a panic's too.
    for classified in [false, true] {
        for respond in [
            Respond::Ok,
            Respond::CallerError,
            Respond::ServerError,
            Respond::Panic,
        ] {
            if !harness.supports(respond) {
                continue;
            }
            let scenario =
                format!("classification of {respond:?} (user's classifier: {classified})");
            let mut call = Call::new(vec![traceparent("01")]);
            call.respond = respond;
            let setup = Setup {
                classified,
                metrics: true,
                ..Setup::default()
            };
            let seen = harness.run(setup, call, 1).await;
            check_metrics(&scenario, side, protocol, &seen);
            let span = seen.one(&scenario);
            let text = |key: &str| attr(span, key).map(|v| v.as_str().into_owned());
            let error = match (respond, classified) {
                (Respond::Ok, _) => false,
                (Respond::Panic, _) => true,
                (Respond::CallerError, true) => true,
                (Respond::CallerError, false) => side == Side::Client,
                (_, classified) => !classified,
            };
            assert_eq!(
                matches!(span.status, Status::Error { .. }),
                error,
                "{scenario}: status {:?}",
                span.status
            );
            assert_eq!(
                text("error.type").is_some(),
                error,
                "{scenario}: {:?}",
                span.attributes
            );
            let named = match respond {
                Respond::Panic => Some("panic"),
                Respond::CallerError if classified => Some(CLASSIFIED_ERROR),
                _ => None,
            };
            if let Some(named) = named {
                assert_eq!(text("error.type").as_deref(), Some(named), "{scenario}");
            }
            if classified {
                assert_eq!(
                    text(FAILURE_ATTRIBUTE),
                    text("error.type"),
                    "{scenario}: {:?}",
                    span.attributes
                );
            }
        }
    }

    // The filter: no span and no metrics; servers give the handler no context, clients inject
    // nothing.
    let scenario = "filtered out";
    let mut call = Call::new(vec![traceparent("01")]);
    call.skip = true;
    let setup = Setup {
        metrics: true,
        ..Setup::default()
    };
    let seen = harness.run(setup, call, 0).await;
    assert!(seen.spans.is_empty(), "{scenario}: {:#?}", seen.spans);
    assert!(seen.metrics.is_empty(), "{scenario}: {:#?}", seen.metrics);
    assert_eq!(seen.header(scenario, "traceparent"), None, "{scenario}");

    // Span name and attribute hooks.
    // The metrics keep the adapter's attributes only (checked by `check_metrics`).
    let scenario = "span name and attribute hooks";
    let setup = Setup {
        named: true,
        hooks: true,
        metrics: true,
        ..Setup::default()
    };
    let seen = harness
        .run(setup, Call::new(vec![traceparent("01")]), 1)
        .await;
    check_metrics(scenario, side, protocol, &seen);
    let span = seen.one(scenario);
    assert_eq!(span.name, SPAN_NAME, "{scenario}");
    for key in [REQUEST_ATTRIBUTE, RESPONSE_ATTRIBUTE] {
        assert_eq!(
            attr(span, key),
            Some(&opentelemetry::Value::Bool(true)),
            "{scenario}: {key} in {:?}",
            span.attributes
        );
    }

    // The span ends after a streaming body, not before.
    if harness.supports(Respond::Stream) {
        let scenario = "the span outlasts the first part of a stream";
        let mut call = Call::new(vec![traceparent("01")]);
        call.respond = Respond::Stream;
        let setup = Setup {
            metrics: true,
            ..Setup::default()
        };
        let seen = harness.run(setup, call, 1).await;
        seen.one(scenario);
        assert_eq!(seen.open_after_first_part, Some(true), "{scenario}");
        check_metrics(scenario, side, protocol, &seen);
    }

    // A call the caller abandons after the first part: the span ends, its duration is recorded
    // once, the active requests go back to 0.
    if harness.supports(Respond::Cancel) {
        let scenario = "the caller goes away after the first part";
        let mut call = Call::new(vec![traceparent("01")]);
        call.respond = Respond::Cancel;
        let setup = Setup {
            metrics: true,
            ..Setup::default()
        };
        let seen = harness.run(setup, call, 1).await;
        seen.one(scenario);
        check_metrics(scenario, side, protocol, &seen);
    }
}
