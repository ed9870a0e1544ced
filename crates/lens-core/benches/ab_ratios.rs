//! lens-core against stock opentelemetry_sdk 0.33 (`TextMapCompositePropagator[
//! TraceContextPropagator, BaggagePropagator]`) and against a floor, A/B interleaved in ONE run
//! (`support/ab.rs`): every row gives the median of its per-round ratio to the floor and to lens,
//! with quartiles. `cargo xtask bench core` runs it.
//!
//! Two fixtures:
//! * P, plain OpenTelemetry (`support/plain_otel.rs`): a Context built with opentelemetry's API
//!   alone (a sampled SDK span, child of a remote parent whose `TraceState` has 2 members, 3
//!   baggage entries, one value with a space); carriers `HashMap<String, String>` through
//!   opentelemetry's own `Injector`/`Extractor` impls and `http::HeaderMap` through
//!   opentelemetry-http's `HeaderInjector`/`HeaderExtractor`; lens called as
//!   `inject_context_from(&cx, &mut carrier)` and `extract_context(&carrier)`.
//! * L, propagation through lens (`support/fixture.rs`): the three headers extracted with lens
//!   through `MapCarrier`, an SDK child span (its own span id) started under that Context;
//!   carriers `MapCarrier` and `HeaderCarrier`.
//!
//! Floors: inject stores the three ready header strings through the same carrier; extract builds
//! the same opentelemetry Context (span context with its `TraceState`, plus `Baggage`) from ready
//! values; traceparent encodes/parses 55 bytes by hand (`support/traceparent_floor.rs`). Every
//! contender's result is checked before it is timed. Extract L also shows, as references rather
//! than targets, the floor plus a copy shaped like docs/propagation-rules.md#opentelemetry-types, and a minimal parser for the
//! bench's input plus that copy (`support/minimal_extract.rs`).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::hint::black_box;

use http::{HeaderMap, HeaderName, HeaderValue};
use lens_core::traceparent::TraceParent;
use lens_core::{HeaderCarrier, MapCarrier, W3cPropagator, extract_context, inject_context_from};
use opentelemetry::Context;
use opentelemetry::baggage::BaggageExt;
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{SpanContext, TraceContextExt, Tracer, TracerProvider};
use opentelemetry_http::{HeaderExtractor, HeaderInjector};

#[path = "support/ab.rs"]
mod ab;
#[path = "support/fixture.rs"]
mod fixture;
#[path = "support/floor.rs"]
mod floor;
#[path = "support/minimal_extract.rs"]
mod minimal_extract;
#[path = "support/plain_otel.rs"]
mod plain_otel;
#[path = "support/traceparent_floor.rs"]
mod traceparent_floor;
use ab::compare;
use fixture::{BAGGAGE, TRACEPARENT, TRACESTATE, incoming_headers, incoming_map, stock};
use floor::Parsed;
use plain_otel::{P_BAGGAGE, P_TRACESTATE, p_context, p_provider};
use traceparent_floor::{encode_floor, parse_floor};

/// What a propagated Context means: its span context and its baggage, sorted by key.
fn meaning(cx: &Context) -> (SpanContext, Vec<(String, String, String)>) {
    let mut baggage: Vec<_> = cx
        .baggage()
        .iter()
        .map(|(k, (v, m))| (k.to_string(), v.to_string(), m.as_str().to_owned()))
        .collect();
    baggage.sort();
    (cx.span().span_context().clone(), baggage)
}

/// What headers mean once read back by stock opentelemetry (not lens, which is under test).
fn stock_meaning(
    headers: &HashMap<String, String>,
) -> (SpanContext, Vec<(String, String, String)>) {
    meaning(&stock().extract(headers))
}

/// Headers as a lowercase-keyed map, from any carrier lens or stock wrote.
fn as_map(extractor: &dyn Extractor) -> HashMap<String, String> {
    ["traceparent", "tracestate", "baggage"]
        .into_iter()
        .filter_map(|k| Some((k.to_owned(), extractor.get(k)?.to_owned())))
        .collect()
}

