#![allow(clippy::unwrap_used)]

use std::time::Duration;

use super::*;
use crate::model::{KeyValue, SpanId, SpanKind, TraceId, Value};
use crate::testing::{TRACE, sample, span_at};

#[test]
fn tree_is_ordered_by_parent_then_start() {
    let spans = sample();
    let traces = layouts(&spans);
    assert_eq!(traces.len(), 1);
    let rows: Vec<(&str, usize, &str)> = traces[0]
        .rows
        .iter()
        .map(|r| (r.span.name.as_str(), r.depth, r.prefix.as_str()))
        .collect();
    assert_eq!(
        rows,
        [
            ("request", 0, ""),
            ("POST", 1, "└─ "),
            ("POST /v1", 2, "   └─ "),
            ("stage a", 3, "      ├─ "),
            ("stage b", 3, "      └─ "),
        ]
    );
}

#[test]
fn summary_counts_spans_hops_and_links() {
    let spans = sample();
    let summary = layouts(&spans)[0].summary(HopNames::default());
    assert_eq!(summary.spans, 5);
    assert!(summary.is_complete());
    assert_eq!(summary.hops, [("http".to_owned(), 1)]);
    assert_eq!(summary.links, 1);
    assert_eq!(summary.duration, Duration::from_micros(1000));
    assert_eq!(
        summary_line(&summary),
        format!("trace {TRACE}: 5 spans, complete, 1.0 ms; 1 hop (1 http); 1 link")
    );
}

#[test]
fn hop_labels_read_both_rpc_conventions_old_http_messaging_and_scope_names() {
    let mut s = span_at("svc", "x", 2, 1, crate::model::SpanKind::Server, (0, 1));
    s.flags = 0x301;
    let names = HopNames {
        scopes: &[("test", "remote call")],
    };
    assert_eq!(hop_label(&s, names), Some("remote call"));
    s.attributes = vec![KeyValue::new("http.method", Value::String("GET".into()))];
    assert_eq!(hop_label(&s, names), Some("http"));
    s.attributes = vec![KeyValue::new("rpc.system", Value::String("grpc".into()))];
    assert_eq!(hop_label(&s, names), Some("grpc"));
    s.attributes = vec![KeyValue::new(
        "rpc.system.name",
        Value::String("grpc".into()),
    )];
    assert_eq!(hop_label(&s, names), Some("grpc"));
    s.attributes = vec![KeyValue::new(
        "messaging.system",
        Value::String("nats".into()),
    )];
    assert_eq!(hop_label(&s, names), Some("messaging"));
    s.attributes = vec![KeyValue::new(
        "messaging.destination",
        Value::String("celery".into()),
    )];
    assert_eq!(hop_label(&s, names), Some("messaging"));
    // Not known to be remote (Python's 0x100 without 0x200, or no 0x100): no hop.
    s.flags = 0x100;
    assert_eq!(hop_label(&s, names), None);
    s.flags = 0x001;
    assert_eq!(hop_label(&s, names), None);
}

#[test]
fn a_missing_parent_makes_the_trace_incomplete() {
    let mut spans = sample();
    spans.retain(|s| s.name != "POST /v1");
    let summary = layouts(&spans)[0].summary(HopNames::default());
    assert!(!summary.is_complete());
    assert_eq!(summary.orphans, 2);
    assert_eq!(summary.roots, 3);
    assert!(summary_line(&summary).contains("INCOMPLETE"));
}

#[test]
fn a_parent_cycle_and_duplicate_ids_still_show_every_span_once() {
    let mut spans = sample();
    // Two spans that name each other as parent, and a duplicate of a span id.
    spans.push(span_at(
        "x",
        "cycle 1",
        20,
        21,
        crate::model::SpanKind::Internal,
        (0, 1),
    ));
    spans.push(span_at(
        "x",
        "cycle 2",
        21,
        20,
        crate::model::SpanKind::Internal,
        (0, 1),
    ));
    spans.push(span_at(
        "x",
        "dup",
        4,
        3,
        crate::model::SpanKind::Internal,
        (0, 1),
    ));
    let traces = layouts(&spans);
    let total: usize = traces.iter().map(|t| t.rows.len()).sum();
    assert_eq!(total, spans.len());
}

#[test]
fn a_partial_or_cut_short_trace_says_so_in_its_summary() {
    let spans = sample();
    let mut layout = layouts(&spans).remove(0);
    layout.lost_spans = 3;
    layout.cut_short = true;
    let summary = layout.summary(HopNames::default());
    assert!(summary.is_partial());
    assert_eq!(
        summary_line(&summary),
        format!(
            "trace {TRACE}: 5 spans, PARTIAL (3 more spans dropped over the per-trace limit), \
1.0 ms; 1 hop (1 http); 1 link; cut short by the stop (its quiet window had not passed)"
        )
    );
}

#[test]
fn a_consumer_root_linked_to_another_trace_is_continued_by_link() {
    let mut consumer = span_at("worker", "process jobs", 7, 0, SpanKind::Consumer, (0, 10));
    let other = TraceId([9; 16]);
    consumer.links.push(crate::model::Link {
        trace_id: other,
        span_id: SpanId([3; 8]),
        trace_state: String::new(),
        attributes: Vec::new(),
        flags: 0,
    });
    let spans = [consumer];
    let summary = layouts(&spans)[0].summary(HopNames::default());
    assert_eq!(summary.continued_from, Some((other, SpanId([3; 8]))));
    assert!(
        summary_line(&summary).ends_with(&format!(
            "; continued by link from span 0303030303030303 of trace {other}"
        )),
        "{}",
        summary_line(&summary)
    );
    // A link inside the trace, or from a span that is not a consumer root: no continuation.
    let mut server = spans[0].clone();
    server.kind = SpanKind::Server;
    let summary = layouts(&[server]).remove(0).summary(HopNames::default());
    assert_eq!(summary.continued_from, None);
}

#[test]
fn durations_read_naturally() {
    assert_eq!(format_duration(Duration::from_micros(850)), "850 µs");
    assert_eq!(format_duration(Duration::from_micros(12_345)), "12.3 ms");
    assert_eq!(format_duration(Duration::from_millis(1240)), "1.24 s");
}
