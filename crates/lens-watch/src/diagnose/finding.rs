//! The findings' vocabulary (severity, rule, finding), a finding as text and as JSON, and the
//! counts by severity.

use std::fmt;

use crate::model::{SpanId, TraceId};

/// Where each rule is explained; a finding's [`Finding::doc`] is this plus the rule id.
pub const DOC_BASE: &str = "docs/doctor.md#";

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Severity {
    /// Context was lost: `lens check` exits 1.
    Error,
    /// Something is likely wrong.
    Warning,
    /// Worth knowing, expected by design (silenced by `--quiet`).
    Info,
}

impl Severity {
    /// `error`, `warning` or `info`.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// The doctor's rules; [`Rule::id`] is the fixed id users see and silence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rule {
    /// A CLIENT span without a child, and a new root SERVER span for the same request within it.
    LostContext,
    /// A server that started a new trace linked to the client's context (its trust policy).
    UntrustedLinked,
    /// A span whose parent never arrived.
    MissingParent,
    /// A child that starts before (or a server that ends after) its parent in another service.
    ClockSkew,
    /// The W3C random flag set on a parent and not on its child in another service.
    FlagDropped,
    /// tracestate entries on a CLIENT or PRODUCER span and none on its child in another service
    /// (whose exporter is known to report tracestate).
    TracestateDropped,
    /// Baggage keys a CLIENT or PRODUCER span recorded sending that its child in another service
    /// did not record receiving (`lens.baggage.keys` on both).
    BaggageDropped,
    /// A span that names itself as its parent.
    SelfParent,
    /// Two spans of one trace with the same span id.
    DuplicateSpanId,
    /// A link to a span in a trace that was received without it.
    DanglingLink,
    /// A consumer that started a new trace for a message, where several producers could have
    /// sent it (same destination, same window, no message id): their lost context, unsure whose.
    AmbiguousProducer,
    /// A consumer whose trust policy ignored the context in a message on purpose
    /// (`lens.trace.new_root` = `untrusted:ignored`).
    UntrustedIgnored,
    /// A CLIENT span without a child, and several new root SERVER spans for the same request
    /// within it at other addresses (behind a proxy or load balancer): context was lost on one
    /// of them, which one the doctor cannot tell.
    AmbiguousHop,
    /// A hop whose first chunk left only when the stream it read from had ended.
    BufferedStream,
    /// A span recorded for a request its sender did not sample: a hop that forces the sampled
    /// flag on (`lens probe --unsampled`; the doctor, where the parent's exporter reports flags).
    SamplingForced,
    /// A span in another request's trace: a service that attached another request's context
    /// (`lens probe --concurrency`; the doctor, one CLIENT span with SERVER children of two
    /// requests).
    ContextBleed,
}

impl Rule {
    /// Every rule, in the order docs/doctor.md explains them.
    pub const ALL: [Rule; 16] = [
        Rule::LostContext,
        Rule::UntrustedLinked,
        Rule::MissingParent,
        Rule::ClockSkew,
        Rule::FlagDropped,
        Rule::TracestateDropped,
        Rule::BaggageDropped,
        Rule::SelfParent,
        Rule::DuplicateSpanId,
        Rule::DanglingLink,
        Rule::AmbiguousProducer,
        Rule::UntrustedIgnored,
        Rule::AmbiguousHop,
        Rule::BufferedStream,
        Rule::SamplingForced,
        Rule::ContextBleed,
    ];

    /// The rule's id: `lost-context`, `untrusted-linked`, ...
    pub fn id(self) -> &'static str {
        match self {
            Rule::LostContext => "lost-context",
            Rule::UntrustedLinked => "untrusted-linked",
            Rule::MissingParent => "missing-parent",
            Rule::ClockSkew => "clock-skew",
            Rule::FlagDropped => "flag-dropped",
            Rule::TracestateDropped => "tracestate-dropped",
            Rule::BaggageDropped => "baggage-dropped",
            Rule::SelfParent => "self-parent",
            Rule::DuplicateSpanId => "duplicate-span-id",
            Rule::DanglingLink => "dangling-link",
            Rule::AmbiguousProducer => "ambiguous-producer",
            Rule::UntrustedIgnored => "untrusted-ignored",
            Rule::AmbiguousHop => "ambiguous-hop",
            Rule::BufferedStream => "buffered-stream",
            Rule::SamplingForced => "sampling-forced",
            Rule::ContextBleed => "context-bleed",
        }
    }

    /// The rule's severity.
    pub fn severity(self) -> Severity {
        match self {
            Rule::LostContext => Severity::Error,
            Rule::UntrustedLinked | Rule::UntrustedIgnored | Rule::BufferedStream => Severity::Info,
            _ => Severity::Warning,
        }
    }
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Finding {
    /// The rule that found it.
    pub rule: Rule,
    /// The traces concerned (two for a lost hop: the client's, then the server's).
    pub trace_ids: Vec<TraceId>,
    /// The spans concerned.
    pub span_ids: Vec<SpanId>,
    /// The services concerned.
    pub services: Vec<String>,
    /// One line a person can act on.
    pub message: String,
}

