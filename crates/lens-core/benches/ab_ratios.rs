//! The ratios of `propagation.rs`, measured A/B alternated: every variant of an operation runs
//! a batch in turn, round after round, and each round gives one ratio per variant against the
//! same round's reference. The median of those ratios (quartiles beside it) does not move with
//! the machine's load the way separate criterion measurements do on a shared 2-core VM.
//!
//! Same context, carriers, stock propagator and floors as `propagation.rs`. Extract also shows,
//! as a reference rather than a target, the floor plus a copy shaped like SPEC §10's (one more
//! Context value holding two header strings and an anchor Context): what any implementation
//! that keeps that copy pays before parsing a byte; and a minimal parser for the bench's input
//! plus that copy (`support/minimal_extract.rs`: one line per header, no whitespace, escapes or
//! properties, everything else refused): about the least an extract that reads these headers
//! under SPEC.md and keeps the §10 copy can cost.
//! `cargo xtask bench core` runs both.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::hint::black_box;
use std::time::Instant;

use http::{HeaderMap, HeaderName, HeaderValue};
use lens_core::{HeaderCarrier, MapCarrier, W3cPropagator};
use opentelemetry::Context;
use opentelemetry::baggage::BaggageExt;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_http::{HeaderExtractor, HeaderInjector};

#[path = "support/fixture.rs"]
mod fixture;
#[path = "support/minimal_extract.rs"]
mod minimal_extract;
use fixture::{BAGGAGE, Parsed, TRACEPARENT, TRACESTATE, incoming_headers, incoming_map, stock};

const ROUNDS: usize = 41;
const BATCH: usize = 5_000;

type Op<'a> = (&'static str, Box<dyn FnMut() + 'a>);

/// Runs the operations alternately and prints, per operation, its median time and the median
/// (quartiles) of its per-round ratio to the first operation.
fn compare(title: &str, mut ops: Vec<Op<'_>>) {
    let mut times = vec![Vec::with_capacity(ROUNDS); ops.len()];
    // Warm-up round, not recorded.
    for round in 0..=ROUNDS {
        // Rotate the order, so that no variant always runs right after the same one.
        for k in 0..ops.len() {
            let i = (k + round) % ops.len();
            let (_, op) = &mut ops[i];
            let start = Instant::now();
            for _ in 0..BATCH {
                op();
            }
            if round > 0 {
                times[i].push(start.elapsed().as_nanos() as f64 / BATCH as f64);
            }
        }
    }
    println!("{title}");
    for (i, (name, _)) in ops.iter().enumerate() {
        let mut ratios: Vec<f64> = times[i].iter().zip(&times[0]).map(|(a, b)| a / b).collect();
        ratios.sort_by(f64::total_cmp);
        let mut t = times[i].clone();
        t.sort_by(f64::total_cmp);
        let q = |v: &[f64], f: usize| v[(v.len() - 1) * f / 4];
        println!(
            "  {name:<28} {:>8.1} ns   x {:.3} ({:.3}-{:.3})",
            q(&t, 2),
            q(&ratios, 2),
            q(&ratios, 1),
            q(&ratios, 3)
        );
    }
}

/// What lens keeps beside opentelemetry's values after an extract (SPEC §10), in shape.
struct CopyShapedLikeSpec10 {
    _tracestate: String,
    _baggage: String,
    _anchor: Context,
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let lens = W3cPropagator::new();
    let stock = stock();
    let map = incoming_map();
    let headers = incoming_headers();
    let cx = lens.extract(&MapCarrier(&map));
    let parsed = Parsed::new();
    let floor_extract = || drop(black_box(parsed.floor_context()));

    // A reference, not a target: the floor plus a copy shaped like SPEC §10's (one more Context
    // value holding the two header strings lens keeps and an anchor Context), without parsing.
    let (ts_header, bag_header) = (TRACESTATE.to_owned(), BAGGAGE.to_owned());
    let floor_with_copy = || {
        let (sc, b) = parsed.otel_values();
        let with_baggage = Context::new().with_baggage(b);
        let copy = CopyShapedLikeSpec10 {
            _tracestate: black_box(&ts_header).clone(),
            _baggage: black_box(&bag_header).clone(),
            _anchor: with_baggage.clone(),
        };
        black_box(with_baggage.with_value(copy).with_remote_span_context(sc));
    };

