//! Streamed responses in a trace: when each span's first chunk passed, and the time to the first
//! chunk of the outermost server broken down hop by hop (the engine's own, the network to each
//! hop, each gateway in front), read by the waterfall ([`crate::render`]) and the doctor.
//!
//! A span's first chunk is the `lens.stream.first_chunk` event lens's adapters record on a
//! streamed response (the time it was sent by a SERVER span, received by a CLIENT span); else
//! the span's start plus its `lens.stream.time_to_first_chunk` or
//! `gen_ai.response.time_to_first_chunk` attribute (seconds), as other instrumentations write it.

use crate::model::{Span, SpanId, SpanKind, Value};

/// The span event of a first chunk (lens-span's `lens_span::stream::FIRST_CHUNK_EVENT`).
pub const FIRST_CHUNK_EVENT: &str = "lens.stream.first_chunk";
/// The attribute of the time to the first chunk, in seconds from the span's start.
pub const TIME_TO_FIRST_CHUNK: &str = "lens.stream.time_to_first_chunk";
/// The GenAI conventions' attribute of the same figure.
pub const GEN_AI_TIME_TO_FIRST_CHUNK: &str = "gen_ai.response.time_to_first_chunk";
/// How many data frames went through (lens's adapters, on a streamed response).
pub const CHUNKS: &str = "lens.stream.chunks";

/// When `span`'s first chunk passed, in Unix nanoseconds; `None` when it records none (its
/// response was not streamed, or nothing marked it).
pub fn first_chunk(span: &Span) -> Option<u64> {
    if let Some(event) = span.events.iter().find(|e| e.name == FIRST_CHUNK_EVENT) {
        return Some(event.time_unix_nano);
    }
    let seconds = [TIME_TO_FIRST_CHUNK, GEN_AI_TIME_TO_FIRST_CHUNK]
        .iter()
        .find_map(|key| match span.attribute(key) {
            Some(Value::Double(s)) if s.is_finite() && *s >= 0.0 => Some(*s),
            Some(Value::Int(s)) if *s >= 0 => Some(*s as f64),
            _ => None,
        })?;
    Some(span.start_unix_nano.saturating_add((seconds * 1e9) as u64))
}

/// From `span`'s start to its first chunk, in nanoseconds.
pub fn time_to_first_chunk(span: &Span) -> Option<u64> {
    Some(first_chunk(span)?.saturating_sub(span.start_unix_nano))
}

/// What a row of the "time to first chunk by hop" table is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HopPart {
    /// A server in front of others (a gateway, a router): what it added between sending its
    /// request on and sending its own first chunk, beyond what its call took.
    Gateway,
    /// A call from one service to the next: the network both ways and the queues in between
    /// (the CLIENT span's time to first chunk less its SERVER's).
    Network,
    /// The innermost server (the engine): its own time to the first chunk.
    Engine,
}

impl HopPart {
    /// `gateway`, `network`, `engine`.
    pub fn name(self) -> &'static str {
        match self {
            HopPart::Gateway => "gateway",
            HopPart::Network => "network",
            HopPart::Engine => "engine",
        }
    }
}

/// One row of the table: a span of the streamed chain from the outermost server inward.
#[derive(Clone, Copy, Debug)]
pub struct StreamHop<'a> {
    /// A SERVER span (gateway, engine) or a CLIENT span (network: the call to the next server).
    pub span: &'a Span,
    /// What the row accounts for.
    pub part: HopPart,
    /// When the span's first chunk passed, in nanoseconds after the outermost server's start.
    pub first_chunk_at: u64,
    /// How much of the outermost server's time to first chunk this part added, in nanoseconds.
    pub added: u64,
}

/// The "time to first chunk by hop" table of a trace: from the outermost SERVER span with a
/// first chunk inward, through the CLIENT span under it with a first chunk (the call that fed
/// it) and that call's SERVER span, down to the innermost server. Empty when no SERVER span
/// records a first chunk, or the outermost one calls no streamed hop. The `added` figures sum to
/// the outermost server's time to first chunk.
pub fn by_hop<'a>(spans: &[&'a Span]) -> Vec<StreamHop<'a>> {
    let Some(outer) = spans
        .iter()
        .copied()
        .filter(|s| s.kind == SpanKind::Server && first_chunk(s).is_some())
        .filter(|s| !has_streamed_server_ancestor(spans, s))
        .min_by_key(|s| (s.start_unix_nano, s.span_id.0))
    else {
        return Vec::new();
    };
    let origin = outer.start_unix_nano;
    // The chain: server, client, server, client, ..., server.
    let mut chain: Vec<&'a Span> = vec![outer];
    let mut server = outer;
    while chain.len() < 64 {
        let Some(client) = streamed_descendant(spans, server, SpanKind::Client) else {
            break;
        };
        let Some(next) = streamed_descendant(spans, client, SpanKind::Server) else {
            break;
        };
        chain.push(client);
        chain.push(next);
        server = next;
    }
    if chain.len() < 3 {
        return Vec::new();
    }
    let ttfc = |s: &Span| time_to_first_chunk(s).unwrap_or(0);
    let at = |s: &Span| first_chunk(s).unwrap_or(0).saturating_sub(origin);
    chain
        .iter()
        .enumerate()
        .map(|(i, span)| {
            let inner = chain.get(i + 1).map_or(0, |s| ttfc(s));
            let part = match (i % 2, i + 1 == chain.len()) {
                (_, true) => HopPart::Engine,
                (0, false) => HopPart::Gateway,
                _ => HopPart::Network,
            };
            StreamHop {
                span,
                part,
                first_chunk_at: at(span),
                added: ttfc(span).saturating_sub(inner),
            }
        })
        .collect()
}

