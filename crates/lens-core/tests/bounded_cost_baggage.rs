//! A 1 MiB baggage header costs memory in proportion to the configured limits (180 members,
//! 8192 bytes), not to its size: the allocations of an extract are the same for 1 MiB and
//! 2 MiB of hostile input, and at most a small constant times the limit.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod bounded_cost_support;

use bounded_cost_support::{Allocated, measure, repeat_to};
use http::{HeaderMap, HeaderValue};
use lens_core::baggage::BaggageList;
use lens_core::{HeaderCarrier, LensContextExt, Limits, W3cPropagator};
use opentelemetry::propagation::TextMapPropagator;

const MIB: usize = 1 << 20;

/// Hostile shapes of a baggage header of about `n` bytes.
fn shapes(n: usize) -> Vec<(&'static str, String)> {
    let distinct: String = {
        let mut s = String::with_capacity(n + 32);
        let mut i = 0u32;
        while s.len() < n {
            if i > 0 {
                s.push(',');
            }
            s.push_str(&format!("k{i:07}=v"));
            i += 1;
        }
        s
    };
    vec![
        ("distinct members", distinct),
        ("one key repeated", repeat_to("k=v,", n)),
        ("invalid members", repeat_to("bad key=v,", n)),
        ("one huge value", format!("k={}", "x".repeat(n))),
        (
            "one huge escaped value",
            format!("k={}", "%41".repeat(n / 3)),
        ),
        ("separators only", ",".repeat(n)),
        ("huge properties", format!("k=v;{}", "p;".repeat(n / 2))),
    ]
}

fn extract(propagator: &W3cPropagator, header: &str) -> (Allocated, usize) {
    let mut headers = HeaderMap::new();
    headers.insert("baggage", HeaderValue::from_str(header).unwrap());
    let mut members = 0;
    let allocated = measure(|| {
        let cx = propagator.extract(&HeaderCarrier(&headers));
        members = cx.lens_baggage().len();
        cx
    });
    (allocated, members)
}

/// Bytes an extract may allocate for baggage under `limits`: 8 times the header limit, plus
/// 160 bytes per member (entry, index slot, opentelemetry's copy) and 4 KiB for the Context.
fn budget(limits: &Limits) -> usize {
    8 * limits.baggage_bytes + 160 * limits.baggage_members + 4096
}

#[test]
fn a_1_mib_baggage_header_allocates_within_a_constant_times_the_limits() {
    let propagator = W3cPropagator::new();
    let _ = extract(&propagator, "warm=up");
    for (shape, header) in shapes(MIB) {
        let (allocated, members) = extract(&propagator, &header);
        println!("{shape}: {allocated:?}, {members} members kept");
        let limit = budget(propagator.limits());
        assert!(
            allocated.peak <= limit,
            "{shape}: peak {allocated:?} > {limit}"
        );
        assert!(
            allocated.total <= limit,
            "{shape}: total {allocated:?} > {limit}"
        );
        assert!(members <= propagator.limits().baggage_members, "{shape}");
    }
}

#[test]
fn allocations_do_not_grow_with_the_input_beyond_the_limits() {
    let propagator = W3cPropagator::new();
    let _ = extract(&propagator, "warm=up");
    for ((shape, one), (_, two)) in shapes(MIB).into_iter().zip(shapes(2 * MIB)) {
        let (a1, m1) = extract(&propagator, &one);
        let (a2, m2) = extract(&propagator, &two);
        assert_eq!(m1, m2, "{shape}");
        assert_eq!(a1, a2, "{shape}: 1 MiB {a1:?} vs 2 MiB {a2:?}");
    }
}

#[test]
fn allocations_follow_the_configured_limits() {
    // Twice the limits: the widest shape may keep twice as much, and stays within its own budget.
    let small = W3cPropagator::new();
    let large = W3cPropagator::new().with_limits(
        Limits::DEFAULT
            .with_baggage_bytes(2 * Limits::DEFAULT.baggage_bytes)
            .with_baggage_members(2 * Limits::DEFAULT.baggage_members),
    );
    let _ = extract(&small, "warm=up");
    let header = &shapes(MIB)[0].1;
    let (a_small, m_small) = extract(&small, header);
    let (a_large, m_large) = extract(&large, header);
    assert_eq!(m_small, 180);
    assert_eq!(m_large, 360);
    assert!(a_large.total > a_small.total, "{a_small:?} {a_large:?}");
    assert!(a_large.total <= budget(large.limits()), "{a_large:?}");
}

#[test]
fn the_parser_alone_stops_at_the_limit() {
    // BaggageList::parse without a Context: the list it keeps is all it allocates.
    let limits = Limits::DEFAULT;
    for (shape, header) in shapes(MIB) {
        let mut len = 0;
        let allocated = measure(|| {
            let list = BaggageList::parse([header.as_str()], &limits, false);
            len = list.header().len();
            list
        });
        assert!(len <= limits.baggage_bytes, "{shape}");
        assert!(
            allocated.total <= 4 * limits.baggage_bytes + 64 * limits.baggage_members,
            "{shape}: {allocated:?}"
        );
    }
}
