//! What `lens demo`, `lens watch` and `lens check` share around lens-watch's one renderer: the
//! names of lens' own kinds of hop, and the SDK's spans (the demo's in-process collector) as
//! lens-watch's model, one more source of spans for the same view.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use lens_watch::assemble::{Assembler, Stats};
use lens_watch::diagnose::{Finding, Severity};
use lens_watch::model::{
    self, Event, FLAG_HAS_IS_REMOTE, FLAG_PARENT_IS_REMOTE, KeyValue, Link, Resource, Scope,
    SpanId, TraceId,
};
use lens_watch::render::{self, HopNames};
use opentelemetry::trace::{SpanKind, Status};
use opentelemetry::{Array, Value};
use opentelemetry_sdk::trace::SpanData;

/// The instrumentation scope of the pipeline-rank spans: a span of this scope with a remote
/// parent got its context through the trace-context broadcast.
pub(crate) const BROADCAST_SCOPE: &str = "lens-dist";

/// lens' scopes whose remote-parent spans are a known kind of hop.
pub(crate) const HOP_NAMES: HopNames<'static> = HopNames {
    scopes: &[
        (lens_tonic::RAY_TRACER_NAME, "remote call"),
        (BROADCAST_SCOPE, "broadcast"),
    ],
};

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

/// `--color WHEN` (alias `--colour`), the same in every command that draws a waterfall.
#[derive(Clone, Copy, Debug, clap::Args)]
pub(crate) struct ColourFlag {
    /// Colour: auto (when stdout is a terminal and NO_COLOR is unset), always or never
    #[arg(
        long,
        visible_alias = "colour",
        value_name = "WHEN",
        value_enum,
        ignore_case = true,
        default_value = "auto"
    )]
    pub(crate) color: Colour,
}

/// Colour: auto (when stdout is a terminal and NO_COLOR is unset), always or never.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Colour {
    Auto,
    Always,
    Never,
}

impl Colour {
    /// Whether to colour standard output.
    pub(crate) fn enabled(self) -> bool {
        use std::io::IsTerminal as _;
        match self {
            Colour::Always => true,
            Colour::Never => false,
            Colour::Auto => {
                std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
            }
        }
    }
}

/// How a completed trace is printed.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Output {
    /// The waterfall, coloured or not.
    Text {
        /// ANSI colours.
        colour: bool,
    },
    /// One JSON object a line.
    Json,
}

/// Trace `id` held by `assembler`, printed as `output` into `out`: the waterfall (links into
/// other held traces resolved by name) or one JSON line, marked partial when the assembler
/// dropped spans of it, and cut short when `cut_short` (shown at a stop, before its quiet
/// window passed). Nothing when the trace is not held.
pub(crate) fn print_trace(
    assembler: &Assembler,
    id: TraceId,
    output: Output,
    cut_short: bool,
    out: &mut String,
) {
    let Some(entry) = assembler.trace(&id) else {
        return;
    };
    let mut layout = render::layout(id, entry.spans.iter().collect());
    layout.lost_spans = entry.lost_spans;
    layout.cut_short = cut_short;
    match output {
        Output::Json => {
            out.push_str(&render::json::trace(&layout).to_string());
            out.push('\n');
        }
        Output::Text { colour } => {
            let mut index = render::index(&entry.spans);
            for link in entry.spans.iter().flat_map(|s| &s.links) {
                if link.trace_id == id {
                    continue;
                }
                let target = assembler
                    .trace(&link.trace_id)
                    .and_then(|t| t.spans.iter().find(|s| s.span_id == link.span_id));
                if let Some(target) = target {
                    index.insert((link.trace_id, link.span_id), target);
                }
            }
            render::text::render(&layout, &index, HOP_NAMES, colour, out);
        }
    }
}

/// `findings` printed as `output` into `out`: one line each (`error[lost-context] ...`), or one
/// JSON object a line. Info findings are left out when `quiet`.
pub(crate) fn print_findings(findings: &[Finding], output: Output, quiet: bool, out: &mut String) {
    for finding in findings {
        let severity = finding.severity();
        if quiet && severity == Severity::Info {
            continue;
        }
        match output {
            Output::Json => out.push_str(&finding.to_json()),
            Output::Text { colour } => {
                let (on, off) = match severity {
                    _ if !colour => ("", ""),
                    Severity::Error => ("\x1b[1;31m", "\x1b[0m"),
                    Severity::Warning => ("\x1b[33m", "\x1b[0m"),
                    Severity::Info => ("\x1b[2m", "\x1b[0m"),
                };
                out.push_str(&format!(
                    "{on}{}[{}]{off} {} ({})",
                    severity.name(),
                    finding.rule.id(),
                    finding.message,
                    finding.doc()
                ));
            }
        }
        out.push('\n');
    }
}

/// Findings counted by severity, for the status ("N findings (E errors, W warnings, I info)").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FindingCounts {
    pub(crate) errors: u64,
    pub(crate) warnings: u64,
    pub(crate) info: u64,
}

impl FindingCounts {
    /// Counts `findings` (info left out when `quiet`).
    pub(crate) fn add(&mut self, findings: &[Finding], quiet: bool) {
        for f in findings {
            match f.severity() {
                Severity::Error => self.errors += 1,
                Severity::Warning => self.warnings += 1,
                Severity::Info if !quiet => self.info += 1,
                Severity::Info => {}
            }
        }
    }
}

impl std::fmt::Display for FindingCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} findings ({} errors, {} warnings, {} info)",
            self.errors + self.warnings + self.info,
            self.errors,
            self.warnings,
            self.info
        )
    }
}

/// The status line: spans received, traces, services, rejected, evicted, and every span
/// dropped by its reason (never silent).
pub(crate) fn status_line(stats: &Stats) -> String {
    let mut line = format!(
        "{} spans received, {} traces ({} complete), {} services, {} rejected, {} traces evicted ({} spans)",
        stats.spans_received,
        stats.traces,
        stats.traces_completed,
        stats.services,
        stats.spans_rejected,
        stats.evicted_traces,
        stats.evicted_spans,
    );
    if stats.evicted_open_traces > 0 {
        line.push_str(&format!(
            ", {} of them open ({} spans never shown)",
            stats.evicted_open_traces, stats.dropped_evicted
        ));
    }
    if stats.dropped_late > 0 {
        line.push_str(&format!(
            ", {} later spans of evicted traces dropped",
            stats.dropped_late
        ));
    }
    if stats.dropped_spans > 0 {
        line.push_str(&format!(
            ", {} spans dropped over the per-trace limit",
            stats.dropped_spans
        ));
    }
    line
}

/// The account of every span received, for the end of a run: `received = shown + held + dropped
/// by reason` (and `saved`, when given, next to `received`).
pub(crate) fn span_account(stats: &Stats, saved: Option<u64>) -> String {
    let mut line = format!("{} spans received", stats.spans_received);
    if let Some(saved) = saved {
        line.push_str(&format!(", {saved} saved"));
    }
    line.push_str(&format!(": {} shown", stats.spans_shown));
    if stats.spans_open > 0 {
        line.push_str(&format!(", {} held open", stats.spans_open));
    }
    line.push_str(&format!(
        ", {} dropped ({} in traces evicted while open, {} arriving after their trace was evicted, \
{} over the per-trace limit)",
        stats.dropped(),
        stats.dropped_evicted,
        stats.dropped_late,
        stats.dropped_spans
    ));
    if stats.spans_rejected > 0 {
        line.push_str(&format!(
            "; {} more rejected by the decoder",
            stats.spans_rejected
        ));
    }
    line
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
