//! Streamed responses: when a response's head and its first chunk passed, recorded on the call's
//! span by [`TracedBody`](crate::TracedBody) as the body goes through it.
//!
//! A response is *streamed* when its body has more than one data frame (server-sent events,
//! chunked HTTP, a gRPC server or bidirectional stream), or when it ends early after its first
//! data frame (a stream cut short). On a streamed response the span gets:
//!
//! | name | kind | on | what |
//! | --- | --- | --- | --- |
//! | [`HEAD_EVENT`] `lens.stream.head` | event | CLIENT | the response head arrived (at its time) |
//! | [`FIRST_CHUNK_EVENT`] `lens.stream.first_chunk` | event | both | the first data frame was sent (SERVER) or arrived (CLIENT), at its time |
//! | [`TIME_TO_HEAD`] `lens.stream.time_to_head` | attribute, `double`, s | CLIENT | from the span's start to the response head |
//! | [`TIME_TO_FIRST_CHUNK`] `lens.stream.time_to_first_chunk` | attribute, `double`, s | both | from the span's start to the first data frame |
//! | [`CHUNKS`] `lens.stream.chunks` | attribute, `int` | both | the data frames that went through, when the span ends |
//! | [`END`] `lens.stream.end` | attribute, `string` | both | how the stream ended: `complete`, `abandoned` (dropped before its end: the peer went away, the caller stopped reading), `failed` (the body failed: a reset, a broken connection) |
//!
//! With the GenAI opt-in ([`crate::genai`]) the span also gets the conventions'
//! `gen_ai.response.time_to_first_chunk` (the same figure), and the GenAI metrics are recorded
//! from the same marks.
//!
//! A response with one data frame records nothing of this. The marks cost one clock read at
//! the first data frame, a counter per frame, no allocation per frame; the events and attributes
//! are written once per streamed response.

use std::borrow::Cow;
use std::time::SystemTime;

use opentelemetry::KeyValue;

use crate::lifecycle::LiveSpan;

/// Span event: the response head arrived (CLIENT spans of streamed responses).
pub const HEAD_EVENT: &str = "lens.stream.head";
/// Span event: the first data frame was sent (SERVER) or arrived (CLIENT).
pub const FIRST_CHUNK_EVENT: &str = "lens.stream.first_chunk";
/// Span attribute (`double`, seconds): from the span's start to the response head (CLIENT).
pub const TIME_TO_HEAD: &str = "lens.stream.time_to_head";
/// Span attribute (`double`, seconds): from the span's start to the first data frame.
pub const TIME_TO_FIRST_CHUNK: &str = "lens.stream.time_to_first_chunk";
/// Span attribute (`int`): how many data frames went through the body.
pub const CHUNKS: &str = "lens.stream.chunks";
/// Span attribute (`string`): how the stream ended ([`StreamEnd`]).
pub const END: &str = "lens.stream.end";

/// How a streamed body ended: the value of [`END`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StreamEnd {
    /// Read to its end (the end of the stream, or its trailers).
    Complete,
    /// Dropped before its end: the peer went away, or the caller stopped reading.
    Abandoned,
    /// The body failed: the stream was reset, the connection broke.
    Failed,
}

impl StreamEnd {
    /// The value of [`END`]: `complete`, `abandoned`, `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            StreamEnd::Complete => "complete",
            StreamEnd::Abandoned => "abandoned",
            StreamEnd::Failed => "failed",
        }
    }
}

/// The marks of one response body: when its head and its first data frame passed, and how many
/// data frames did. Inline in the body (no allocation).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Marks {
    /// When the response head arrived (clients).
    head: Option<SystemTime>,
    /// When the first data frame passed.
    first: Option<SystemTime>,
    /// Data frames so far.
    chunks: u64,
    /// Whether the events and the figures are on the span.
    recorded: bool,
    /// Whether the body said it had ended after its last data frame.
    at_end: bool,
}

impl Marks {
    /// The marks of a client's response whose head arrived at `head`.
    pub(crate) fn with_head(head: SystemTime) -> Self {
        Marks {
            head: Some(head),
            ..Marks::default()
        }
    }

    /// The body says it has ended (a server may drop it without polling its end).
    #[inline]
    pub(crate) fn reached_end(&mut self) {
        self.at_end = true;
    }

    /// Whether the body said it had ended.
    #[inline]
    pub(crate) fn at_end(&self) -> bool {
        self.at_end
    }

    /// A data frame of `len` bytes went through. Empty frames do not count.
    #[inline]
    pub(crate) fn data_frame(&mut self, span: &mut LiveSpan, len: usize) {
        if len == 0 {
            return;
        }
        self.chunks += 1;
        match self.chunks {
            1 if span.span().is_recording() => self.first = Some(opentelemetry::time::now()),
            2 => self.record(span),
            _ => {}
        }
    }

    /// The body ended as `end`, its span about to end: a streamed body's figures go on the span
    /// (a body that ends early after its first frame counts as streamed).
    #[inline]
    pub(crate) fn end(&mut self, span: &mut LiveSpan, end: StreamEnd) {
        if self.chunks == 0 || (self.chunks == 1 && end == StreamEnd::Complete) {
            return;
        }
        self.record(span);
        let chunks = i64::try_from(self.chunks).unwrap_or(i64::MAX);
        let span_ref = span.span();
        span_ref.set_attribute(KeyValue::new(CHUNKS, chunks));
        span_ref.set_attribute(KeyValue::new(END, end.as_str()));
        if let (StreamEnd::Complete, Some(first)) = (end, self.first) {
            span.stream_completed(first, self.chunks);
        }
        // Once: a body whose trailers did not end its span ends again at its end.
        self.chunks = 0;
    }

    /// Writes the events and the figures, once.
    fn record(&mut self, span: &mut LiveSpan) {
        if self.recorded {
            return;
        }
        self.recorded = true;
        let Some(first) = self.first else {
            return;
        };
        let start = span.start_time();
        let since_start = |t: SystemTime| t.duration_since(start).unwrap_or_default().as_secs_f64();
        let span_ref = span.span();
        if let Some(head) = self.head {
            span_ref.add_event_with_timestamp(Cow::Borrowed(HEAD_EVENT), head, Vec::new());
            span_ref.set_attribute(KeyValue::new(TIME_TO_HEAD, since_start(head)));
        }
        span_ref.add_event_with_timestamp(Cow::Borrowed(FIRST_CHUNK_EVENT), first, Vec::new());
        let seconds = since_start(first);
        span_ref.set_attribute(KeyValue::new(TIME_TO_FIRST_CHUNK, seconds));
        span.first_chunk(seconds);
    }
}
