//! docs/propagation-rules.md#tracestate: one behaviour per test.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use lens_core::Limits;
use lens_core::tracestate::{TraceStateError, TraceStateList};

fn parse(lines: &[&str]) -> Result<TraceStateList, TraceStateError> {
    TraceStateList::parse(lines.iter().copied(), &Limits::default())
}

fn members(list: &TraceStateList) -> Vec<(String, String)> {
    list.members()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

#[test]
fn several_lines_are_one_list() {
    let list = parse(&["a=1", "b=2,c=3"]).unwrap();
    assert_eq!(list.header(), "a=1,b=2,c=3");
}

#[test]
fn spaces_and_tabs_around_members_are_ignored() {
    let list = parse(&[" a=1 ,\tb=2\t"]).unwrap();
    assert_eq!(list.header(), "a=1,b=2");
}

#[test]
fn empty_members_are_skipped() {
    assert_eq!(parse(&["a=1,,, ,b=2,"]).unwrap().header(), "a=1,b=2");
}

#[test]
fn current_w3c_key_grammar_is_accepted() {
    for key in [
        "1abc",
        "t@1v",
        "foo@@bar",
        "tenant@vendorwith14ch",
        "a-_*/@z",
    ] {
        let list = parse(&[&format!("{key}=v")]).unwrap();
        assert_eq!(list.get(key), Some("v"), "{key}");
    }
}

#[test]
fn keys_opentelemetry_rejects_are_still_kept() {
    let list = parse(&["foo@@bar=1,ok=2"]).unwrap();
    assert!(!list.fits_otel());
    assert_eq!(list.to_otel().header(), "ok=2");
    // lens's list still speaks for opentelemetry's copy only while nobody changed that copy.
    assert!(list.matches_otel(&list.to_otel()));
    for changed in [[("ok", "3")], [("ko", "2")]] {
        let state = opentelemetry::trace::TraceState::from_key_value(changed).unwrap();
        assert!(!list.matches_otel(&state), "{changed:?}");
    }
    assert!(!list.matches_otel(&opentelemetry::trace::TraceState::NONE));
    assert_eq!(list.header(), "foo@@bar=1,ok=2");
    let plain = parse(&["ok=2,a@b=3"]).unwrap();
    assert!(plain.fits_otel());
    assert!(plain.matches_otel(&plain.to_otel()));
    let prefix = parse(&["a=1,b=22"]).unwrap();
    let state = opentelemetry::trace::TraceState::from_key_value([("a", "1"), ("b", "2")]).unwrap();
    assert!(
        !prefix.matches_otel(&state),
        "a prefix of the header is not the same state"
    );
}

#[test]
fn uppercase_key_drops_the_whole_list() {
    assert!(matches!(
        parse(&["a=1,Bad=2"]),
        Err(TraceStateError::InvalidKey { .. })
    ));
}

#[test]
fn key_starting_with_a_symbol_is_invalid() {
    assert!(parse(&["_a=1"]).is_err());
    assert!(parse(&["@a=1"]).is_err());
}

#[test]
fn a_bad_character_after_the_first_is_an_invalid_key() {
    for member in ["aB=1", "a.b=1", "a b=1", "a~=1"] {
        assert!(
            matches!(parse(&[member]), Err(TraceStateError::InvalidKey { .. })),
            "{member:?}: {:?}",
            parse(&[member])
        );
    }
    assert!(matches!(
        parse(&["a_b=1,c=x\u{e9}"]),
        Err(TraceStateError::InvalidValue { .. })
    ));
}

#[test]
fn key_of_256_characters_is_valid_and_257_is_not() {
    let k = format!("a{}", "b".repeat(255));
    assert!(parse(&[&format!("{k}=v")]).is_ok());
    assert!(parse(&[&format!("{k}b=v")]).is_err());
}

#[test]
fn member_without_equals_is_invalid() {
    assert!(matches!(
        parse(&["a=1,b"]),
        Err(TraceStateError::MissingEquals { .. })
    ));
}

#[test]
fn empty_value_is_invalid() {
    assert!(matches!(
        parse(&["a="]),
        Err(TraceStateError::InvalidValue { .. })
    ));
}

#[test]
fn value_with_equals_is_invalid() {
    assert!(parse(&["a=b=c"]).is_err());
}

#[test]
fn leading_spaces_are_part_of_the_value() {
    let list = parse(&["a=  v"]).unwrap();
    assert_eq!(list.get("a"), Some("  v"));
}

#[test]
fn trailing_spaces_are_whitespace_not_value() {
    let list = parse(&["a=v  \t"]).unwrap();
    assert_eq!(list.get("a"), Some("v"));
}

#[test]
fn value_of_256_characters_is_valid_and_257_is_not() {
    assert!(parse(&[&format!("a={}", "x".repeat(256))]).is_ok());
    assert!(parse(&[&format!("a={}", "x".repeat(257))]).is_err());
}

#[test]
fn non_printable_value_is_invalid() {
    assert!(parse(&["a=x\u{7f}"]).is_err());
    assert!(parse(&["a=é"]).is_err());
}

#[test]
fn thirty_two_members_are_kept() {
    let h: Vec<String> = (0..32).map(|i| format!("k{i}=v")).collect();
    assert_eq!(parse(&[&h.join(",")]).unwrap().len(), 32);
}

#[test]
fn thirty_three_members_drop_the_whole_list() {
    let h: Vec<String> = (0..33).map(|i| format!("k{i}=v")).collect();
    assert_eq!(
        parse(&[&h.join(",")]),
        Err(TraceStateError::TooManyMembers { limit: 32 })
    );
}

#[test]
fn more_than_8192_bytes_drop_the_whole_list() {
    let big = format!("a={},b={}", "x".repeat(256), "y".repeat(256));
    let lines: Vec<&str> = std::iter::repeat_n(big.as_str(), 16).collect();
    assert!(matches!(
        parse(&lines),
        Err(TraceStateError::TooLong { .. })
    ));
}

/// `lines` lines of valid members, `line_len` bytes each (distinct keys): joined by `,` they
/// make a tracestate of `lines * line_len + lines - 1` bytes.
fn lines_of(lines: usize, line_len: usize) -> Vec<String> {
    (0..lines)
        .map(|i| {
            let mut line = String::new();
            let mut j = 0;
            while line.len() < line_len {
                let key = format!("k{i}x{j}=");
                let room = line_len - line.len();
                if room > 250 + key.len() + 1 {
                    line.push_str(&format!("{key}{},", "v".repeat(250)));
                } else {
                    line.push_str(&format!("{key}{}", "v".repeat(room - key.len())));
                }
                j += 1;
            }
            line
        })
        .collect()
}

/// The byte limit counts one `,` for every line after the first (docs/propagation-rules.md#tracestate: several lines are
/// one list joined by `,`): two lines whose bytes alone are exactly the limit are one byte over.
#[test]
fn several_lines_count_one_separator_each_against_the_byte_limit() {
    for (limit, lines) in [(8192, 2), (8192, 3), (40, 2), (40, 4)] {
        // Enough members for the bytes: this test is about the byte limit alone.
        let limits = Limits::default()
            .with_tracestate_bytes(limit)
            .with_tracestate_members(64);
        let separators = lines - 1;
        // Exactly at the limit once the separators are counted: kept.
        let fits = lines_of(lines, (limit - separators) / lines);
        let total: usize = fits.iter().map(String::len).sum::<usize>() + separators;
        let fits: Vec<&str> = fits.iter().map(String::as_str).collect();
        assert!(total <= limit, "{total} > {limit}");
        let list = TraceStateList::parse(fits.iter().copied(), &limits);
        assert!(list.is_ok(), "{limit} {lines}: {list:?}");

        // The lines' bytes alone are the limit: with the separators, one byte or more over.
        let mut over = lines_of(lines, limit / lines);
        let short = limit - over.iter().map(String::len).sum::<usize>();
        over[0].push_str(&"v".repeat(short));
        let over: Vec<&str> = over.iter().map(String::as_str).collect();
        assert_eq!(over.iter().map(|l| l.len()).sum::<usize>(), limit);
        assert_eq!(
            TraceStateList::parse(over.iter().copied(), &limits),
            Err(TraceStateError::TooLong {
                len: limit + separators,
                limit
            }),
            "{limit} {lines}"
        );
    }
}

/// The same limit on the path extract takes (the header lines of a valid traceparent).
#[test]
fn extract_counts_the_separators_of_several_lines_too() {
    use lens_core::{HeaderLines, W3cPropagator};
    use opentelemetry::Context;
    use opentelemetry::trace::TraceContextExt;

    let limits = Limits::default().with_tracestate_bytes(20);
    let propagator = W3cPropagator::new().with_limits(limits);
    let traceparent = ["00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"];
    let extract = |lines: &[&str]| {
        let cx = propagator.extract_lines(
            &Context::new(),
            HeaderLines {
                traceparent: &traceparent,
                tracestate: lines,
                baggage: &[],
            },
        );
        cx.span().span_context().trace_state().header()
    };
    // 10 + 1 + 9 = 20 bytes: kept; 10 + 1 + 10 = 21: dropped whole.
    assert_eq!(
        extract(&["a=12345678", "b=1234567"]),
        "a=12345678,b=1234567"
    );
    assert_eq!(extract(&["a=12345678", "b=12345678"]), "");
    // 9 + 1 + 4 + 1 + 5 = 20 bytes: kept; one more: dropped.
    assert_eq!(
        extract(&["a=1234567", "b=12", "c=123"]),
        "a=1234567,b=12,c=123"
    );
    assert_eq!(extract(&["a=1234567", "b=12", "c=1234"]), "");
}

#[test]
fn repeated_key_keeps_its_first_member() {
    let list = parse(&["a=1,b=2,a=3"]).unwrap();
    assert_eq!(
        members(&list),
        [("a".into(), "1".into()), ("b".into(), "2".into())]
    );
}

#[test]
fn limits_are_configurable() {
    let limits = Limits::default().with_tracestate_members(2);
    assert!(TraceStateList::parse(["a=1,b=2,c=3"], &limits).is_err());
}

#[test]
fn otel_state_matches_only_while_unchanged() {
    let list = parse(&["a=1,b=2"]).unwrap();
    let otel = list.to_otel();
    assert!(list.matches_otel(&otel));
    assert!(!list.matches_otel(&otel.insert("c", "3").unwrap()));
}

#[test]
fn members_know_how_many_are_left() {
    for header in ["", "a=1", "a=1,b=2", "a=1,b=2,c@v=3"] {
        let list = parse(&[header]).unwrap();
        let mut it = list.members();
        for left in (0..=list.len()).rev() {
            assert_eq!(it.len(), left, "{header:?}");
            assert_eq!(it.size_hint(), (left, Some(left)), "{header:?}");
            assert_eq!(it.next().is_some(), left > 0, "{header:?}");
        }
        assert_eq!(it.next(), None);
    }
}

/// The tracestate header lens sends for a remote span context holding `state`.
fn sent_for(state: opentelemetry::trace::TraceState) -> Option<String> {
    use opentelemetry::Context;
    use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId};

    let cx = Context::new().with_remote_span_context(SpanContext::new(
        TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap(),
        SpanId::from_hex("00f067aa0ba902b7").unwrap(),
        TraceFlags::SAMPLED,
        true,
        state,
    ));
    let mut carrier = std::collections::HashMap::new();
    lens_core::inject_context_from(&cx, &mut carrier);
    carrier.remove("tracestate")
}

