//! A route in words (`lens probe`'s report) and as JSON (`--json`).

use std::fmt::Write as _;

use serde_json::{Value as Json, json};

use super::hop::{
    BaggageVerdict, FlagsVerdict, Hop, ParentVerdict, TraceStateVerdict, TraceVerdict,
};
use super::route::{Route, Sampling};
use crate::model::SpanId;

impl Route {
    /// The route as text, a line a hop and a line for each thing that broke on it.
    pub fn text(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "trace {} (sent traceparent {}, tracestate {}, baggage keys {}): {} spans exported",
            self.sent.trace_id,
            self.sent.traceparent(),
            if self.sent.trace_state.is_empty() {
                "none"
            } else {
                &self.sent.trace_state
            },
            self.sent.baggage_keys.join(","),
            self.spans
        );
        if let Some(sampling) = &self.sampling {
            out.push_str(&sampling_summary(sampling));
            out.push('\n');
        }
        for (n, hop) in self.hops.iter().enumerate() {
            let to = hop.to.as_deref().unwrap_or("?");
            let via = match hop.parent {
                ParentVerdict::Reparented { .. } if hop.sender.is_some() => "? -> ",
                _ => "",
            };
            let _ = write!(
                out,
                "{:>2}. {} -> {via}{to} ({})",
                n + 1,
                hop.from,
                hop.kind
            );
            if !hop.in_probe_trace {
                let _ = write!(out, " in trace {}", hop.trace_id);
            }
            out.push_str(": ");
            out.push_str(&hop_summary(hop));
            out.push('\n');
        }
    }

    /// The route as JSON: `trace_id`, `sent`, `spans` and `hops` (each with its verdicts and
    /// `broken`, the rule ids of what broke).
    pub fn json(&self) -> Json {
        let hex = |s: Option<SpanId>| s.map(|s| s.to_string());
        json!({
            "trace_id": self.sent.trace_id.to_string(),
            "sent": {
                "traceparent": self.sent.traceparent(),
                "tracestate": self.sent.trace_state,
                "baggage_keys": self.sent.baggage_keys,
            },
            "spans": self.spans,
            "sampling": self.sampling.as_ref().map(|s| json!({
                "forced": s.forced.as_ref().map(|f| json!({
                    "from": f.from,
                    "to": f.to,
                    "to_instance": f.to_instance,
                    "kind": f.kind,
                    "span_id": f.span_id.to_string(),
                    "flags": f.flags.map(|f| format!("{f:02x}")),
                })),
                "silent_hops": s.silent.map(|(silent, _)| silent),
                "hops": s.silent.map(|(_, of)| of),
                "broken": self.broken(&[]).collect::<Vec<_>>(),
            })),
            "hops": self.hops.iter().map(|h| json!({
                "from": h.from,
                "to": h.to,
                "kind": h.kind,
                "trace_id": h.trace_id.to_string(),
                "in_probe_trace": h.in_probe_trace,
                "sender_span_id": hex(h.sender),
                "receiver_span_id": hex(h.receiver),
                "trace": match &h.trace {
                    TraceVerdict::Kept => json!("kept"),
                    TraceVerdict::Lost { new_trace, cause } => json!({
                        "lost": {"new_trace_id": new_trace.to_string(), "cause": cause}
                    }),
                    TraceVerdict::Unseen => json!("unseen"),
                },
                "parent": match &h.parent {
                    ParentVerdict::Kept => json!("kept"),
                    ParentVerdict::Reparented { parent } => {
                        json!({"reparented": parent.to_string()})
                    }
                    ParentVerdict::NotApplicable => Json::Null,
                },
                "flags": match &h.flags {
                    FlagsVerdict::Kept(f) => json!({"kept": format!("{f:02x}")}),
                    FlagsVerdict::Dropped { sent, received } => json!({
                        "dropped": {"sent": format!("{sent:02x}"), "received": format!("{received:02x}")}
                    }),
                    FlagsVerdict::NotReported => json!("not reported"),
                    FlagsVerdict::NotApplicable => Json::Null,
                },
                "tracestate": match &h.trace_state {
                    TraceStateVerdict::Kept => json!("kept"),
                    TraceStateVerdict::Added { keys } => json!({"added": keys}),
                    TraceStateVerdict::Dropped { keys } => json!({"dropped": keys}),
                    TraceStateVerdict::NotApplicable => Json::Null,
                },
                "baggage": match &h.baggage {
                    BaggageVerdict::Kept => json!("kept"),
                    BaggageVerdict::Dropped { keys } => json!({"dropped": keys}),
                    BaggageVerdict::NotObservable => json!("not observable"),
                    BaggageVerdict::NotApplicable => Json::Null,
                },
                "broken": h.broken(),
            })).collect::<Vec<_>>(),
        })
    }
}

