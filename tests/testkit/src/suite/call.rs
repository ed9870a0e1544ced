//! One call through the adapter: how the peer answers, and what the harness saw of it.

use std::collections::BTreeMap;

use opentelemetry_sdk::trace::SpanData;

use crate::metrics::Point;

/// How the peer (the handler, for servers; the server, for clients) answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Respond {
    /// Success.
    Ok,
    /// The caller's fault: HTTP 404, gRPC `NOT_FOUND`.
    CallerError,
    /// The server's fault: HTTP 500, gRPC `UNAVAILABLE`.
    ServerError,
    /// The handler panics (servers).
    Panic,
    /// A streaming response whose span must outlast its first part.
    Stream,
    /// A first part, then nothing: the caller goes away after it (the call cancelled).
    Cancel,
}

impl Respond {
    /// The value of [`RESPOND`](super::RESPOND).
    pub fn as_str(self) -> &'static str {
        match self {
            Respond::Ok => "ok",
            Respond::CallerError => "caller-error",
            Respond::ServerError => "server-error",
            Respond::Panic => "panic",
            Respond::Stream => "stream",
            Respond::Cancel => "cancel",
        }
    }

    /// The value of [`RESPOND`](super::RESPOND) read back (`ok` for anything unknown).
    pub fn parse(value: &str) -> Respond {
        match value {
            "caller-error" => Respond::CallerError,
            "server-error" => Respond::ServerError,
            "panic" => Respond::Panic,
            "stream" => Respond::Stream,
            "cancel" => Respond::Cancel,
            _ => Respond::Ok,
        }
    }
}

/// One call through the adapter.
#[derive(Clone, Debug)]
pub struct Call {
    /// Servers: the request's propagation headers. Clients: the caller's context, as headers.
    pub headers: Vec<(&'static str, String)>,
    /// Clients: headers already on the request before the adapter injects.
    pub preset: Vec<(&'static str, String)>,
    /// How the peer answers.
    pub respond: Respond,
    /// Carry [`SKIP_HEADER`](super::SKIP_HEADER).
    pub skip: bool,
}

impl Call {
    pub(super) fn new(headers: Vec<(&'static str, String)>) -> Self {
        Call {
            headers,
            preset: Vec::new(),
            respond: Respond::Ok,
            skip: false,
        }
    }
}

/// What the harness saw of one call.
#[derive(Clone, Debug, Default)]
pub struct Observed {
    /// The adapter's spans (SERVER or CLIENT) that ended.
    pub spans: Vec<SpanData>,
    /// The propagation headers of the outgoing call (servers: sent from the handler; clients:
    /// received by the peer), every line of each.
    pub outgoing: BTreeMap<String, Vec<String>>,
    /// [`Respond::Stream`]: whether the span was still open once the first part had arrived.
    pub open_after_first_part: Option<bool>,
    /// With [`Setup::metrics`](super::Setup::metrics): every series collected once the call was over.
    pub metrics: Vec<Point>,
    /// HTTP: the bytes of the response body the caller received.
    pub response_bytes: Option<u64>,
}

impl Observed {
    pub(super) fn one(&self, scenario: &str) -> &SpanData {
        assert_eq!(
            self.spans.len(),
            1,
            "{scenario}: expected one span, got {:#?}",
            self.spans
        );
        &self.spans[0]
    }

    pub(super) fn header(&self, scenario: &str, name: &str) -> Option<&str> {
        let lines = self.outgoing.get(name)?;
        assert_eq!(lines.len(), 1, "{scenario}: {name} lines {lines:?}");
        lines.first().map(String::as_str)
    }
}