/// docs/propagation-rules.md#tracestate-from-opentelemetry
#[test]
fn sending_opentelemetry_tracestate_drops_refused_members_then_keeps_the_first_of_each_key() {
    let state = opentelemetry::trace::TraceState::from_key_value([
        ("a", " "),
        ("a", "x"),
        ("b", ""),
        ("c", "1"),
        ("a", "y"),
        ("c", "2"),
    ])
    .expect("opentelemetry takes these");
    assert_eq!(sent_for(state).as_deref(), Some("a=x,c=1"));
}

/// docs/propagation-rules.md#tracestate-from-opentelemetry
#[test]
fn sending_opentelemetry_tracestate_looks_at_its_first_32_members() {
    for n in [9, 31, 32, 33, 40] {
        let members: Vec<(String, String)> =
            (0..n).map(|i| (format!("k{i}"), format!("v{i}"))).collect();
        let state = opentelemetry::trace::TraceState::from_key_value(
            members.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        )
        .expect("opentelemetry takes these");
        let header = sent_for(state).unwrap_or_default();
        let sent: Vec<&str> = header.split(',').collect();
        assert_eq!(sent.len(), n.min(32), "{n} members");
        assert_eq!(sent.first().copied(), Some("k0=v0"));
        assert_eq!(
            sent.last().copied(),
            Some(format!("k{0}=v{0}", n.min(32) - 1).as_str())
        );
    }
}
