//! `lens inspect` for the three header values: traceparent, tracestate and baggage, each read by
//! lens-core's own parser and presented field by field, with what lens would send on.

use std::fmt::Write as _;

use lens_core::Limits;
use lens_core::baggage::{BaggageIssueReason, BaggageList};
use lens_core::lexical::trim_ows;
use lens_core::traceparent::{FLAG_RANDOM, FLAG_SAMPLED, KNOWN_FLAGS, TraceParent};
use lens_core::tracestate::TraceStateList;
use serde_json::json;

use super::inspection::{Inspection, Rejection, plural};

/// The header kinds `lens inspect` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    TraceParent,
    TraceState,
    Baggage,
}

impl Kind {
    pub(super) const ALL: [Kind; 3] = [Kind::TraceParent, Kind::TraceState, Kind::Baggage];

    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::TraceParent => "traceparent",
            Kind::TraceState => "tracestate",
            Kind::Baggage => "baggage",
        }
    }

    /// The kind whose header name is `name` (case-insensitive).
    pub(super) fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(name))
    }
}

const TRACEPARENT_EFFECT: &str = "no remote parent (a new trace starts), and the tracestate is dropped with it (docs/propagation-rules.md#traceparent)";

pub(super) fn traceparent(i: &mut Inspection, lines: &[&str], limits: &Limits) {
    let parsed = TraceParent::parse_lines(lines.iter().copied(), limits.traceparent_bytes);
    let tp = match parsed {
        Ok(tp) => tp,
        Err(error) => {
            let _ = writeln!(i.text, "invalid: {error}");
            let _ = writeln!(i.text, "  effect: {TRACEPARENT_EFFECT}");
            i.valid = false;
            i.rejections.push(Rejection::new(
                None,
                error.to_string(),
                Some(TRACEPARENT_EFFECT),
            ));
            return;
        }
    };
    let _ = writeln!(i.text, "valid");
    let version_note = if tp.version == 0 {
        ""
    } else {
        " (a later version, read with the version-00 layout; lens sends version 00)"
    };
    let _ = writeln!(i.text, "  version    {:02x}{version_note}", tp.version);
    let _ = writeln!(i.text, "  trace-id   {}", tp.trace_id);
    let _ = writeln!(i.text, "  parent-id  {}", tp.parent_id);
    let mut flags = vec![if tp.is_sampled() {
        "sampled"
    } else {
        "not sampled"
    }];
    if tp.is_random() {
        flags.push("random");
    }
    let _ = writeln!(
        i.text,
        "  flags      {:02x}: {}",
        tp.flags,
        flags.join(", ")
    );
    i.field("version", format!("{:02x}", tp.version));
    i.field("trace_id", tp.trace_id.to_string());
    i.field("parent_id", tp.parent_id.to_string());
    i.field("flags", format!("{:02x}", tp.flags));
    i.field("sampled", tp.is_sampled());
    i.field("random", tp.is_random());
    let unknown = tp.flags & !KNOWN_FLAGS;
    if unknown != 0 {
        let note = format!(
            "unknown bits {unknown:02x} are sent on as 0; only sampled ({FLAG_SAMPLED:02x}) \
             and random ({FLAG_RANDOM:02x}) are kept (docs/propagation-rules.md#traceparent)"
        );
        let _ = writeln!(i.text, "             {note}");
        i.notes.push(note);
    }
    let sent = tp.to_string();
    let _ = writeln!(i.text, "  sent as    {sent}");
    i.sent = Some(sent);
}

const TRACESTATE_EFFECT: &str = "the whole tracestate is dropped; the traceparent is kept (docs/propagation-rules.md#tracestate)";

/// Members of a list as received (lines split at commas, empty members ignored).
fn received_members(lines: &[&str]) -> usize {
    lines
        .iter()
        .flat_map(|line| line.split(','))
        .filter(|member| !trim_ows(member).is_empty())
        .count()
}

