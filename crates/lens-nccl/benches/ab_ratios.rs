//! Fixture P (lens-core's `benches/support/plain_otel.rs`: a Context built with opentelemetry's
//! API alone) as NCCL bytes, A/B interleaved in one run (lens-core's `benches/support/ab.rs`):
//! `serialize_context_from` against stock opentelemetry_sdk propagators injecting into a
//! `HashMap` and `serde_json::to_vec` (floor: the finished bytes copied into a new `Vec`), and
//! `extract_nccl_context` against `serde_json::from_slice` and the stock extract (floor: the same
//! opentelemetry Context built from ready values). Every contender's result is checked before it
//! is timed. `cargo xtask bench core` runs it after lens-core's rows.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::hint::black_box;

use lens_nccl::{extract_nccl_context, serialize_context_from};
use opentelemetry::Context;
use opentelemetry::baggage::BaggageExt;
use opentelemetry::propagation::{TextMapCompositePropagator, TextMapPropagator};
use opentelemetry::trace::{SpanContext, TraceContextExt};
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};

#[path = "../../lens-core/benches/support/ab.rs"]
mod ab;
#[path = "../../lens-core/benches/support/floor.rs"]
mod floor;
#[path = "../../lens-core/benches/support/plain_otel.rs"]
mod plain_otel;
use ab::compare;
use floor::Parsed;
use plain_otel::{P_BAGGAGE, P_TRACESTATE, p_context, p_provider};

fn stock() -> TextMapCompositePropagator {
    TextMapCompositePropagator::new(vec![
        Box::new(TraceContextPropagator::new()),
        Box::new(BaggagePropagator::new()),
    ])
}

/// What a propagated Context means: its span context and its baggage, sorted by key.
fn meaning(cx: &Context) -> (SpanContext, Vec<(String, String)>) {
    let mut baggage: Vec<_> = cx
        .baggage()
        .iter()
        .map(|(k, (v, _))| (k.to_string(), v.to_string()))
        .collect();
    baggage.sort();
    (cx.span().span_context().clone(), baggage)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let provider = p_provider();
    let cx = p_context(&provider);
    let stock = stock();
    let stock_bytes = || {
        let mut map: HashMap<String, String> = HashMap::new();
        stock.inject_context(&cx, &mut map);
        serde_json::to_vec(&map).unwrap()
    };
    let stock_extract = |bytes: &[u8]| {
        let map: HashMap<String, String> = serde_json::from_slice(bytes).unwrap();
        stock.extract(&map)
    };

    // Checked before timing: both byte strings carry fixture P, and each side reads the other's.
    let bytes = serialize_context_from(&cx);
    let theirs = stock_bytes();
    let sc = cx.span().span_context().clone();
    let parsed = Parsed::with(sc.trace_id(), sc.span_id(), P_TRACESTATE, P_BAGGAGE);
    let floor = || parsed.floor_context();
    let expected = meaning(&floor());
    assert_eq!(meaning(&extract_nccl_context(&bytes)), expected);
    assert_eq!(meaning(&extract_nccl_context(&theirs)), expected);
    assert_eq!(meaning(&stock_extract(&bytes)), expected);
    assert_eq!(meaning(&stock_extract(&theirs)), expected);

    compare(
        "serialize_context_from P",
        vec![
            (
                "floor: the bytes copied",
                Box::new(|| drop(black_box(black_box(&bytes).clone()))),
            ),
            (
                "lens serialize_context_from",
                Box::new(|| drop(black_box(serialize_context_from(black_box(&cx))))),
            ),
            (
                "stock inject + serde_json",
                Box::new(|| drop(black_box(stock_bytes()))),
            ),
        ],
    );
    compare(
        "extract_nccl_context P",
        vec![
            ("floor", Box::new(|| drop(black_box(floor())))),
            (
                "lens extract_nccl_context",
                Box::new(|| drop(black_box(extract_nccl_context(black_box(&bytes))))),
            ),
            (
                "serde_json + stock extract",
                Box::new(|| drop(black_box(stock_extract(black_box(&theirs))))),
            ),
        ],
    );
}
