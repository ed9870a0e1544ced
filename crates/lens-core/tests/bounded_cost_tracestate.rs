//! A 100,000-member tracestate (one line, or spread over many header lines) costs memory in
//! proportion to the configured limits (32 members, 8192 bytes), not to its size; the
//! traceparent beside it is kept.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod bounded_cost_support;

use bounded_cost_support::{Allocated, measure};
use http::{HeaderMap, HeaderValue};
use lens_core::tracestate::TraceStateList;
use lens_core::{HeaderCarrier, Limits, W3cPropagator};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn members(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("k{i}=v{i}")).collect()
}

/// Extracts from a traceparent and `lines` of tracestate; what it allocated, and whether the
/// remote parent was kept and the tracestate dropped.
fn extract(propagator: &W3cPropagator, lines: &[String]) -> (Allocated, bool) {
    let mut headers = HeaderMap::new();
    headers.insert("traceparent", HeaderValue::from_static(TRACEPARENT));
    for line in lines {
        headers.append("tracestate", HeaderValue::from_str(line).unwrap());
    }
    let mut ok = false;
    let allocated = measure(|| {
        let cx = propagator.extract(&HeaderCarrier(&headers));
        {
            let span = cx.span();
            let sc = span.span_context();
            ok = sc.is_remote() && sc.trace_state().header().is_empty();
        }
        cx
    });
    (allocated, ok)
}

/// What an extract may allocate for a tracestate: 4 times its byte limit, plus 16 bytes per
/// header line (the carrier's list of lines, which the HTTP server already bounds), plus 4 KiB
/// for the Context.
fn budget(limits: &Limits, lines: usize) -> usize {
    4 * limits.tracestate_bytes + 16 * lines + 4096
}

#[test]
fn a_100_000_member_tracestate_in_one_line() {
    let propagator = W3cPropagator::new();
    let _ = extract(&propagator, &[]);
    let line = members(100_000).join(",");
    assert!(line.len() > 1_000_000);
    let (allocated, ok) = extract(&propagator, &[line]);
    println!("one line: {allocated:?}");
    assert!(ok, "traceparent kept, tracestate dropped");
    let limit = budget(propagator.limits(), 1);
    assert!(allocated.total <= limit, "{allocated:?} > {limit}");
}

#[test]
fn a_100_000_member_tracestate_over_100_lines() {
    // hyper accepts at most 100 header lines per request by default.
    let propagator = W3cPropagator::new();
    let _ = extract(&propagator, &[]);
    let lines: Vec<String> = members(100_000)
        .chunks(1000)
        .map(|chunk| chunk.join(","))
        .collect();
    assert_eq!(lines.len(), 100);
    let (allocated, ok) = extract(&propagator, &lines);
    println!("100 lines: {allocated:?}");
    assert!(ok);
    let limit = budget(propagator.limits(), lines.len());
    assert!(allocated.total <= limit, "{allocated:?} > {limit}");
}

#[test]
fn many_small_lines_stop_at_the_member_limit() {
    // 100,000 one-member lines: rejected at member 33, whatever follows.
    let limits = Limits::DEFAULT;
    let all = members(100_000);
    let few = &all[..1000];
    let parse = |lines: &[String]| {
        let mut rejected = false;
        let allocated = measure(|| {
            let result = TraceStateList::parse(lines.iter().map(String::as_str), &limits);
            rejected = result.is_err();
            result
        });
        (allocated, rejected)
    };
    let (a_all, r_all) = parse(&all);
    let (a_few, r_few) = parse(few);
    assert!(r_all && r_few);
    assert_eq!(
        a_all, a_few,
        "the same work whatever the number of lines after the limit"
    );
    assert!(a_all.total <= 4 * limits.tracestate_bytes, "{a_all:?}");
}

#[test]
fn the_limit_holds_at_its_edge_and_a_raised_limit_still_bounds_the_work() {
    // Exactly 32 members is kept; the allocation follows the configured byte limit.
    let propagator = W3cPropagator::new();
    let line = members(32).join(",");
    let list = TraceStateList::parse([line.as_str()], propagator.limits()).unwrap();
    assert_eq!(list.len(), 32);
    let wide = Limits::DEFAULT
        .with_tracestate_members(100_000)
        .with_tracestate_bytes(64 * 1024);
    let huge = members(100_000).join(",");
    let allocated = measure(|| TraceStateList::parse([huge.as_str()], &wide));
    assert!(allocated.total <= budget(&wide, 1), "{allocated:?}");
}
