#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::*;
use crate::model::{Span, TraceId};
use crate::testing::span;

fn config(max_traces: usize) -> Config {
    Config {
        quiet_for: Duration::from_secs(2),
        max_traces,
        max_spans_per_trace: 3,
        max_spans: 100,
        max_evicted_ids: 1_000,
    }
}

#[test]
fn a_trace_completes_after_the_quiet_window_and_a_late_span_reopens_it() {
    let t0 = Instant::now();
    let mut a = Assembler::new(config(10));
    a.insert([span(1, 1, None)], t0);
    a.insert([span(1, 2, Some(1))], t0 + Duration::from_secs(1));
    // 2 s after the first span but 1 s after the second: still open.
    assert!(a.poll(t0 + Duration::from_secs(2)).is_empty());
    assert_eq!(a.next_deadline(), Some(t0 + Duration::from_secs(3)));
    let done = a.poll(t0 + Duration::from_secs(3));
    assert_eq!(done, [span(1, 1, None).trace_id]);
    assert!(a.trace(&done[0]).unwrap().complete);
    // Returned once.
    assert!(a.poll(t0 + Duration::from_secs(10)).is_empty());
    // A late span reopens it; it completes again, whole.
    a.insert([span(1, 3, Some(1))], t0 + Duration::from_secs(11));
    assert!(!a.trace(&done[0]).unwrap().complete);
    assert!(a.poll(t0 + Duration::from_secs(12)).is_empty());
    assert_eq!(a.poll(t0 + Duration::from_secs(13)), done);
    let entry = a.trace(&done[0]).unwrap();
    assert_eq!((entry.spans.len(), entry.completions), (3, 2));
    // Counted once, however often it completes; each span shown once.
    let stats = a.stats();
    assert_eq!((stats.traces_completed, stats.spans_shown), (1, 3));
    assert_eq!(stats.unaccounted(), 0);
}

#[test]
fn the_oldest_whole_trace_is_evicted_and_counted() {
    let t0 = Instant::now();
    let mut a = Assembler::new(config(2));
    a.insert([span(1, 1, None), span(1, 2, Some(1))], t0);
    a.insert([span(2, 1, None)], t0);
    // Trace 1 is the oldest even though it is still open.
    a.insert([span(3, 1, None)], t0);
    let stats = a.stats();
    assert_eq!(
        (stats.traces, stats.evicted_traces, stats.evicted_spans),
        (2, 1, 2)
    );
    assert!(a.trace(&span(1, 1, None).trace_id).is_none());
    assert!(a.trace(&span(2, 1, None).trace_id).is_some());
    assert_eq!(stats.spans, 2);
    // The evicted trace's deadline is stale: only the two held complete.
    assert_eq!(a.poll(t0 + Duration::from_secs(5)).len(), 2);
}

#[test]
fn spans_over_the_per_trace_cap_are_dropped_and_counted_not_evicted() {
    let t0 = Instant::now();
    let mut a = Assembler::new(config(10));
    a.insert((1..=5).map(|s| span(1, s, None)), t0);
    let stats = a.stats();
    assert_eq!(
        (stats.spans, stats.dropped_spans, stats.evicted_traces),
        (3, 2, 0)
    );
}

#[test]
fn the_total_span_bound_evicts_older_traces_never_the_one_growing() {
    let t0 = Instant::now();
    let mut a = Assembler::new(Config {
        max_spans: 4,
        max_spans_per_trace: 10,
        ..config(10)
    });
    a.insert([span(1, 1, None), span(1, 2, None)], t0);
    a.insert((1..=4).map(|s| span(2, s, None)), t0);
    let stats = a.stats();
    assert_eq!((stats.spans, stats.traces, stats.evicted_spans), (4, 1, 2));
    // Alone and at the bound, a trace keeps its spans: there is nothing older to evict.
    a.insert([span(2, 5, None)], t0);
    assert_eq!(a.stats().spans, 5);
}

