//! The demo's spans (the SDK's `SpanData`, from its in-process collector) as lens-watch's model:
//! one more producer of the batches a `lens_watch::session::Session` takes.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use lens_watch::model::{
    self, Event, FLAG_HAS_IS_REMOTE, FLAG_PARENT_IS_REMOTE, KeyValue, Link, Resource, Scope,
    SpanId, TraceId,
};
use opentelemetry::trace::{SpanKind, Status};
use opentelemetry::{Array, Value};
use opentelemetry_sdk::trace::SpanData;

/// Nanoseconds since the Unix epoch (0 before it).
fn unix_nanos(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

fn value(value: &Value) -> model::Value {
    use model::Value as V;
    match value {
        Value::Bool(b) => V::Bool(*b),
        Value::I64(i) => V::Int(*i),
        Value::F64(f) => V::Double(*f),
        Value::String(s) => V::String(s.as_str().to_owned()),
        Value::Array(Array::Bool(v)) => V::Array(v.iter().map(|b| V::Bool(*b)).collect()),
        Value::Array(Array::I64(v)) => V::Array(v.iter().map(|i| V::Int(*i)).collect()),
        Value::Array(Array::F64(v)) => V::Array(v.iter().map(|f| V::Double(*f)).collect()),
        Value::Array(Array::String(v)) => {
            V::Array(v.iter().map(|s| V::String(s.as_str().to_owned())).collect())
        }
        other => V::String(other.to_string()),
    }
}

fn attributes(kvs: &[opentelemetry::KeyValue]) -> Vec<KeyValue> {
    kvs.iter()
        .map(|kv| KeyValue::new(kv.key.as_str(), value(&kv.value)))
        .collect()
}

fn kind(kind: &SpanKind) -> model::SpanKind {
    match kind {
        SpanKind::Client => model::SpanKind::Client,
        SpanKind::Server => model::SpanKind::Server,
        SpanKind::Producer => model::SpanKind::Producer,
        SpanKind::Consumer => model::SpanKind::Consumer,
        SpanKind::Internal => model::SpanKind::Internal,
    }
}

/// Turns SDK spans (each with the service that produced it) into lens-watch spans, sharing one
/// resource per service and one scope per scope name, as an OTLP export would.
#[derive(Debug, Default)]
pub(crate) struct FromSdk {
    resources: HashMap<Arc<str>, Arc<Resource>>,
    scopes: HashMap<(String, String), Arc<Scope>>,
}

impl FromSdk {
    /// `data`, produced by `service`, as a lens-watch span; `None` for an invalid id (the SDK
    /// never makes one).
    pub(crate) fn span(&mut self, service: &Arc<str>, data: &SpanData) -> Option<model::Span> {
        let resource = Arc::clone(
            self.resources
                .entry(Arc::clone(service))
                .or_insert_with(|| Arc::new(Resource::for_service(service))),
        );
        let scope_key = (
            data.instrumentation_scope.name().to_owned(),
            data.instrumentation_scope
                .version()
                .unwrap_or_default()
                .to_owned(),
        );
        let scope = Arc::clone(self.scopes.entry(scope_key).or_insert_with_key(|(n, v)| {
            Arc::new(Scope {
                name: n.clone(),
                version: v.clone(),
            })
        }));
        let context = &data.span_context;
        let remote = if data.parent_span_is_remote {
            FLAG_PARENT_IS_REMOTE
        } else {
            0
        };
        Some(model::Span {
            trace_id: TraceId::from_slice(&context.trace_id().to_bytes())?,
            span_id: SpanId::from_slice(&context.span_id().to_bytes())?,
            parent_span_id: SpanId::from_slice(&data.parent_span_id.to_bytes()),
            trace_state: context.trace_state().header(),
            flags: u32::from(context.trace_flags().to_u8()) | FLAG_HAS_IS_REMOTE | remote,
            name: data.name.to_string(),
            kind: kind(&data.span_kind),
            resource,
            scope,
            start_unix_nano: unix_nanos(data.start_time),
            end_unix_nano: unix_nanos(data.end_time),
            attributes: attributes(&data.attributes),
            events: data
                .events
                .events
                .iter()
                .map(|e| Event {
                    time_unix_nano: unix_nanos(e.timestamp),
                    name: e.name.to_string(),
                    attributes: attributes(&e.attributes),
                })
                .collect(),
            links: data
                .links
                .links
                .iter()
                .filter_map(|l| {
                    Some(Link {
                        trace_id: TraceId::from_slice(&l.span_context.trace_id().to_bytes())?,
                        span_id: SpanId::from_slice(&l.span_context.span_id().to_bytes())?,
                        trace_state: l.span_context.trace_state().header(),
                        attributes: attributes(&l.attributes),
                        flags: u32::from(l.span_context.trace_flags().to_u8())
                            | FLAG_HAS_IS_REMOTE
                            | if l.span_context.is_remote() {
                                FLAG_PARENT_IS_REMOTE
                            } else {
                                0
                            },
                    })
                })
                .collect(),
            status: match &data.status {
                Status::Unset => model::Status::Unset,
                Status::Ok => model::Status::Ok,
                Status::Error { description } => model::Status::Error(description.to_string()),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use opentelemetry::trace::{Span as _, TraceContextExt as _, Tracer as _};

    #[test]
    fn sdk_spans_keep_ids_parents_kinds_attributes_and_remoteness() {
        let collector = crate::demo::collect::Collector::default();
        let service = crate::demo::collect::Service::new(&collector, "gateway");
        let tracer = service.tracer(lens_tonic::RAY_TRACER_NAME);
        let mut root = tracer.start("root");
        root.set_attribute(opentelemetry::KeyValue::new("n", 3_i64));
        let cx = opentelemetry::Context::current().with_span(root);
        tracer.start_with_context("child", &cx).end();
        cx.span().end();
        let mut from = FromSdk::default();
        let spans: Vec<model::Span> = collector
            .spans()
            .iter()
            .map(|s| from.span(&s.service, &s.data).unwrap())
            .collect();
        let (child, root) = (&spans[0], &spans[1]);
        assert_eq!(child.parent_span_id, Some(root.span_id));
        assert_eq!(child.parent_is_remote(), Some(false));
        assert_eq!(root.attribute("n"), Some(&model::Value::Int(3)));
        assert_eq!(root.service(), "gateway");
        // One resource and one scope shared by both.
        assert!(Arc::ptr_eq(&child.resource, &root.resource));
        assert!(Arc::ptr_eq(&child.scope, &root.scope));
        assert_eq!(child.flags & 0xff, 0x01);
    }
}
