//! What `lens inspect` found in one value: the `--json` object and the text printed without
//! `--json`, each rejection with the rule it cites.

use std::fmt::Write as _;

use lens_core::lexical::trim_ows;
use serde::Serialize;
use serde_json::Value;

/// What `lens inspect` found in one value (or in the lines of one header): the `--json` object,
/// and the text printed without `--json`.
#[derive(Debug, Serialize)]
pub(super) struct Inspection {
    /// `traceparent`, `tracestate`, `baggage` or `nccl`.
    pub(super) kind: &'static str,
    /// The value's lines as received.
    pub(super) input: Vec<String>,
    /// How the kind was decided, when neither `--as` nor a header name did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) read_as: Option<&'static str>,
    /// Nothing was rejected or dropped.
    pub(super) valid: bool,
    /// The decoded fields (members, for lists).
    pub(super) fields: serde_json::Map<String, Value>,
    /// Each rejection, with the rule that rejects it.
    pub(super) rejections: Vec<Rejection>,
    /// Remarks that do not make the value invalid (repeated keys, unknown flag bits).
    pub(super) notes: Vec<String>,
    /// The header lens would send on; `null` when it would send none.
    pub(super) sent: Option<String>,
    #[serde(skip)]
    pub(super) text: String,
}

/// One thing a parser rejected.
#[derive(Debug, Serialize)]
pub(super) struct Rejection {
    /// The list member dropped (tracestate and baggage members).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) member: Option<String>,
    /// lens-core's message.
    pub(super) reason: String,
    /// The rule the message cites (docs/propagation-rules.md#traceparent`).
    pub(super) rule: Option<String>,
    /// What lens does about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) effect: Option<String>,
}

impl Rejection {
    pub(super) fn new(member: Option<&str>, reason: String, effect: Option<&str>) -> Rejection {
        Rejection {
            member: member.map(str::to_owned),
            rule: cited_rule(&reason),
            reason,
            effect: effect.map(str::to_owned),
        }
    }
}

/// The rule a lens-core message cites: its last parenthesised docs/propagation-rules.md ...` reference.
fn cited_rule(message: &str) -> Option<String> {
    let start = message.rfind("(docs/propagation-rules.md")? + 1;
    let len = message[start..].find(')')?;
    Some(message[start..start + len].to_owned())
}

impl Inspection {
    pub(super) fn new(kind: &'static str, lines: &[&str]) -> Inspection {
        Inspection {
            kind,
            input: lines.iter().map(|l| trim_ows(l).to_owned()).collect(),
            read_as: None,
            valid: true,
            fields: serde_json::Map::new(),
            rejections: Vec::new(),
            notes: Vec::new(),
            sent: None,
            text: String::new(),
        }
    }

    pub(super) fn field(&mut self, name: &str, value: impl Into<Value>) {
        self.fields.insert(name.to_owned(), value.into());
    }

    pub(super) fn note(&mut self, text: String) {
        let _ = writeln!(self.text, "  note: {text}");
        self.notes.push(text);
    }
}

/// A value as received, quoted and escaped; a long one cut short, with its length.
pub(super) fn shown(line: &str) -> String {
    const SHOWN_CHARS: usize = 160;
    let line = trim_ows(line);
    match line.char_indices().nth(SHOWN_CHARS) {
        None => format!("{line:?}"),
        Some((cut, _)) => format!("{:?}... ({} bytes)", &line[..cut], line.len()),
    }
}

pub(super) fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cited_rule_is_the_last_spec_reference() {
        assert_eq!(
            cited_rule("value is 600 bytes; at most 512 (docs/propagation-rules.md#traceparent, docs/propagation-rules.md#limits)").as_deref(),
            Some("docs/propagation-rules.md#traceparent, docs/propagation-rules.md#limits")
        );
        assert_eq!(
            cited_rule("key (a) is bad (docs/propagation-rules.md#baggage)").as_deref(),
            Some("docs/propagation-rules.md#baggage")
        );
        assert_eq!(cited_rule("no rule here"), None);
    }
}