pub(super) fn tracestate(i: &mut Inspection, lines: &[&str], limits: &Limits) {
    let list = match TraceStateList::parse(lines.iter().copied(), limits) {
        Ok(list) => list,
        Err(error) => {
            let _ = writeln!(i.text, "invalid: {error}");
            let _ = writeln!(i.text, "  effect: {TRACESTATE_EFFECT}");
            i.valid = false;
            i.rejections.push(Rejection::new(
                None,
                error.to_string(),
                Some(TRACESTATE_EFFECT),
            ));
            return;
        }
    };
    let received = received_members(lines);
    let _ = writeln!(i.text, "valid: {} member{}", list.len(), plural(list.len()));
    let width = list.members().map(|(k, _)| k.len()).max().unwrap_or(0);
    let mut members = Vec::with_capacity(list.len());
    for (key, value) in list.members() {
        let _ = writeln!(i.text, "  {key:<width$}  {value:?}");
        members.push(json!({ "key": key, "value": value }));
    }
    i.field("members", members);
    let repeated = received.saturating_sub(list.len());
    if repeated > 0 {
        i.note(format!(
            "{repeated} repeated key{} dropped; the first (leftmost) member of a key is \
             kept (docs/propagation-rules.md#tracestate)",
            plural(repeated)
        ));
    }
    if list.is_empty() {
        let _ = writeln!(
            i.text,
            "  sent as    (no tracestate header: the list is empty, docs/propagation-rules.md#tracestate)"
        );
    } else {
        let _ = writeln!(i.text, "  sent as    {}", list.header());
        i.sent = Some(list.header().to_owned());
    }
}

pub(super) fn baggage(i: &mut Inspection, lines: &[&str], limits: &Limits, plus_as_space: bool) {
    let mut issues = Vec::new();
    let mut hit_limit = false;
    let list =
        BaggageList::parse_reporting(lines.iter().copied(), limits, plus_as_space, |issue| {
            hit_limit |= matches!(
                issue.reason,
                BaggageIssueReason::TooManyMembers | BaggageIssueReason::TooLarge
            );
            issues.push(Rejection::new(
                Some(issue.member),
                issue.reason.to_string(),
                None,
            ));
        });
    let received = received_members(lines);
    if issues.is_empty() {
        let _ = writeln!(i.text, "valid: {} member{}", list.len(), plural(list.len()));
    } else if hit_limit {
        let _ = writeln!(
            i.text,
            "invalid: a limit was reached; {} of {received} member{} kept",
            list.len(),
            plural(received)
        );
    } else {
        let _ = writeln!(
            i.text,
            "invalid: {} member{} dropped; {} kept",
            issues.len(),
            plural(issues.len()),
            list.len()
        );
    }
    let width = list.iter().map(|e| e.key().len()).max().unwrap_or(0);
    let mut members = Vec::with_capacity(list.len());
    for entry in list.iter() {
        let _ = write!(i.text, "  {:<width$}  {:?}", entry.key(), entry.value());
        if !entry.properties().is_empty() {
            let _ = write!(i.text, "  properties: {}", entry.properties());
        }
        i.text.push('\n');
        members.push(json!({
            "key": entry.key(),
            "value": entry.value(),
            "properties": entry.properties(),
        }));
    }
    i.field("members", members);
    for issue in &issues {
        let _ = writeln!(
            i.text,
            "  dropped `{}`: {}",
            issue.member.as_deref().unwrap_or(""),
            issue.reason
        );
    }
    i.valid = issues.is_empty();
    i.rejections = issues;
    // After a limit, the members that follow are dropped unexamined: no duplicate count then.
    let merged = received.saturating_sub(list.len() + i.rejections.len());
    if merged > 0 && !hit_limit {
        i.note(format!(
            "{merged} repeated key{} merged; the last value wins, at the position where \
             the key first appeared (docs/propagation-rules.md#baggage)",
            plural(merged)
        ));
    }
    if list.is_empty() {
        let _ = writeln!(
            i.text,
            "  sent as    (no baggage header: nothing is left to send)"
        );
    } else {
        let _ = writeln!(i.text, "  sent as    {}", list.header());
        i.sent = Some(list.header().to_owned());
    }
}