#[test]
fn flush_completes_every_open_trace_in_arrival_order() {
    let t0 = Instant::now();
    let mut a = Assembler::new(config(10));
    a.insert([span(2, 1, None)], t0);
    a.insert([span(1, 1, None)], t0);
    let ids = a.flush();
    assert_eq!(ids, [span(2, 1, None).trace_id, span(1, 1, None).trace_id]);
    assert!(a.poll(t0 + Duration::from_secs(9)).is_empty());
    assert_eq!(a.stats().services, 1);
}

#[test]
fn a_clock_that_goes_back_does_not_complete_early_or_stall() {
    let t0 = Instant::now() + Duration::from_secs(100);
    let mut a = Assembler::new(config(10));
    a.insert([span(1, 1, None)], t0);
    a.insert([span(2, 1, None)], t0 - Duration::from_secs(50));
    assert!(a.poll(t0 + Duration::from_secs(1)).is_empty());
    assert_eq!(a.poll(t0 + Duration::from_secs(2)).len(), 2);
}

#[test]
fn a_trace_evicted_while_open_drops_its_later_spans_instead_of_starting_a_fragment() {
    let t0 = Instant::now();
    let mut a = Assembler::new(config(1));
    a.insert([span(1, 1, None)], t0);
    // Trace 2 evicts the open trace 1.
    a.insert([span(2, 1, None)], t0);
    // Trace 1's later spans: dropped and counted, no fragment of trace 1 appears.
    a.insert([span(1, 2, Some(1)), span(1, 3, Some(1))], t0);
    assert!(a.trace(&span(1, 1, None).trace_id).is_none());
    let stats = a.stats();
    assert_eq!(
        (
            stats.evicted_traces,
            stats.evicted_open_traces,
            stats.evicted_ids
        ),
        (1, 1, 1)
    );
    assert_eq!((stats.dropped_evicted, stats.dropped_late), (1, 2));
    assert_eq!(stats.spans_received, 4);
    assert_eq!(stats.unaccounted(), 0);
    // Only trace 2 ever completes.
    assert_eq!(
        a.poll(t0 + Duration::from_secs(5)),
        [span(2, 1, None).trace_id]
    );
}

#[test]
fn eviction_takes_complete_traces_before_open_ones() {
    let t0 = Instant::now();
    let mut a = Assembler::new(config(2));
    a.insert([span(1, 1, None)], t0);
    a.insert([span(2, 1, None)], t0 + Duration::from_secs(5));
    // Trace 2 completes (its window passed), trace 1 ... also: reopen 1 so it is open.
    assert_eq!(a.poll(t0 + Duration::from_secs(8)).len(), 2);
    a.insert([span(1, 2, Some(1))], t0 + Duration::from_secs(9));
    // Trace 1 is older but open: the complete trace 2 goes.
    a.insert([span(3, 1, None)], t0 + Duration::from_secs(9));
    assert!(a.trace(&span(1, 1, None).trace_id).is_some());
    assert!(a.trace(&span(2, 1, None).trace_id).is_none());
    let stats = a.stats();
    assert_eq!((stats.evicted_traces, stats.evicted_open_traces), (1, 0));
    // Its span had been shown: nothing dropped.
    assert_eq!((stats.dropped(), stats.spans_shown), (0, 2));
    assert_eq!(stats.unaccounted(), 0);
    // With no complete trace left, the oldest open one goes.
    a.insert([span(4, 1, None)], t0 + Duration::from_secs(9));
    assert!(a.trace(&span(1, 1, None).trace_id).is_none());
    let stats = a.stats();
    assert_eq!((stats.evicted_traces, stats.evicted_open_traces), (2, 1));
    // Of trace 1's two spans, the first was shown, the second dropped with it.
    assert_eq!(stats.dropped_evicted, 1);
    assert_eq!(stats.unaccounted(), 0);
}

