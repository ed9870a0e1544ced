//! `W3cPropagator::extract_headers` gives exactly what extracting through `HeaderCarrier` gives,
//! whatever the number of lines, their case, or bytes that are not visible ASCII.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod extract_support;
use extract_support::{TP, observe};

use http::{HeaderMap, HeaderName, HeaderValue};
use lens_core::{HeaderCarrier, INLINE_LINES, LensContextExt, W3cPropagator};
use opentelemetry::Context;
use opentelemetry::propagation::TextMapPropagator;
use proptest::prelude::*;

fn same_as_carrier(headers: &HeaderMap) {
    let propagator = W3cPropagator::new();
    let direct = propagator.extract_headers(&Context::new(), headers);
    let via_carrier = propagator.extract_with_context(&Context::new(), &HeaderCarrier(headers));
    assert_eq!(observe(&direct), observe(&via_carrier), "{headers:?}");
}

#[test]
fn more_lines_than_the_inline_buffer() {
    let mut headers = HeaderMap::new();
    headers.append("traceparent", HeaderValue::from_static(TP));
    headers.append("tracestate", HeaderValue::from_static("a=1"));
    for i in 0..INLINE_LINES + 3 {
        headers.append(
            "baggage",
            HeaderValue::from_str(&format!("k{i}=v{i}")).unwrap(),
        );
    }
    same_as_carrier(&headers);
    let cx = W3cPropagator::new().extract_headers(&Context::new(), &headers);
    assert_eq!(cx.lens_baggage().len(), INLINE_LINES + 3);
}

/// A request with many other headers (read by lookups rather than one pass) gives the same.
#[test]
fn many_other_headers() {
    let mut headers = HeaderMap::new();
    headers.append("baggage", HeaderValue::from_static("a=1"));
    for i in 0..64 {
        headers.append(
            HeaderName::from_bytes(format!("x-other-{i}").as_bytes()).unwrap(),
            HeaderValue::from_static("1"),
        );
    }
    headers.append("traceparent", HeaderValue::from_static(TP));
    headers.append("baggage", HeaderValue::from_static("b=2"));
    same_as_carrier(&headers);
    let cx = W3cPropagator::new().extract_headers(&Context::new(), &headers);
    assert_eq!(cx.lens_baggage().header(), "a=1,b=2");
    assert!(cx.trace_id().is_some());
}

#[test]
fn lines_that_are_not_visible_ascii_are_skipped() {
    let mut headers = HeaderMap::new();
    headers.append("traceparent", HeaderValue::from_static(TP));
    headers.append("baggage", HeaderValue::from_bytes(b"k=caf\xe9").unwrap());
    headers.append("baggage", HeaderValue::from_static("ok=1"));
    same_as_carrier(&headers);
}

proptest! {
    #[test]
    fn any_headers_match_the_carrier_path(
        lines in proptest::collection::vec(
            (
                prop_oneof![
                    Just("traceparent"), Just("TraceParent"), Just("tracestate"),
                    Just("baggage"), Just("BAGGAGE"), Just("trace-parent"), Just("other"),
                ],
                prop_oneof![
                    Just(TP.as_bytes().to_vec()),
                    Just(b"a=1,b=2".to_vec()),
                    Just(b"k=v;p, x = y".to_vec()),
                    proptest::collection::vec(any::<u8>(), 0..40),
                ],
            ),
            0..12,
        ),
        // Other headers around them: few (read in one pass) or many (read by lookups).
        others in 0usize..48,
    ) {
        let mut headers = HeaderMap::new();
        for i in 0..others / 2 {
            headers.append(
                HeaderName::from_bytes(format!("x-before-{i}").as_bytes()).unwrap(),
                HeaderValue::from_static("1"),
            );
        }
        for (name, value) in &lines {
            if let Ok(value) = HeaderValue::from_bytes(value) {
                headers.append(HeaderName::from_bytes(name.as_bytes()).unwrap(), value);
            }
        }
        for i in 0..others - others / 2 {
            headers.append(
                HeaderName::from_bytes(format!("x-after-{i}").as_bytes()).unwrap(),
                HeaderValue::from_static("1"),
            );
        }
        same_as_carrier(&headers);
    }
}