impl Finding {
    /// The rule's severity.
    pub fn severity(&self) -> Severity {
        self.rule.severity()
    }

    /// The rule's section of docs/doctor.md.
    pub fn doc(&self) -> String {
        format!("{DOC_BASE}{}", self.rule.id())
    }

    /// The finding as one JSON object (no newline): `{"finding": "<rule id>", "severity": ...,
    /// "trace_ids": [...], "span_ids": [...], "services": [...], "message": ..., "doc": ...}`.
    pub fn to_json(&self) -> String {
        self.to_value().to_string()
    }

    /// [`Finding::to_json`]'s object, as a value to place in a larger document.
    pub(crate) fn to_value(&self) -> serde_json::Value {
        serde_json::json!({
            "finding": self.rule.id(),
            "severity": self.severity().name(),
            "trace_ids": self.trace_ids.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "span_ids": self.span_ids.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "services": self.services,
            "message": self.message,
            "doc": self.doc(),
        })
    }
}

impl fmt::Display for Finding {
    /// `error[lost-context] message (docs/doctor.md#lost-context)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.painted(false).fmt(f)
    }
}

impl Finding {
    /// The finding's line, its `severity[rule]` in ANSI colour when `colour` (red for an error,
    /// yellow for a warning, dim for info).
    pub fn painted(&self, colour: bool) -> Painted<'_> {
        Painted {
            finding: self,
            colour,
        }
    }
}

/// A finding's line, coloured or not: [`Finding::painted`].
#[derive(Clone, Copy, Debug)]
pub struct Painted<'a> {
    finding: &'a Finding,
    colour: bool,
}

impl fmt::Display for Painted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let finding = self.finding;
        let (on, off) = match finding.severity() {
            _ if !self.colour => ("", ""),
            Severity::Error => ("\x1b[1;31m", "\x1b[0m"),
            Severity::Warning => ("\x1b[33m", "\x1b[0m"),
            Severity::Info => ("\x1b[2m", "\x1b[0m"),
        };
        write!(
            f,
            "{on}{}[{}]{off} {} ({})",
            finding.severity().name(),
            finding.rule.id(),
            finding.message,
            finding.doc()
        )
    }
}

/// Findings counted by severity, for a status line: `N findings (E errors, W warnings, I
/// info)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FindingCounts {
    /// Error findings.
    pub errors: u64,
    /// Warning findings.
    pub warnings: u64,
    /// Info findings.
    pub info: u64,
}

impl FindingCounts {
    /// Counts `findings`.
    pub fn add(&mut self, findings: &[Finding]) {
        for f in findings {
            match f.severity() {
                Severity::Error => self.errors += 1,
                Severity::Warning => self.warnings += 1,
                Severity::Info => self.info += 1,
            }
        }
    }
}

impl fmt::Display for FindingCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
pub(super) fn millis(nanos: u128) -> String {
    format!("{:.3} ms", nanos as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::{Value as Json, json};

    use super::*;

    const A: &str = "0af7651916cd43dd8448eb211c80319c";

    #[test]
    fn findings_as_json_lines() {
        let f = Finding {
            rule: Rule::SelfParent,
            trace_ids: vec![TraceId::from_hex(A).unwrap()],
            span_ids: vec![SpanId(4u64.to_be_bytes())],
            services: vec!["svc".into()],
            message: "m".into(),
        };
        let v: Json = serde_json::from_str(&f.to_json()).unwrap();
        assert_eq!(
            v,
            json!({"finding": "self-parent", "severity": "warning", "trace_ids": [A],
                "span_ids": ["0000000000000004"], "services": ["svc"], "message": "m",
                "doc": "docs/doctor.md#self-parent"})
        );
        assert_eq!(
            f.to_string(),
            "warning[self-parent] m (docs/doctor.md#self-parent)"
        );
    }
}
