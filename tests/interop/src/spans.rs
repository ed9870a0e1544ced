//! Finished spans of both languages in one shape, read from and written to JSON files.

use std::path::Path;
use std::time::UNIX_EPOCH;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry::trace::{SpanId, SpanKind, Status};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracer, SdkTracerProvider, SpanData};
use serde::{Deserialize, Serialize};

use crate::check::Checks;
use crate::error::{Error, Result};

/// The language that recorded a span.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Side {
    #[default]
    Python,
    Rust,
}

/// One finished span (the JSON of `tests/interop/python/common.py`'s `span_json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct SpanRecord {
    #[serde(default)]
    pub(crate) side: Side,
    pub(crate) name: String,
    /// `SERVER`, `CLIENT`, `INTERNAL`, `PRODUCER`, `CONSUMER`.
    pub(crate) kind: String,
    pub(crate) scope: Option<String>,
    pub(crate) trace_id: String,
    pub(crate) span_id: String,
    pub(crate) trace_flags: u8,
    pub(crate) parent_span_id: Option<String>,
    pub(crate) parent_is_remote: Option<bool>,
    #[serde(default)]
    pub(crate) attributes: serde_json::Map<String, serde_json::Value>,
    /// The span status: `UNSET`, `OK` or `ERROR`.
    #[serde(default)]
    pub(crate) status: String,
    /// When the span ended, nanoseconds since the Unix epoch (both sides read the same clock).
    #[serde(default)]
    pub(crate) end_unix_nano: u64,
    /// The span contexts the span links to (Rust spans; the Python side writes none).
    #[serde(default)]
    pub(crate) links: Vec<LinkRecord>,
}

/// One link of a span: the linked span's ids.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LinkRecord {
    pub(crate) trace_id: String,
    pub(crate) span_id: String,
}

impl SpanRecord {
    fn from_rust(span: &SpanData) -> Self {
        let parent = (span.parent_span_id != SpanId::INVALID).then_some(span.parent_span_id);
        SpanRecord {
            side: Side::Rust,
            name: span.name.to_string(),
            kind: match span.span_kind {
                SpanKind::Server => "SERVER",
                SpanKind::Client => "CLIENT",
                SpanKind::Producer => "PRODUCER",
                SpanKind::Consumer => "CONSUMER",
                SpanKind::Internal => "INTERNAL",
            }
            .to_owned(),
            scope: Some(span.instrumentation_scope.name().to_owned()),
            trace_id: span.span_context.trace_id().to_string(),
            span_id: span.span_context.span_id().to_string(),
            trace_flags: span.span_context.trace_flags().to_u8(),
            parent_span_id: parent.map(|p| p.to_string()),
            parent_is_remote: parent.map(|_| span.parent_span_is_remote),
            attributes: span
                .attributes
                .iter()
                .map(|kv| {
                    (
                        kv.key.to_string(),
                        serde_json::Value::String(kv.value.to_string()),
                    )
                })
                .collect(),
            status: match span.status {
                Status::Unset => "UNSET",
                Status::Ok => "OK",
                Status::Error { .. } => "ERROR",
            }
            .to_owned(),
            end_unix_nano: span
                .end_time
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
            links: span
                .links
                .iter()
                .map(|l| LinkRecord {
                    trace_id: l.span_context.trace_id().to_string(),
                    span_id: l.span_context.span_id().to_string(),
                })
                .collect(),
        }
    }