fn inject_rows(
    fixture: &str,
    cx: &Context,
    lens_map: &dyn Fn(&Context, &mut HashMap<String, String>),
    lens_headers: &dyn Fn(&Context, &mut HeaderMap),
    floor_direct: bool,
) {
    let stock = stock();
    // Checked before timing: lens and stock write headers that mean the same Context, and
    // lens's are the floor's strings.
    let mut lens_out = HashMap::new();
    lens_map(cx, &mut lens_out);
    let mut stock_out = HashMap::new();
    stock.inject_context(cx, &mut stock_out);
    assert_eq!(lens_out.len(), 3, "{lens_out:?}");
    assert_eq!(stock_meaning(&lens_out), stock_meaning(&stock_out));
    let mut lens_h = HeaderMap::new();
    lens_headers(cx, &mut lens_h);
    assert_eq!(as_map(&HeaderExtractor(&lens_h)), lens_out);
    let sc = cx.span().span_context().clone();
    assert_eq!(
        lens_out["traceparent"],
        format!("00-{}-{}-01", sc.trace_id(), sc.span_id())
    );
    let (tp, ts, bg) = (
        lens_out["traceparent"].clone(),
        lens_out["tracestate"].clone(),
        lens_out["baggage"].clone(),
    );
    let ready = [("traceparent", &tp), ("tracestate", &ts), ("baggage", &bg)];

    compare(
        &format!("inject {fixture}, HashMap"),
        vec![
            (
                "floor",
                Box::new(|| {
                    let mut m = HashMap::new();
                    if floor_direct {
                        for (k, v) in ready {
                            m.insert(k.to_owned(), black_box(v).clone());
                        }
                    } else {
                        for (k, v) in ready {
                            Injector::set(&mut m, k, black_box(v).clone());
                        }
                    }
                    black_box(m);
                }),
            ),
            (
                "lens",
                Box::new(|| {
                    let mut m = HashMap::new();
                    lens_map(black_box(cx), &mut m);
                    black_box(m);
                }),
            ),
            (
                "stock",
                Box::new(|| {
                    let mut m = HashMap::new();
                    stock.inject_context(black_box(cx), &mut m);
                    black_box(m);
                }),
            ),
        ],
    );
    compare(
        &format!("inject {fixture}, HeaderMap"),
        vec![
            (
                "floor",
                Box::new(|| {
                    let mut h = HeaderMap::new();
                    if floor_direct {
                        for (k, v) in ready {
                            h.insert(
                                HeaderName::from_static(k),
                                HeaderValue::try_from(black_box(v).clone()).unwrap(),
                            );
                        }
                    } else {
                        let mut injector = HeaderInjector(&mut h);
                        for (k, v) in ready {
                            injector.set(k, black_box(v).clone());
                        }
                    }
                    black_box(h);
                }),
            ),
            (
                "lens",
                Box::new(|| {
                    let mut h = HeaderMap::new();
                    lens_headers(black_box(cx), &mut h);
                    black_box(h);
                }),
            ),
            (
                "stock",
                Box::new(|| {
                    let mut h = HeaderMap::new();
                    stock.inject_context(black_box(cx), &mut HeaderInjector(&mut h));
                    black_box(h);
                }),
            ),
        ],
    );
}