    // The minimal parser builds what lens builds, or it would be no reference.
    for minimal in [
        minimal_extract::minimal_extract_map(&map),
        minimal_extract::minimal_extract_headers(&headers),
    ] {
        let minimal = minimal.expect("the minimal parser reads the bench's headers");
        assert_eq!(minimal.span().span_context(), cx.span().span_context());
        let mut minimal_baggage: Vec<_> = minimal.baggage().iter().collect();
        let mut lens_baggage: Vec<_> = cx.baggage().iter().collect();
        minimal_baggage.sort_by_key(|(k, _)| k.as_str());
        lens_baggage.sort_by_key(|(k, _)| k.as_str());
        assert_eq!(minimal_baggage, lens_baggage);
    }

    compare(
        "extract, HashMap (ratio to the floor)",
        vec![
            ("floor", Box::new(floor_extract)),
            ("floor + a §10-sized copy", Box::new(floor_with_copy)),
            (
                "minimal parse + §10 copy",
                Box::new(|| {
                    drop(black_box(minimal_extract::minimal_extract_map(black_box(
                        &map,
                    ))))
                }),
            ),
            (
                "lens (MapCarrier)",
                Box::new(|| drop(black_box(lens.extract(&MapCarrier(black_box(&map)))))),
            ),
            (
                "stock",
                Box::new(|| drop(black_box(stock.extract(black_box(&map))))),
            ),
        ],
    );
    compare(
        "extract, HeaderMap (ratio to the floor)",
        vec![
            ("floor", Box::new(floor_extract)),
            ("floor + a §10-sized copy", Box::new(floor_with_copy)),
            (
                "minimal parse + §10 copy",
                Box::new(|| {
                    drop(black_box(minimal_extract::minimal_extract_headers(
                        black_box(&headers),
                    )))
                }),
            ),
            (
                "lens (HeaderCarrier)",
                Box::new(|| drop(black_box(lens.extract(&HeaderCarrier(black_box(&headers)))))),
            ),
            (
                "lens extract_headers",
                Box::new(|| {
                    drop(black_box(
                        lens.extract_headers(&Context::current(), black_box(&headers)),
                    ))
                }),
            ),
            (
                "stock",
                Box::new(|| {
                    drop(black_box(
                        stock.extract(&HeaderExtractor(black_box(&headers))),
                    ))
                }),
            ),
        ],
    );

    let (tp, tsv, bg) = (
        TRACEPARENT.to_owned(),
        TRACESTATE.to_owned(),
        BAGGAGE.to_owned(),
    );
    compare(
        "inject, HashMap (ratio to the floor)",
        vec![
            (
                "floor",
                Box::new(|| {
                    let mut m = HashMap::new();
                    m.insert("traceparent".to_owned(), black_box(&tp).clone());
                    m.insert("tracestate".to_owned(), black_box(&tsv).clone());
                    m.insert("baggage".to_owned(), black_box(&bg).clone());
                    black_box(m);
                }),
            ),
            (
                "lens",
                Box::new(|| {
                    let mut m = HashMap::new();
                    lens.inject_context(black_box(&cx), &mut MapCarrier(&mut m));
                    black_box(m);
                }),
            ),
            (
                "stock",
                Box::new(|| {
                    let mut m = HashMap::new();
                    stock.inject_context(black_box(&cx), &mut m);
                    black_box(m);
                }),
            ),
        ],
    );
    compare(
        "inject, HeaderMap (ratio to the floor)",
        vec![
            (
                "floor",
                Box::new(|| {
                    let mut h = HeaderMap::new();
                    for (k, v) in [("traceparent", &tp), ("tracestate", &tsv), ("baggage", &bg)] {
                        let name = HeaderName::from_bytes(k.as_bytes()).unwrap();
                        h.insert(name, HeaderValue::try_from(black_box(v).clone()).unwrap());
                    }
                    black_box(h);
                }),
            ),
            (
                "lens",
                Box::new(|| {
                    let mut h = HeaderMap::new();
                    lens.inject_context(black_box(&cx), &mut HeaderCarrier(&mut h));
                    black_box(h);
                }),
            ),
            (
                "stock",
                Box::new(|| {
                    let mut h = HeaderMap::new();
                    stock.inject_context(black_box(&cx), &mut HeaderInjector(&mut h));
                    black_box(h);
                }),
            ),
        ],
    );
}
