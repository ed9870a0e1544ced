//! What one case showed: what the handler saw, what the Python publisher reports.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::describe::Seen;

/// What a consumer's handler saw of one message (the Python peer answers in the same JSON).
#[derive(Clone, Debug, Default, Deserialize)]
pub(super) struct Handled {
    /// The Context current in the handler (inside its `process` span).
    pub(super) consumer: Seen,
    /// `traceparent`, `tracestate`, `baggage` as they arrived.
    pub(super) headers: BTreeMap<String, String>,
    pub(super) subject: String,
    /// JetStream: the message's stream sequence.
    pub(super) sequence: Option<u64>,
}

/// The W3C headers of a NATS message.
pub(super) fn w3c_headers(message: &async_nats::Message) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Some(headers) = &message.headers {
        for name in ["traceparent", "tracestate", "baggage"] {
            if let Some(value) = headers.get(name) {
                out.insert(name.to_owned(), value.as_str().to_owned());
            }
        }
    }
    out
}

impl Handled {
    pub(super) fn rust(
        message: &async_nats::Message,
        consumer: Seen,
        sequence: Option<u64>,
    ) -> Self {
        Handled {
            consumer,
            headers: w3c_headers(message),
            subject: message.subject.to_string(),
            sequence,
        }
    }
}

/// What the Python publisher reports (`nats_peer.py`'s `publish`).
#[derive(Debug, Default, Deserialize)]
pub(super) struct Published {
    /// The Context inside its PRODUCER span.
    pub(super) producer: Option<Seen>,
    /// What `inject_context` wrote.
    #[serde(default)]
    pub(super) headers: BTreeMap<String, String>,
    pub(super) reply: Option<PythonReply>,
    pub(super) sequence: Option<u64>,
}

#[derive(Debug, Deserialize)]
pub(super) struct PythonReply {
    pub(super) payload: serde_json::Value,
    pub(super) headers: BTreeMap<String, String>,
}

/// What one case showed, besides the spans.
#[derive(Debug, Default)]
pub(super) struct Observed {
    /// The publisher side: the Python producer's own report (Python publishers only).
    pub(super) published: Published,
    /// The Rust publisher's own span (when the case has one).
    pub(super) caller: Option<String>,
    pub(super) handled: Handled,
    /// Request/reply: what the reply said the responder saw, and the reply's headers.
    pub(super) reply: Option<(Seen, BTreeMap<String, String>)>,
}
