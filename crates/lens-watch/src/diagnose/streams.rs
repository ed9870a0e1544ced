//! buffered-stream: a hop that defeats streaming. Its call's response arrived as a stream, but
//! its own first chunk left only when that stream had ended (or it answered in one piece after
//! it): whatever sits there (a proxy, a middleware that reads the body to its end, a handler
//! that collects the tokens) adds the whole generation to the time to the first token. `info`:
//! a hop may collect a stream on purpose.

use super::finding::{Finding, Rule, millis};
use crate::model::{Span, TraceId};

/// The buffered-stream findings of trace `id`.
pub(super) fn buffered_streams(id: TraceId, spans: &[Span], findings: &mut Vec<Finding>) {
    let refs: Vec<&Span> = spans.iter().collect();
    for (server, client, held) in crate::stream::buffering_hops(&refs) {
        let first_arrived = crate::stream::time_to_first_chunk(client).unwrap_or(0);
        findings.push(Finding {
            rule: Rule::BufferedStream,
            trace_ids: vec![id],
            span_ids: vec![server.span_id, client.span_id],
            services: vec![server.service().to_owned()],
            message: format!(
                "{} (\"{}\") buffers a stream: the first chunk of its call \"{}\" arrived {} \
after the call started, but {} sent its own first chunk only after that stream ended, {} \
later; a proxy or middleware that reads the body to its end (response buffering, compression \
of the whole body, a handler that collects the tokens) adds the whole generation to the time \
to the first token",
                server.service(),
                server.name,
                client.name,
                millis(u128::from(first_arrived)),
                server.service(),
                millis(u128::from(held)),
            ),
        });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::diagnose::Severity;
    use crate::model::{Event, SpanKind};
    use crate::testing::span_at;

    const T0: u64 = 1_700_000_000_000_000_000;

    fn marked(mut span: Span, at_micros: u64) -> Span {
        span.events.push(Event {
            time_unix_nano: T0 + at_micros * 1000,
            name: crate::stream::FIRST_CHUNK_EVENT.into(),
            attributes: Vec::new(),
        });
        span
    }

    #[test]
    fn a_gateway_that_sends_after_the_stream_ended_is_flagged_as_info_with_the_figure() {
        let gateway = span_at("gateway", "GET /chat", 1, 0, SpanKind::Server, (0, 400_000));
        let call = marked(
            span_at("gateway", "POST", 2, 1, SpanKind::Client, (2_000, 390_000)),
            150_000,
        );
        let engine = marked(
            span_at(
                "engine",
                "POST /generate",
                3,
                2,
                SpanKind::Server,
                (3_000, 389_000),
            ),
            149_000,
        );
        let streaming = marked(gateway.clone(), 152_000);
        let mut findings = Vec::new();
        let id = gateway.trace_id;
        buffered_streams(
            id,
            &[streaming, call.clone(), engine.clone()],
            &mut findings,
        );
        assert!(findings.is_empty(), "a gateway that streams: {findings:?}");

        let buffering = marked(gateway, 392_000);
        buffered_streams(id, &[buffering, call, engine], &mut findings);
        assert_eq!(findings.len(), 1);
        let f = &findings[0];
        assert_eq!(
            (f.rule, f.severity()),
            (Rule::BufferedStream, Severity::Info)
        );
        assert_eq!(f.services, ["gateway"]);
        assert!(
            f.message.contains("148.000 ms after the call started"),
            "{}",
            f.message
        );
        assert!(f.message.contains("242.000 ms later"), "{}", f.message);
    }
}