/// Whether a SERVER span with a first chunk is above `span` in the trace.
fn has_streamed_server_ancestor(spans: &[&Span], span: &Span) -> bool {
    let mut parent = span.parent_span_id;
    for _ in 0..spans.len() {
        let Some(id) = parent else {
            return false;
        };
        let Some(p) = find(spans, id) else {
            return false;
        };
        if p.kind == SpanKind::Server && first_chunk(p).is_some() {
            return true;
        }
        parent = p.parent_span_id;
    }
    false
}

fn find<'a>(spans: &[&'a Span], id: SpanId) -> Option<&'a Span> {
    spans.iter().copied().find(|s| s.span_id == id)
}

/// The nearest span of `kind` with a first chunk under `span` (its subtree, breadth first),
/// the earliest first chunk among those at the same depth.
fn streamed_descendant<'a>(spans: &[&'a Span], span: &Span, kind: SpanKind) -> Option<&'a Span> {
    let mut level: Vec<SpanId> = vec![span.span_id];
    for _ in 0..spans.len() {
        if level.is_empty() {
            return None;
        }
        let children: Vec<&'a Span> = spans
            .iter()
            .copied()
            .filter(|s| s.parent_span_id.is_some_and(|p| level.contains(&p)))
            .collect();
        if let Some(found) = children
            .iter()
            .copied()
            .filter(|s| s.kind == kind)
            .filter_map(|s| Some((first_chunk(s)?, s)))
            .min_by_key(|(t, s)| (*t, s.span_id.0))
        {
            return Some(found.1);
        }
        level = children.iter().map(|s| s.span_id).collect();
    }
    None
}

/// A hop that buffers a stream: a SERVER span whose own response is streamed but whose first
/// chunk left only when the stream it read from (a CLIENT span under it, streamed) had ended.
/// A server that answers in one piece is not one: it may collect a stream on purpose (a
/// trainer that reads the tokens it asked for). `(server, client, held)`: `held` is how long the
/// first chunk waited, in nanoseconds, from when it arrived at the hop to when the hop sent its
/// own first chunk.
pub fn buffering_hops<'a>(spans: &[&'a Span]) -> Vec<(&'a Span, &'a Span, u64)> {
    let mut found = Vec::new();
    for client in spans.iter().copied().filter(|s| s.kind == SpanKind::Client) {
        let Some(arrived) = first_chunk(client) else {
            continue;
        };
        // Streamed for sure: more than one chunk, where the adapter counted them.
        if matches!(client.attribute(CHUNKS), Some(Value::Int(n)) if *n < 2) {
            continue;
        }
        let Some(server) = nearest_server_above(spans, client) else {
            continue;
        };
        let Some(left) = first_chunk(server) else {
            continue;
        };
        if left >= client.end_unix_nano && left > arrived {
            found.push((server, client, left - arrived));
        }
    }
    found
}

