//! Spans and traces as JSON: ids in W3C hex, times in Unix nanoseconds, attribute values as
//! JSON values (bytes in base64, key-value lists as objects).

use base64::Engine as _;
use serde_json::{Map, Value as Json, json};

use super::view::TraceView;
use crate::model::{KeyValue, LogRecord, Span, Value};

/// An attribute value as JSON.
pub fn value(value: &Value) -> Json {
    match value {
        Value::Bool(b) => Json::from(*b),
        Value::Int(i) => Json::from(*i),
        Value::Double(f) => Json::from(*f),
        Value::String(s) => Json::from(s.as_str()),
        Value::Bytes(b) => Json::from(base64::engine::general_purpose::STANDARD.encode(b)),
        Value::Array(values) => Json::Array(values.iter().map(self::value).collect()),
        Value::KvList(kvs) => attributes(kvs),
        Value::Empty => Json::Null,
    }
}

/// Attributes as one JSON object (the first value of a repeated key wins).
pub fn attributes(attributes: &[KeyValue]) -> Json {
    let mut map = Map::new();
    for kv in attributes {
        if !map.contains_key(&*kv.key) {
            map.insert(kv.key.to_string(), value(&kv.value));
        }
    }
    Json::Object(map)
}

/// One span as a JSON object; a span with a first chunk ([`crate::stream::first_chunk`]) has
/// it in `first_chunk_unix_nano`.
pub fn span(span: &Span) -> Json {
    let mut json = span_fields(span);
    if let Some(at) = crate::stream::first_chunk(span)
        && let Json::Object(map) = &mut json
    {
        map.insert("first_chunk_unix_nano".to_owned(), Json::from(at));
    }
    json
}