fn fixture_p() {
    let provider = p_provider();
    let cx = p_context(&provider);
    inject_rows(
        "P",
        &cx,
        &|cx, m| inject_context_from(cx, m),
        &|cx, h| inject_context_from(cx, &mut HeaderInjector(h)),
        false,
    );

    // Extract P: the headers plain OpenTelemetry sends for fixture P.
    let mut map = HashMap::new();
    stock().inject_context(&cx, &mut map);
    let mut headers = HeaderMap::new();
    for (k, v) in &map {
        headers.insert(
            HeaderName::from_bytes(k.as_bytes()).unwrap(),
            HeaderValue::from_str(v).unwrap(),
        );
    }
    let sc = cx.span().span_context().clone();
    let floor = Parsed::with(sc.trace_id(), sc.span_id(), P_TRACESTATE, P_BAGGAGE);
    let expected = meaning(&floor.floor_context());
    assert!(expected.0.is_remote() && expected.1.len() == 3);
    assert_eq!(meaning(&extract_context(&map)), expected);
    assert_eq!(
        meaning(&extract_context(&HeaderExtractor(&headers))),
        expected
    );
    assert_eq!(meaning(&stock().extract(&map)), expected);
    assert_eq!(
        meaning(&stock().extract(&HeaderExtractor(&headers))),
        expected
    );
    // A reference, not a target: the least a parser can do for these headers (one line each,
    // the bench's shape only), reading the carrier through the same `Extractor` as lens must
    // (every line of a header: `get_all`), then the floor's Context and a §10-shaped copy.
    for minimal in [
        minimal_extract::minimal_extract_lines(&map),
        minimal_extract::minimal_extract_lines(&HeaderExtractor(&headers)),
    ] {
        let minimal = minimal.expect("the minimal parser reads fixture P's headers");
        assert_eq!(meaning(&minimal), expected);
    }
    let stock = stock();
    compare(
        "extract P, HashMap",
        vec![
            ("floor", Box::new(|| drop(black_box(floor.floor_context())))),
            (
                "lens",
                Box::new(|| drop(black_box(extract_context(black_box(&map))))),
            ),
            (
                "stock",
                Box::new(|| drop(black_box(stock.extract(black_box(&map))))),
            ),
            (
                "minimal parse + §10 copy",
                Box::new(|| {
                    drop(black_box(minimal_extract::minimal_extract_lines(
                        black_box(&map),
                    )))
                }),
            ),
        ],
    );
    compare(
        "extract P, HeaderMap",
        vec![
            ("floor", Box::new(|| drop(black_box(floor.floor_context())))),
            (
                "lens",
                Box::new(|| {
                    drop(black_box(extract_context(&HeaderExtractor(black_box(
                        &headers,
                    )))))
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
            (
                "minimal parse + §10 copy",
                Box::new(|| {
                    drop(black_box(minimal_extract::minimal_extract_lines(
                        &HeaderExtractor(black_box(&headers)),
                    )))
                }),
            ),
        ],
    );
}

/// What lens keeps beside opentelemetry's values after an extract (docs/propagation-rules.md#opentelemetry-types), in shape.
struct CopyShapedLikeSpec10 {
    _tracestate: String,
    _baggage: String,
    _anchor: Context,
}

fn fixture_l() {
    let lens = W3cPropagator::new();
    let stock = stock();
    let map = incoming_map();
    let headers = incoming_headers();
    let extracted = lens.extract(&MapCarrier(&map));
    let provider = p_provider();
    let span = provider
        .tracer("fixture-l")
        .start_with_context("child", &extracted);
    let cx = extracted.with_span(span);
    assert_ne!(
        cx.span().span_context().span_id(),
        extracted.span().span_context().span_id()
    );
    let mut out = HashMap::new();
    lens.inject_context(&cx, &mut MapCarrier(&mut out));
    assert_eq!(
        (out["tracestate"].as_str(), out["baggage"].as_str()),
        (TRACESTATE, BAGGAGE)
    );
    inject_rows(
        "L",
        &cx,
        &|cx, m| lens.inject_context(cx, &mut MapCarrier(m)),
        &|cx, h| lens.inject_context(cx, &mut HeaderCarrier(h)),
        true,
    );

    let parsed = Parsed::new();
    let floor_extract = || drop(black_box(parsed.floor_context()));
    let expected = meaning(&parsed.floor_context());
    assert_eq!(meaning(&extracted), expected);
    assert_eq!(meaning(&lens.extract(&HeaderCarrier(&headers))), expected);
    assert_eq!(meaning(&stock.extract(&map)), expected);
    assert_eq!(
        meaning(&stock.extract(&HeaderExtractor(&headers))),
        expected
    );

    // A reference, not a target: the floor plus a copy shaped like docs/propagation-rules.md#opentelemetry-types (one more Context
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
        minimal_extract::minimal_extract_lines(&MapCarrier(&map)),
        minimal_extract::minimal_extract_lines(&HeaderCarrier(&headers)),
    ] {
        let minimal = minimal.expect("the minimal parser reads the bench's headers");
        assert_eq!(meaning(&minimal), expected);
    }

    compare(
        "extract L, MapCarrier",
        vec![
            ("floor", Box::new(floor_extract)),
            (
                "lens (MapCarrier)",
                Box::new(|| drop(black_box(lens.extract(&MapCarrier(black_box(&map)))))),
            ),
            (
                "stock",
                Box::new(|| drop(black_box(stock.extract(black_box(&map))))),
            ),
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
                "the same via the Extractor",
                Box::new(|| {
                    drop(black_box(minimal_extract::minimal_extract_lines(
                        &MapCarrier(black_box(&map)),
                    )))
                }),
            ),
        ],
    );
    compare(
        "extract L, HeaderCarrier",
        vec![
            ("floor", Box::new(floor_extract)),
            (
                "lens (HeaderCarrier)",
                Box::new(|| drop(black_box(lens.extract(&HeaderCarrier(black_box(&headers)))))),
            ),
            (
                "stock",
                Box::new(|| {
                    drop(black_box(
                        stock.extract(&HeaderExtractor(black_box(&headers))),
                    ))
                }),
            ),
            (
                "lens extract_headers",
                Box::new(|| {
                    drop(black_box(
                        lens.extract_headers(&Context::new(), black_box(&headers)),
                    ))
                }),
            ),
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
                "the same via the Extractor",
                Box::new(|| {
                    drop(black_box(minimal_extract::minimal_extract_lines(
                        &HeaderCarrier(black_box(&headers)),
                    )))
                }),
            ),
        ],
    );
}

fn traceparent() {
    let tp = TraceParent::parse(TRACEPARENT).unwrap();
    let (trace, span) = (tp.trace_id.to_bytes(), tp.parent_id.to_bytes());
    assert_eq!(&tp.encode(), &encode_floor(&trace, &span, 1));
    assert_eq!(parse_floor(TRACEPARENT.as_bytes()), (trace, span, 1));
    compare(
        "traceparent encode",
        vec![
            (
                "floor",
                Box::new(|| {
                    black_box(encode_floor(black_box(&trace), black_box(&span), 1));
                }),
            ),
            (
                "lens",
                Box::new(|| {
                    black_box(black_box(&tp).encode());
                }),
            ),
        ],
    );
    compare(
        "traceparent parse",
        vec![
            (
                "floor",
                Box::new(|| {
                    black_box(parse_floor(black_box(TRACEPARENT.as_bytes())));
                }),
            ),
            (
                "lens",
                Box::new(|| drop(black_box(TraceParent::parse(black_box(TRACEPARENT))))),
            ),
        ],
    );
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    fixture_p();
    fixture_l();
    traceparent();
}