/// What an unsampled request left, in words.
pub(super) fn sampling_summary(sampling: &Sampling) -> String {
    let silent = match sampling.silent {
        Some((silent, of)) => format!(
            "{silent} of {of} {} stayed silent as {}",
            if of == 1 { "hop" } else { "hops" },
            if silent == 1 {
                "it should"
            } else {
                "they should"
            }
        ),
        None => "the hops that stayed silent are not known (no sampled request to compare)".into(),
    };
    match &sampling.forced {
        None => format!("unsampled: no span recorded; {silent}"),
        Some(f) => {
            let instance = f
                .to_instance
                .as_ref()
                .map(|i| format!(", {} instance {i}", f.to))
                .unwrap_or_default();
            let flags = f
                .flags
                .map(|flags| format!(", recorded with flags {flags:02x}"))
                .unwrap_or_default();
            format!(
                "SAMPLING FORCED: {} -> {} ({}): {} recorded a span of the unsampled request (span {}{flags}{instance}); {silent}",
                f.from, f.to, f.kind, f.to, f.span_id
            )
        }
    }
}

/// One hop's verdicts in words: `trace kept, parent kept, flags 03 kept, ...`.
fn hop_summary(hop: &Hop) -> String {
    let mut parts: Vec<String> = Vec::new();
    match &hop.trace {
        TraceVerdict::Kept => parts.push("trace kept".into()),
        TraceVerdict::Lost { new_trace, cause } => {
            let mut lost = format!("TRACE LOST: {} started trace {new_trace}", hop.to.as_deref().unwrap_or("?"));
            if let Some(cause) = cause {
                let _ = write!(lost, " ({})", new_root_cause(cause));
            }
            parts.push(lost);
        }
        TraceVerdict::Unseen => parts.push(
            "not seen: no span of the receiving side arrived (not instrumented, or not exporting here)"
                .into(),
        ),
    }
    match &hop.parent {
        ParentVerdict::Kept => parts.push("parent kept".into()),
        ParentVerdict::Reparented { parent } => parts.push(format!(
            "PARENT CHANGED to span {parent} that nobody exported (an unreported hop in between: a proxy or an uninstrumented service)"
        )),
        ParentVerdict::NotApplicable => {}
    }
    match &hop.flags {
        FlagsVerdict::Kept(f) => parts.push(format!("flags {f:02x} kept")),
        FlagsVerdict::Dropped { sent, received } => {
            parts.push(format!(
                "FLAGS DROPPED ({sent:02x} sent, {received:02x} received)"
            ));
        }
        FlagsVerdict::NotReported => parts.push("flags not reported".into()),
        FlagsVerdict::NotApplicable => {}
    }
    match &hop.trace_state {
        TraceStateVerdict::Kept => parts.push("tracestate kept".into()),
        TraceStateVerdict::Added { keys } => {
            parts.push(format!(
                "tracestate kept ({} added at the front)",
                keys.join(", ")
            ));
        }
        TraceStateVerdict::Dropped { keys } => {
            parts.push(format!("TRACESTATE DROPPED ({})", keys.join(", ")));
        }
        TraceStateVerdict::NotApplicable => {}
    }
    match &hop.baggage {
        BaggageVerdict::Kept => parts.push("baggage kept".into()),
        BaggageVerdict::Dropped { keys } => {
            parts.push(format!("BAGGAGE DROPPED ({})", keys.join(", ")));
        }
        BaggageVerdict::NotObservable => parts.push("baggage not observable".into()),
        BaggageVerdict::NotApplicable => {}
    }
    parts.join(", ")
}

/// `lens.trace.new_root` in words.
fn new_root_cause(cause: &str) -> String {
    match cause {
        "none" => "it received no traceparent".to_owned(),
        other => format!("lens.trace.new_root = {other}"),
    }
}