/// The "time to first chunk by hop" table as a JSON array (empty for a trace without one):
/// per part from the outermost server inward, `part` (`gateway`, `network`, `engine`), the
/// span's `span_id`, `service` and `name`, `first_chunk_ns` (after the outermost server's start)
/// and `added_ns`.
pub fn first_chunk_by_hop(hops: &[crate::stream::StreamHop<'_>]) -> Json {
    Json::Array(
        hops.iter()
            .map(|hop| {
                json!({
                    "part": hop.part.name(),
                    "span_id": hop.span.span_id.to_string(),
                    "service": hop.span.service(),
                    "name": hop.span.name,
                    "first_chunk_ns": hop.first_chunk_at,
                    "added_ns": hop.added,
                })
            })
            .collect(),
    )
}

fn span_fields(span: &Span) -> Json {
    let message = match &span.status {
        crate::model::Status::Error(message) => Some(message.as_str()),
        _ => None,
    };
    json!({
        "trace_id": span.trace_id.to_string(),
        "span_id": span.span_id.to_string(),
        "parent_span_id": span.parent_span_id.map(|p| p.to_string()),
        "parent_is_remote": span.parent_is_remote(),
        "flags": span.flags,
        "name": span.name,
        "kind": span.kind.name(),
        "service": span.service(),
        "scope": span.scope.name,
        "start_unix_nano": span.start_unix_nano,
        "end_unix_nano": span.end_unix_nano,
        "duration_ns": span.duration_nanos(),
        "status": span.status.name(),
        "status_message": message,
        "attributes": attributes(&span.attributes),
        "links": span.links.iter().map(|l| json!({
            "trace_id": l.trace_id.to_string(),
            "span_id": l.span_id.to_string(),
            "attributes": attributes(&l.attributes),
        })).collect::<Vec<_>>(),
        "events": span.events.iter().map(|e| json!({
            "name": e.name,
            "time_unix_nano": e.time_unix_nano,
            "attributes": attributes(&e.attributes),
        })).collect::<Vec<_>>(),
    })
}

/// One log record as a JSON object: `time_unix_nano` (its time, else when observed),
/// `severity` (as [`LogRecord::severity`] names it), `severity_number`, `body`, `attributes`,
/// `service`, and `trace_id` and `span_id` (`null` when none).
pub fn log(log: &LogRecord) -> Json {
    json!({
        "time_unix_nano": log.time(),
        "severity": log.severity(),
        "severity_number": log.severity_number,
        "body": value(&log.body),
        "attributes": attributes(&log.attributes),
        "service": log.service(),
        "trace_id": log.trace_id.map(|t| t.to_string()),
        "span_id": log.span_id.map(|s| s.to_string()),
    })
}

/// Every span of every trace, trace by trace in tree order, as one JSON array.
pub fn spans(traces: &[TraceView<'_>]) -> Json {
    Json::Array(
        traces
            .iter()
            .flat_map(|t| t.layout().rows.iter().map(|r| span(r.span)))
            .collect(),
    )
}

/// One trace as one JSON object: `trace_id`, `services` (in order of first appearance),
/// `partial` (spans of it were dropped by a bound: `lost_spans` of them), `cut_short` (shown
/// before its quiet window passed, at a stop), `continued_from` (`{"trace_id", "span_id"}` of
/// the span its root links to in another trace, as a consumer that links does; else `null`)
/// and `spans` in tree order (a span with log records given to the view has them in `logs`,
/// in order of time); a streamed trace has its `first_chunk_by_hop` table
/// ([`first_chunk_by_hop`]). `lens watch --json` prints one a line.
pub fn trace(view: &TraceView<'_>) -> Json {
    let mut json = trace_fields(view);
    let spans: Vec<&Span> = view.layout().rows.iter().map(|r| r.span).collect();
    let hops = crate::stream::by_hop(&spans);
    if !hops.is_empty()
        && let Json::Object(map) = &mut json
    {
        map.insert("first_chunk_by_hop".to_owned(), first_chunk_by_hop(&hops));
    }
    json
}

fn trace_fields(view: &TraceView<'_>) -> Json {
    let trace = view.layout();
    let continued_from = view.summary().continued_from.map(|(trace_id, span_id)| {
        json!({"trace_id": trace_id.to_string(), "span_id": span_id.to_string()})
    });
    json!({
        "trace_id": trace.trace_id.to_string(),
        "services": view.services(),
        "continued_from": continued_from,
        "partial": trace.lost_spans > 0,
        "lost_spans": trace.lost_spans,
        "cut_short": trace.cut_short,
        "start_unix_nano": trace.start,
        "end_unix_nano": trace.end,
        "spans": trace.rows.iter().map(|r| {
            let mut json = span(r.span);
            let logs = view.logs(r.span.span_id);
            if !logs.is_empty()
                && let Json::Object(map) = &mut json
            {
                map.insert("logs".to_owned(), logs.iter().map(|l| log(l)).collect());
            }
            json
        }).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::testing::{TRACE, sample, view};

    #[test]
    fn json_has_every_span_with_ids_kinds_services_and_links() {
        let spans = sample();
        let json = super::spans(&[view(&spans)]);
        let array = json.as_array().unwrap();
        assert_eq!(array.len(), 5);
        let b = array.iter().find(|s| s["name"] == "stage b").unwrap();
        assert_eq!(b["trace_id"], TRACE);
        assert_eq!(b["span_id"], "0000000000000005");
        assert_eq!(b["parent_span_id"], "0000000000000003");
        assert_eq!(b["kind"], "INTERNAL");
        assert_eq!(b["service"], "gateway");
        assert_eq!(b["duration_ns"], 200_000);
        assert_eq!(b["links"][0]["span_id"], "0000000000000004");
        let root = &array[0];
        assert_eq!(root["name"], "request");
        assert!(root["parent_span_id"].is_null());
        let server = array.iter().find(|s| s["kind"] == "SERVER").unwrap();
        assert_eq!(server["attributes"]["http.request.method"], "POST");
        assert_eq!(server["parent_is_remote"], true);
        assert_eq!(server["flags"], 0x301);
    }

    #[test]
    fn a_consumer_root_that_links_out_names_the_span_it_continues() {
        let mut consumer = crate::testing::span_at(
            "worker",
            "process jobs",
            7,
            0,
            crate::model::SpanKind::Consumer,
            (0, 10),
        );
        consumer.links.push(crate::model::Link {
            trace_id: crate::model::TraceId([9; 16]),
            span_id: crate::model::SpanId([3; 8]),
            trace_state: String::new(),
            attributes: Vec::new(),
            flags: 0,
        });
        let spans = [consumer];
        assert_eq!(
            trace(&view(&spans))["continued_from"],
            json!({"trace_id": "09".repeat(16), "span_id": "03".repeat(8)})
        );
    }

    #[test]
    fn a_trace_object_names_its_services_in_order() {
        let spans = sample();
        let t = trace(&view(&spans));
        assert_eq!(t["trace_id"], TRACE);
        assert_eq!(t["services"], json!(["client", "gateway"]));
        assert_eq!(t["spans"].as_array().unwrap().len(), 5);
        assert_eq!(
            (&t["partial"], &t["cut_short"]),
            (&json!(false), &json!(false))
        );
        let t = trace(&view(&spans).with_lost_spans(2));
        assert_eq!((&t["partial"], &t["lost_spans"]), (&json!(true), &json!(2)));
        assert!(t["continued_from"].is_null());
    }

    #[test]
    fn values_of_every_type() {
        assert_eq!(value(&Value::Bytes(vec![0xff])), json!("/w=="));
        assert_eq!(
            value(&Value::KvList(vec![KeyValue::new("a", Value::Int(1))])),
            json!({"a": 1})
        );
        assert_eq!(
            value(&Value::Array(vec![Value::Empty, Value::Double(0.5)])),
            json!([null, 0.5])
        );
    }
}