    /// The attribute `key` as text (Rust values are written as text; Python's as JSON).
    pub(crate) fn attribute(&self, key: &str) -> Option<String> {
        self.attributes.get(key).map(|v| match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    }

    pub(crate) fn is(&self, side: Side, kind: &str) -> bool {
        self.side == side && self.kind == kind
    }
}

/// A tracer provider of the harness that keeps finished spans in memory, and its tracer
/// (scope `lens-interop`).
pub(crate) struct Recording {
    pub(crate) exporter: InMemorySpanExporter,
    pub(crate) provider: SdkTracerProvider,
    pub(crate) tracer: SdkTracer,
}

impl Recording {
    pub(crate) fn new() -> Self {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let tracer = provider.tracer("lens-interop");
        Recording {
            exporter,
            provider,
            tracer,
        }
    }
}

/// The spans the Python script wrote to `path`.
pub(crate) fn read_python(path: &Path) -> Result<Vec<SpanRecord>> {
    let text = std::fs::read(path).map_err(Error::io(format!("reading {}", path.display())))?;
    serde_json::from_slice(&text).map_err(Error::json(format!("spans in {}", path.display())))
}

/// The spans of the in-memory exporter, also written to `path` as JSON.
pub(crate) fn take_rust(exporter: &InMemorySpanExporter, path: &Path) -> Result<Vec<SpanRecord>> {
    let spans: Vec<SpanRecord> = exporter
        .get_finished_spans()
        .map_err(|e| Error::Http {
            what: "in-memory exporter".into(),
            message: e.to_string(),
        })?
        .iter()
        .map(SpanRecord::from_rust)
        .collect();
    exporter.reset();
    let json = serde_json::to_vec_pretty(&spans).map_err(Error::json("rust spans"))?;
    std::fs::write(path, json).map_err(Error::io(format!("writing {}", path.display())))?;
    Ok(spans)
}

/// The single span of `side` and `kind` for which `filter` holds; a failed check otherwise.
pub(crate) fn one<'a>(
    checks: &mut Checks,
    spans: &'a [SpanRecord],
    side: Side,
    kind: &str,
    what: &str,
    filter: impl Fn(&SpanRecord) -> bool,
) -> Option<&'a SpanRecord> {
    let found: Vec<&SpanRecord> = spans
        .iter()
        .filter(|s| s.is(side, kind) && filter(s))
        .collect();
    checks.check(
        &format!("exactly one {side:?} {kind} span: {what}"),
        found.len() == 1,
        || {
            format!(
                "found {}: {:?}",
                found.len(),
                found.iter().map(|s| &s.name).collect::<Vec<_>>()
            )
        },
    );
    (found.len() == 1).then(|| found[0])
}

/// Every span has `trace_id`, and the spans are counted.
pub(crate) fn same_trace(checks: &mut Checks, spans: &[SpanRecord], trace_id: &str) {
    let others: Vec<String> = spans
        .iter()
        .filter(|s| s.trace_id != trace_id)
        .map(|s| format!("{:?} {} {:?} in {}", s.side, s.kind, s.name, s.trace_id))
        .collect();
    checks.check(
        &format!("all {} spans in trace {trace_id}", spans.len()),
        others.is_empty(),
        || format!("spans of other traces: {others:?}"),
    );
    checks.spans += spans.len();
}

/// `child`'s parent is `parent`, a span of the other language when `remote`.
pub(crate) fn parent_is(
    checks: &mut Checks,
    child: Option<&SpanRecord>,
    parent: Option<&SpanRecord>,
    remote: bool,
) {
    let (Some(child), Some(parent)) = (child, parent) else {
        checks.fail("parent link", "a span of the link is missing");
        return;
    };
    let name = format!(
        "{:?} {} {:?} has parent {:?} {} {:?}{}",
        child.side,
        child.kind,
        child.name,
        parent.side,
        parent.kind,
        parent.name,
        if remote {
            " across the language boundary"
        } else {
            ""
        }
    );
    checks.check(
        &name,
        child.parent_span_id.as_deref() == Some(parent.span_id.as_str())
            && child.parent_is_remote == Some(remote)
            && child.trace_id == parent.trace_id,
        || {
            format!(
                "child parent {:?} (remote {:?}), parent span {} trace {} vs {}",
                child.parent_span_id,
                child.parent_is_remote,
                parent.span_id,
                parent.trace_id,
                child.trace_id
            )
        },
    );
}