#[test]
fn a_trace_over_the_per_trace_cap_is_partial() {
    let t0 = Instant::now();
    let mut a = Assembler::new(config(10));
    a.insert((1..=3).map(|s| span(1, s, None)), t0);
    let id = span(1, 1, None).trace_id;
    assert!(!a.trace(&id).unwrap().is_partial());
    a.insert([span(1, 4, None)], t0);
    let entry = a.trace(&id).unwrap();
    assert!(entry.is_partial());
    assert_eq!(entry.lost_spans, 1);
    assert_eq!(a.stats().unaccounted(), 0);
}

#[test]
fn forgotten_ids_of_evicted_traces_are_counted() {
    let t0 = Instant::now();
    let mut a = Assembler::new(Config {
        max_evicted_ids: 2,
        ..config(1)
    });
    for t in 1..=5 {
        a.insert([span(t, 1, None)], t0);
    }
    let stats = a.stats();
    assert_eq!(
        (
            stats.evicted_traces,
            stats.evicted_ids,
            stats.evicted_ids_forgotten
        ),
        (4, 2, 2)
    );
    // Trace 3 is still remembered; trace 1 is not (its span starts a trace again).
    a.insert([span(3, 2, None)], t0);
    assert_eq!(a.stats().dropped_late, 1);
}

/// Like `lens demo --otlp` into a small `--max-traces`: every service exports the spans of
/// every trace in one batch, so all traces are open at once, far over the bound; batches
/// of different senders interleave, and time passes between them.
#[test]
fn interleaved_batches_over_the_bound_never_complete_a_fragment() {
    const TRACES: u64 = 300;
    const SERVICES: u8 = 6;
    for max_traces in [1, 7, 50, 120, 299, 300, 1000] {
        let t0 = Instant::now();
        let mut a = Assembler::new(Config {
            max_traces,
            max_spans_per_trace: 100,
            max_spans: 1_000_000,
            ..config(max_traces)
        });
        let mut completed: HashMap<TraceId, usize> = HashMap::new();
        let mut check = |a: &mut Assembler, ids: Vec<TraceId>| {
            for id in ids {
                let entry = a.trace(&id).unwrap();
                assert!(
                    entry.spans.len() == SERVICES as usize || entry.is_partial(),
                    "max_traces {max_traces}: trace completed with {} of {SERVICES} spans",
                    entry.spans.len()
                );
                *completed.entry(id).or_default() += 1;
            }
            assert_eq!(a.stats().unaccounted(), 0);
        };
        let mut at = t0;
        // Two senders, each with its traces (sender 0: even, 1: odd), service by service.
        for service in 1..=SERVICES {
            for sender in 0..2 {
                let batch: Vec<Span> = (0..TRACES)
                    .filter(|t| t % 2 == sender)
                    .map(|t| {
                        let mut s = span(1, service, (service > 1).then_some(1));
                        s.trace_id.0[..8].copy_from_slice(&(t + 1).to_be_bytes());
                        s
                    })
                    .collect();
                a.insert(batch, at);
                at += Duration::from_millis(300);
                let done = a.poll(at);
                check(&mut a, done);
            }
        }
        let done = a.poll(at + Duration::from_secs(2));
        check(&mut a, done);
        let stats = a.stats();
        assert_eq!(stats.spans_received, TRACES * u64::from(SERVICES));
        assert_eq!(stats.unaccounted(), 0);
        assert_eq!(stats.spans_open, 0, "max_traces {max_traces}: {stats:?}");
        // Each trace counted once: completed, or evicted while open, never both twice.
        assert_eq!(stats.traces_completed, completed.len() as u64);
        assert!(completed.values().all(|n| *n == 1));
        assert_eq!(
            stats.traces_completed + stats.evicted_open_traces,
            TRACES,
            "max_traces {max_traces}: {stats:?}"
        );
        if max_traces >= TRACES as usize {
            assert_eq!(stats.dropped(), 0);
        }
    }
}
