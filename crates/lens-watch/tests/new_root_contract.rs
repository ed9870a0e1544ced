//! The `lens.trace.new_root` contract: every value lens-span writes on a span that starts a new
//! trace (its HTTP/gRPC servers and its message consumers) is read back by the doctor's parser
//! as the same cause, under the same key, so that the writer and the reader cannot drift; and
//! the `lens.baggage.keys` it writes is what `baggage-dropped` reads.
#![allow(clippy::unwrap_used, clippy::panic)]

use http::HeaderMap;
use lens_core::policy::InboundRequest;
use lens_core::{HeaderCarrier, InboundPolicy};
use lens_watch::diagnose::{NEW_ROOT_ATTRIBUTE, NewRootCause};

const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// What lens-span writes for a request with these `traceparent` lines under `policy`.
fn written(policy: &InboundPolicy, traceparents: &[&str]) -> Option<String> {
    let mut headers = HeaderMap::new();
    for line in traceparents {
        headers.append("traceparent", line.parse().unwrap());
    }
    let carrier = HeaderCarrier(&headers);
    let inbound = policy.extract(&InboundRequest::from_headers(&carrier));
    lens_span::new_root::cause(&headers, &inbound).map(|kv| {
        assert_eq!(kv.key.as_str(), NEW_ROOT_ATTRIBUTE);
        kv.value.as_str().into_owned()
    })
}

#[test]
fn every_value_lens_span_writes_is_a_cause_the_doctor_reads() {
    assert_eq!(lens_span::new_root::NEW_ROOT, NEW_ROOT_ATTRIBUTE);
    let trust = InboundPolicy::trust_all();
    let other = GOOD.replace("00f067aa0ba902b7", "00f067aa0ba902b8");
    let cases: Vec<(InboundPolicy, Vec<String>)> = vec![
        (trust.clone(), vec![]),
        (trust.clone(), vec![GOOD.replacen("00", "ff", 1)]),
        (trust.clone(), vec![GOOD.replacen("00", "0g", 1)]),
        (trust.clone(), vec![format!("{GOOD}0")]),
        (trust.clone(), vec![GOOD.replace("-01", " -01")]),
        (
            trust.clone(),
            vec![GOOD.replace("4bf92f3577b34da6a3ce929d0e0e4736", &"0".repeat(32))],
        ),
        (
            trust.clone(),
            vec![GOOD.replace("00f067aa0ba902b7", &"0".repeat(16))],
        ),
        (trust.clone(), vec![GOOD.replace("-01", "-0x")]),
        (trust.clone(), vec![GOOD.to_owned(), other]),
        (InboundPolicy::ignore_all(), vec![GOOD.to_owned()]),
        (InboundPolicy::link_all(), vec![GOOD.to_owned()]),
    ];
    let mut seen = Vec::new();
    for (policy, lines) in &cases {
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let value = written(policy, &lines).unwrap_or_else(|| panic!("{lines:?}: a new root"));
        let cause = NewRootCause::parse(&value)
            .unwrap_or_else(|| panic!("the doctor does not read {value:?}"));
        assert_eq!(cause.value(), value);
        if !seen.contains(&value) {
            seen.push(value);
        }
    }
    // The messaging consumer that asked for links only.
    let linked = NewRootCause::parse(lens_span::new_root::LINKED).unwrap();
    assert_eq!(linked.value(), lens_span::new_root::LINKED);
    // Each rejection's anchor, the three policy causes and `none`.
    for value in [
        "none",
        "untrusted:ignored",
        "untrusted:linked",
        "rejected:traceparent-versions",
        "rejected:traceparent-zero-ids",
        "rejected:traceparent-format",
        "rejected:traceparent-length",
        "rejected:traceparent-repeated",
    ] {
        assert!(
            seen.iter().any(|v| v == value),
            "{value} not written by {seen:?}"
        );
    }
}

/// `lens.baggage.keys`: the key lens-span writes is the one `baggage-dropped` reads, a string
/// array (the doctor reads nothing else as recorded keys).
#[test]
fn the_baggage_keys_lens_span_writes_are_the_ones_the_doctor_reads() {
    use lens_watch::diagnose::BAGGAGE_KEYS_ATTRIBUTE;
    assert_eq!(
        lens_span::baggage_keys::BAGGAGE_KEYS,
        BAGGAGE_KEYS_ATTRIBUTE
    );
    let list =
        lens_core::baggage::BaggageList::parse(["a=1,b=2"], &lens_core::Limits::DEFAULT, false);
    let written = lens_span::baggage_keys::attribute(&list);
    assert!(matches!(
        written.value,
        opentelemetry::Value::Array(opentelemetry::Array::String(ref keys)) if keys.len() == 2
    ));
}