/// The nearest SERVER span above `span`.
fn nearest_server_above<'a>(spans: &[&'a Span], span: &Span) -> Option<&'a Span> {
    let mut parent = span.parent_span_id;
    for _ in 0..spans.len() {
        let p = find(spans, parent?)?;
        if p.kind == SpanKind::Server {
            return Some(p);
        }
        parent = p.parent_span_id;
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::model::{Event, KeyValue, SpanKind};
    use crate::testing::span_at;

    const T0: u64 = 1_700_000_000_000_000_000;

    /// Marks `span`'s first chunk `at` microseconds after T0 (an event, as lens records it).
    fn marked(mut span: Span, at: u64) -> Span {
        span.events.push(Event {
            time_unix_nano: T0 + at * 1000,
            name: FIRST_CHUNK_EVENT.into(),
            attributes: Vec::new(),
        });
        span
    }

    /// gateway SERVER (0..400 ms, first chunk out at 152 ms) ─ its CLIENT call (2..390 ms,
    /// first chunk in at 150 ms) ─ engine SERVER (3..389 ms, first chunk out at 149 ms).
    fn chain() -> Vec<Span> {
        vec![
            marked(
                span_at(
                    "gateway",
                    "GET /v1/chat",
                    1,
                    0,
                    SpanKind::Server,
                    (0, 400_000),
                ),
                152_000,
            ),
            marked(
                span_at("gateway", "POST", 2, 1, SpanKind::Client, (2_000, 390_000)),
                150_000,
            ),
            marked(
                span_at(
                    "engine",
                    "POST /generate",
                    3,
                    2,
                    SpanKind::Server,
                    (3_000, 389_000),
                ),
                149_000,
            ),
        ]
    }

    #[test]
    fn the_first_chunk_is_the_event_else_the_attribute() {
        let spans = chain();
        assert_eq!(first_chunk(&spans[0]), Some(T0 + 152_000_000));
        let mut other = span_at("python", "POST", 9, 0, SpanKind::Client, (1_000, 5_000));
        assert_eq!(first_chunk(&other), None);
        other.attributes.push(KeyValue::new(
            GEN_AI_TIME_TO_FIRST_CHUNK,
            Value::Double(0.002),
        ));
        assert_eq!(time_to_first_chunk(&other), Some(2_000_000));
        other
            .attributes
            .insert(0, KeyValue::new(TIME_TO_FIRST_CHUNK, Value::Double(-1.0)));
        assert_eq!(
            time_to_first_chunk(&other),
            Some(2_000_000),
            "a negative figure is ignored"
        );
    }

    #[test]
    fn the_table_splits_the_outer_time_to_first_chunk_by_hop() {
        let spans = chain();
        let refs: Vec<&Span> = spans.iter().rev().collect();
        let hops = by_hop(&refs);
        let parts: Vec<_> = hops
            .iter()
            .map(|h| (h.part, h.span.span_id.0[7], h.first_chunk_at, h.added))
            .collect();
        assert_eq!(
            parts,
            [
                (HopPart::Gateway, 1, 152_000_000, 4_000_000),
                (HopPart::Network, 2, 150_000_000, 2_000_000),
                (HopPart::Engine, 3, 149_000_000, 146_000_000),
            ]
        );
        assert_eq!(hops.iter().map(|h| h.added).sum::<u64>(), 152_000_000);
    }

    #[test]
    fn no_table_without_a_streamed_call() {
        let spans = chain();
        let one: Vec<&Span> = spans.iter().take(1).collect();
        assert!(by_hop(&one).is_empty());
        let plain: Vec<Span> = chain()
            .into_iter()
            .map(|mut s| {
                s.events.clear();
                s
            })
            .collect();
        assert!(by_hop(&plain.iter().collect::<Vec<_>>()).is_empty());
    }

    #[test]
    fn a_hop_that_sends_its_first_chunk_after_the_inner_stream_ended_buffers() {
        let mut spans = chain();
        assert!(buffering_hops(&spans.iter().collect::<Vec<_>>()).is_empty());
        // The gateway's first chunk leaves at 391 ms, after its call ended at 390 ms.
        spans[0].events[0].time_unix_nano = T0 + 391_000_000;
        let found = buffering_hops(&spans.iter().collect::<Vec<_>>());
        assert_eq!(found.len(), 1);
        let (server, client, held) = found[0];
        assert_eq!((server.span_id.0[7], client.span_id.0[7]), (1, 2));
        assert_eq!(held, 241_000_000);
        // A server that answers in one piece after reading the stream collects it on purpose.
        spans[0].events.clear();
        spans[0].end_unix_nano = T0 + 395_000_000;
        assert!(buffering_hops(&spans.iter().collect::<Vec<_>>()).is_empty());
    }

    #[test]
    fn the_waterfall_marks_the_first_chunk_and_adds_the_table() {
        let spans = chain();
        let mut text = String::new();
        crate::render::text::render(&crate::testing::view(&spans), false, &mut text);
        let row = text.lines().find(|l| l.contains("GET /v1/chat")).unwrap();
        let bar: String = row.chars().skip_while(|c| *c != '│').collect();
        // 152 of 400 ms: cell 15 of 40.
        assert_eq!(
            bar.chars().skip(1).position(|c| c == '┃'),
            Some(15),
            "{row}"
        );
        assert!(
            text.contains("time to first chunk by hop: 152.0 ms at gateway (GET /v1/chat)"),
            "{text}"
        );
        let engine = text
            .lines()
            .find(|l| l.trim_start().starts_with("engine"))
            .unwrap();
        assert!(
            engine.contains("149.0 ms") && engine.contains("+146.0 ms"),
            "{engine}"
        );
        assert!(
            text.lines()
                .any(|l| l.contains("network  gateway → engine") && l.contains("+2.0 ms")),
            "{text}"
        );
        assert!(
            text.lines().last().unwrap().starts_with("trace "),
            "the summary stays last"
        );

        let json = crate::render::json::trace(&crate::testing::view(&spans));
        assert_eq!(json["first_chunk_by_hop"][2]["added_ns"], 146_000_000);
        assert_eq!(json["spans"][0]["first_chunk_unix_nano"], T0 + 152_000_000);

        let mut html = String::new();
        crate::render::html::trace(&crate::testing::view(&spans), &mut html);
        assert!(
            html.contains("class=\"first-chunk\" data-first-chunk-ns=\"152000000\""),
            "{html}"
        );
        assert!(html.contains("title=\"first chunk: 152.0 ms after the span's start\""));
        assert!(html.contains("<table class=\"first-chunk-by-hop\""));
    }
}
