//! One behaviour per test for the baggage rules of docs/propagation-rules.md#baggage, docs/propagation-rules.md#limits.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lens_core::Limits;
use lens_core::baggage::{
    BaggageEntry, BaggageError, BaggageIssue, BaggageIssueReason, BaggageList, encode_value,
};
use proptest::prelude::*;

fn parse(header: &str) -> BaggageList {
    BaggageList::parse([header], &Limits::default(), false)
}

fn pairs(list: &BaggageList) -> Vec<(&str, &str)> {
    list.iter().map(|e| (e.key(), e.value())).collect()
}

fn issues(lines: &[&'static str]) -> Vec<BaggageIssue<'static>> {
    let mut found = Vec::new();
    BaggageList::parse_reporting(lines.iter().copied(), &Limits::default(), false, |i| {
        found.push(i)
    });
    found
}

fn encoded(value: &str) -> String {
    let mut out = String::new();
    encode_value(value, &mut out);
    out
}

// ---- keys ----

#[test]
fn key_is_a_token_with_every_tchar() {
    let key = "!#$%&'*+-.^_`|~09azAZ";
    let list = parse(&format!("{key}=v"));
    assert_eq!(pairs(&list), [(key, "v")]);
    assert_eq!(list.header(), format!("{key}=v"));
}

#[test]
fn key_plus_and_percent_are_taken_literally() {
    let list = parse("my+key=1,my%20key=2");
    assert_eq!(pairs(&list), [("my+key", "1"), ("my%20key", "2")]);
    assert_eq!(list.header(), "my+key=1,my%20key=2");
}

#[test]
fn key_is_case_sensitive() {
    let list = parse("K=1,k=2");
    assert_eq!(pairs(&list), [("K", "1"), ("k", "2")]);
}

#[test]
fn key_with_separator_drops_only_that_member() {
    for bad in [
        "a/b=1",
        "a b=1",
        "a\"b=1",
        "a(b=1",
        "a:b=1",
        "ключ=1",
        "a\u{1}b=1",
    ] {
        let header = format!("{bad},c=2");
        let list = parse(&header);
        assert_eq!(pairs(&list), [("c", "2")], "{bad:?}");
    }
}

#[test]
fn empty_key_drops_the_member() {
    assert_eq!(pairs(&parse("=v,b=2")), [("b", "2")]);
    assert_eq!(pairs(&parse(" = v,b=2")), [("b", "2")]);
}

#[test]
fn invalid_key_is_reported() {
    assert_eq!(
        issues(&["a/b=1,c=2"]),
        [BaggageIssue {
            member: "a/b=1",
            reason: BaggageIssueReason::InvalidKey
        }]
    );
}

#[test]
fn member_without_equals_is_dropped_and_reported() {
    assert_eq!(pairs(&parse("novalue,b=2")), [("b", "2")]);
    assert_eq!(
        issues(&[" novalue ,b=2"]),
        [BaggageIssue {
            member: "novalue",
            reason: BaggageIssueReason::MissingEquals
        }]
    );
}

// ---- values ----

#[test]
fn value_is_split_on_the_first_equals() {
    let list = parse("k=a=b=c");
    assert_eq!(pairs(&list), [("k", "a=b=c")]);
    assert_eq!(list.header(), "k=a%3Db%3Dc");
}

#[test]
fn empty_value_is_kept() {
    let list = parse("k=,j= ");
    assert_eq!(pairs(&list), [("k", ""), ("j", "")]);
    assert_eq!(list.header(), "k=,j=");
}

#[test]
fn plus_in_value_stays_a_plus_by_default() {
    let list = parse("k=a+b");
    assert_eq!(pairs(&list), [("k", "a+b")]);
    assert_eq!(list.header(), "k=a%2Bb");
}

#[test]
fn plus_as_space_decodes_plus_as_a_space() {
    let list = BaggageList::parse(["k=a+b%2Bc"], &Limits::default(), true);
    assert_eq!(pairs(&list), [("k", "a b+c")]);
    assert_eq!(list.header(), "k=a%20b%2Bc");
}

#[test]
fn plus_as_space_leaves_keys_alone() {
    let list = BaggageList::parse(["a+b=1"], &Limits::default(), true);
    assert_eq!(pairs(&list), [("a+b", "1")]);
}

/// Whether an escape is sent on as it came is decided from its own two digits: a lowercase
/// escape after other bytes is re-encoded in uppercase, whatever follows it.
#[test]
fn a_lowercase_escape_inside_a_value_is_sent_uppercase() {
    assert_eq!(sent_on("k=x%2aA"), "k=x%2AA");
    assert_eq!(sent_on("k=ab%2cCD"), "k=ab%2CCD");
    assert_eq!(parse("k=x%2aA").header(), "k=x%2AA");
}

#[test]
fn percent_escapes_decode_in_either_case() {
    assert_eq!(pairs(&parse("k=%c3%A9%2c")), [("k", "é,")]);
}

#[test]
fn malformed_percent_escape_is_kept_as_is() {
    let list = parse("a=%zz,b=%,c=%4,d=100%,e=%%41");
    assert_eq!(
        pairs(&list),
        [
            ("a", "%zz"),
            ("b", "%"),
            ("c", "%4"),
            ("d", "100%"),
            ("e", "%A")
        ]
    );
    assert_eq!(list.header(), "a=%25zz,b=%25,c=%254,d=100%25,e=%25A");
}

/// The escape check reads the two bytes after the `%`, not its neighbours: hex digits on either
/// side of a malformed escape do not make it one that may be sent on as received. Each header
/// holds one member, so that no earlier member has already made lens rewrite the header.
#[test]
fn malformed_escape_between_hex_digits_is_still_re_encoded() {
    for (header, value, sent) in [
        ("a=A%zB", "A%zB", "a=A%25zB"),
        ("b=C0%Az", "C0%Az", "b=C0%25Az"),
    ] {
        let list = parse(header);
        assert_eq!(pairs(&list), [(&header[..1], value)]);
        assert_eq!(list.header(), sent);
        assert_eq!(sent_on(header), sent);
    }
}

/// The header lens sends on for a received `baggage` header: extracted into opentelemetry's
/// `Baggage` (and lens's ordered copy) from a plain map, then injected.
fn sent_on(header: &str) -> String {
    let mut carrier = std::collections::HashMap::new();
    carrier.insert("baggage".to_owned(), header.to_owned());
    let cx = lens_core::extract_context(&carrier);
    let mut out = std::collections::HashMap::new();
    lens_core::inject_context_from(&cx, &mut out);
    out.remove("baggage").unwrap_or_default()
}

/// An escape of an unreserved byte goes out as the byte itself (only bytes outside the
/// unreserved set are sent escaped), from the list and from extract and inject alike; an escape
/// exactly as lens writes it (uppercase, of a byte that needs one) goes out as it came.
#[test]
fn an_escaped_unreserved_byte_is_sent_as_the_byte() {
    for (header, sent) in [
        ("k=%41", "k=A"),
        ("k=%7A9", "k=z9"),
        ("k=%2D%5F%2E%7E", "k=-_.~"),
        ("k=%7e", "k=~"),
        ("k=%20", "k=%20"),
        ("k=%2C", "k=%2C"),
        ("k=%C3%A9", "k=%C3%A9"),
    ] {
        assert_eq!(parse(header).header(), sent, "{header}");
        assert_eq!(sent_on(header), sent, "{header}");
    }
}

#[test]
fn invalid_utf8_after_decoding_becomes_replacement_characters() {
    let list = parse("k=%FF%FE,j=a%C3b,l=%E2%82");
    assert_eq!(
        pairs(&list),
        [
            ("k", "\u{FFFD}\u{FFFD}"),
            ("j", "a\u{FFFD}b"),
            ("l", "\u{FFFD}")
        ]
    );
    assert_eq!(
        list.header(),
        "k=%EF%BF%BD%EF%BF%BD,j=a%EF%BF%BDb,l=%EF%BF%BD"
    );
}

#[test]
fn raw_invalid_value_characters_drop_only_that_member() {
    for bad in [
        "a=1 2",
        "a=1\t2",
        "a=x\"y",
        "a=x\\y",
        "a=é",
        "a=x\u{7f}",
        "a=x\u{1}",
    ] {
        let header = format!("b=1,{bad},c=2");
        let list = parse(&header);
        assert_eq!(pairs(&list), [("b", "1"), ("c", "2")], "{bad:?}");
        assert_eq!(list.header(), "b=1,c=2");
    }
}

#[test]
fn invalid_value_is_reported() {
    assert_eq!(
        issues(&["a=1 2,c=2"]),
        [BaggageIssue {
            member: "a=1 2",
            reason: BaggageIssueReason::InvalidValueCharacter
        }]
    );
}

#[test]
fn percent_encoded_whitespace_is_kept() {
    let list = parse("k=%20v%20,j=%20%20,t=%09");
    assert_eq!(pairs(&list), [("k", " v "), ("j", "  "), ("t", "\t")]);
    assert_eq!(list.header(), "k=%20v%20,j=%20%20,t=%09");
}

#[test]
fn spaces_and_tabs_around_members_keys_values_and_equals_are_ignored() {
    let list = parse(" \ta \t= \t1 \t, b=2\t,\tc =3 ");
    assert_eq!(pairs(&list), [("a", "1"), ("b", "2"), ("c", "3")]);
    assert_eq!(list.header(), "a=1,b=2,c=3");
}

#[test]
fn empty_members_are_skipped_silently() {
    assert_eq!(pairs(&parse(",a=1,, ,\t,b=2,")), [("a", "1"), ("b", "2")]);
    assert!(issues(&[",, ,", ""]).is_empty());
    assert!(parse("").is_empty());
}

// ---- properties ----

#[test]
fn properties_are_kept_apart_from_the_value() {
    let list = parse("k=v;p1;p2=x");
    let entry = list.get("k").unwrap();
    assert_eq!(entry.value(), "v");
    assert_eq!(entry.properties(), "p1;p2=x");
    assert_eq!(list.header(), "k=v;p1;p2=x");
}

#[test]
fn properties_are_trimmed_and_re_sent() {
    let list = parse("k=v ; p1 = x ; p2\t");
    assert_eq!(pairs(&list), [("k", "v")]);
    assert_eq!(list.get("k").unwrap().properties(), "p1=x;p2");
    assert_eq!(list.header(), "k=v;p1=x;p2");
}

#[test]
fn spaces_before_the_first_property_are_not_re_sent() {
    // The properties themselves are already canonical here: only the space between the value
    // and `;` has to go.
    assert_eq!(parse("k=v ;p").header(), "k=v;p");
    assert_eq!(parse("a=1,k=v\t;p=x").header(), "a=1,k=v;p=x");
}

#[test]
fn property_values_are_sent_on_as_received() {
    let list = parse("k=a%20b;p=a%20b+c");
    assert_eq!(list.get("k").unwrap().properties(), "p=a%20b+c");
    assert_eq!(list.header(), "k=a%20b;p=a%20b+c");
}

#[test]
fn invalid_property_drops_only_that_member() {
    for bad in [
        "k=v;=x",
        "k=v;",
        "k=v;;p",
        "k=v;p q",
        "k=v;p=a b",
        "k=v;p/q",
        "k=v;p=é",
    ] {
        let header = format!("{bad},b=2");
        assert_eq!(pairs(&parse(&header)), [("b", "2")], "{bad:?}");
    }
    assert_eq!(
        issues(&["k=v;=x,b=2"]),
        [BaggageIssue {
            member: "k=v;=x",
            reason: BaggageIssueReason::InvalidProperty
        }]
    );
}

#[test]
fn entry_without_properties_has_empty_properties() {
    assert_eq!(parse("k=v").get("k").unwrap().properties(), "");
}

// ---- duplicates, order, lines ----

#[test]
fn duplicate_key_last_value_wins_at_first_position() {
    let list = parse("k=1,a=x,k=2,b=y,k=3");
    assert_eq!(pairs(&list), [("k", "3"), ("a", "x"), ("b", "y")]);
    assert_eq!(list.header(), "k=3,a=x,b=y");
}

#[test]
fn duplicate_key_replaces_properties_too() {
    let list = parse("k=1;p,k=2");
    assert_eq!(list.get("k").unwrap().properties(), "");
    assert_eq!(list.header(), "k=2");
}

#[test]
fn order_of_arrival_is_kept() {
    let list = parse("z=1,a=2,m=3");
    assert_eq!(list.header(), "z=1,a=2,m=3");
}

#[test]
fn several_lines_are_one_list() {
    let list = BaggageList::parse(["a=1,b=2", "", " c=3 ", "a=4"], &Limits::default(), false);
    assert_eq!(pairs(&list), [("a", "4"), ("b", "2"), ("c", "3")]);
    assert_eq!(list.header(), "a=4,b=2,c=3");
}

#[test]
fn a_member_never_spans_lines() {
    let list = BaggageList::parse(["a=1;", "p"], &Limits::default(), false);
    assert!(list.is_empty());
}

// ---- limits ----

fn members(n: usize) -> String {
    (0..n)
        .map(|i| format!("k{i}=v"))
        .collect::<Vec<_>>()
        .join(",")
}

#[test]
fn exactly_180_members_are_kept() {
    let list = parse(&members(180));
    assert_eq!(list.len(), 180);
    assert_eq!(list.header(), members(180));
}

#[test]
fn member_181_and_later_are_dropped() {
    let header = format!("{},extra=1", members(181));
    let mut found = Vec::new();
    let list = BaggageList::parse_reporting([header.as_str()], &Limits::default(), false, |i| {
        found.push(i)
    });
    assert_eq!(list.len(), 180);
    assert_eq!(list.header(), members(180));
    assert!(list.get("extra").is_none());
    assert_eq!(
        found,
        [BaggageIssue {
            member: "k180=v",
            reason: BaggageIssueReason::TooManyMembers
        }]
    );
}

#[test]
fn duplicates_do_not_count_against_the_member_limit() {
    let header = format!("{},k0=w", members(180));
    let list = parse(&header);
    assert_eq!(list.len(), 180);
    assert_eq!(list.get("k0").unwrap().value(), "w");
}

/// `a=1,k=<v...>` making exactly `total` bytes.
fn sized(total: usize) -> String {
    let value = "v".repeat(total - "a=1,k=".len());
    format!("a=1,k={value}")
}

#[test]
fn header_of_exactly_8192_bytes_is_kept() {
    let header = sized(8192);
    let list = parse(&header);
    assert_eq!(list.len(), 2);
    assert_eq!(list.header(), header);
    assert_eq!(list.header().len(), 8192);
}

#[test]
fn member_that_would_pass_8192_bytes_is_dropped_with_all_after_it() {
    let header = format!("{},b=2", sized(8193));
    let mut found = Vec::new();
    let list = BaggageList::parse_reporting([header.as_str()], &Limits::default(), false, |i| {
        found.push(i.reason)
    });
    assert_eq!(pairs(&list), [("a", "1")]);
    assert_eq!(list.header(), "a=1");
    assert_eq!(found, [BaggageIssueReason::TooLarge]);
}

#[test]
fn size_is_that_of_the_header_lens_sends() {
    // Received as 4 raw bytes `k=!!`, sent as `k=%21%21` (8 bytes).
    let limits = Limits::default().with_baggage_bytes(7);
    assert!(BaggageList::parse(["k=!!"], &limits, false).is_empty());
    let limits = Limits::default().with_baggage_bytes(8);
    assert_eq!(
        BaggageList::parse(["k=!!"], &limits, false).header(),
        "k=%21%21"
    );
    // Spaces around members are not counted.
    let padded = format!("  {}  ", sized(8192));
    assert_eq!(parse(&padded).header().len(), 8192);
}

#[test]
fn size_is_counted_after_duplicates_merge() {
    let limits = Limits::default().with_baggage_bytes(7);
    let list = BaggageList::parse(["a=1,a=2,b=3"], &limits, false);
    assert_eq!(list.header(), "a=2,b=3");
}

#[test]
fn duplicate_that_would_pass_the_limit_stops_parsing() {
    let limits = Limits::default().with_baggage_bytes(7);
    let list = BaggageList::parse(["a=1,b=2,a=22,c=3"], &limits, false);
    assert_eq!(list.header(), "a=1,b=2");
}

#[test]
fn a_single_member_may_use_the_whole_limit() {
    let header = format!("k={}", "v".repeat(8190));
    let list = parse(&header);
    assert_eq!(list.header(), header);
    let too_big = format!("k={}", "v".repeat(8191));
    assert!(parse(&too_big).is_empty());
}

#[test]
fn invalid_members_before_the_limit_are_skipped() {
    let header = format!("bad=é,{}", sized(8192));
    assert_eq!(parse(&header).header(), sized(8192));
}

#[test]
fn hostile_input_is_bounded() {
    // 100,000 members in about 1 MiB, and one huge member.
    let many = members(100_000);
    let list = parse(&many);
    assert_eq!(list.len(), 180);
    let huge = format!("k={}", "%41".repeat(400_000));
    assert!(parse(&huge).is_empty());
    // Duplicates are examined to the end but stay within the limits.
    let dups = "k=1,".repeat(200_000);
    assert_eq!(parse(&dups).header(), "k=1");
    let invalid = "k=1 2,".repeat(200_000);
    assert!(parse(&invalid).is_empty());
}

#[test]
fn custom_limits_apply() {
    let limits = Limits::default().with_baggage_members(2);
    let list = BaggageList::parse(["a=1,b=2,c=3"], &limits, false);
    assert_eq!(list.header(), "a=1,b=2");
    let limits = Limits::default().with_baggage_members(0);
    assert!(BaggageList::parse(["a=1"], &limits, false).is_empty());
}

// ---- set / remove ----

#[test]
fn set_appends_and_encodes() {
    let limits = Limits::default();
    let mut list = BaggageList::new();
    list.set("a", "x y", "", &limits).unwrap();
    list.set("b+c", "100%", "p1; p2 = v", &limits).unwrap();
    assert_eq!(list.header(), "a=x%20y,b+c=100%25;p1;p2=v");
    assert_eq!(list.get("b+c").unwrap().properties(), "p1;p2=v");
}

#[test]
fn set_existing_key_replaces_in_place() {
    let limits = Limits::default();
    let mut list = parse("a=1,b=2;p,c=3");
    list.set("b", "9", "", &limits).unwrap();
    assert_eq!(list.header(), "a=1,b=9,c=3");
}

#[test]
fn set_refuses_non_token_keys() {
    let limits = Limits::default();
    let mut list = parse("a=1");
    for bad in ["", " ", "a b", "ключ", "a/b", "a=b", "a,b", "a;b", " a"] {
        assert_eq!(
            list.set(bad, "v", "", &limits),
            Err(BaggageError::InvalidKey(bad.to_owned())),
            "{bad:?}"
        );
    }
    assert_eq!(list.header(), "a=1");
}

#[test]
fn set_refuses_invalid_properties() {
    let limits = Limits::default();
    let mut list = BaggageList::new();
    for bad in [";", "p;", "=x", "p q", "p=a b", "p,q"] {
        assert_eq!(
            list.set("k", "v", bad, &limits),
            Err(BaggageError::InvalidProperties(bad.to_owned())),
            "{bad:?}"
        );
    }
    assert!(list.is_empty());
}

#[test]
fn set_refuses_a_member_over_the_member_limit() {
    let limits = Limits::default();
    let mut list = parse(&members(180));
    let before = list.clone();
    assert_eq!(
        list.set("new", "v", "", &limits),
        Err(BaggageError::TooManyMembers { limit: 180 })
    );
    assert_eq!(list, before);
    // Replacing an existing key is still fine.
    list.set("k0", "w", "", &limits).unwrap();
}

#[test]
fn set_refuses_a_header_over_the_byte_limit() {
    let limits = Limits::default();
    let mut list = parse(&sized(8190));
    let before = list.clone();
    assert_eq!(
        list.set("b", "", "", &limits),
        Err(BaggageError::TooLarge { limit: 8192 })
    );
    assert_eq!(
        list.set("a", "1234", "", &limits),
        Err(BaggageError::TooLarge { limit: 8192 })
    );
    assert_eq!(list, before);
    list.set("a", "123", "", &limits).unwrap();
    assert_eq!(list.header().len(), 8192);
}

#[test]
fn remove_returns_the_entry_and_updates_the_header() {
    let mut list = parse("a=1,b=2;p,c=3");
    let removed: BaggageEntry = list.remove("b").unwrap();
    assert_eq!(
        (removed.key(), removed.value(), removed.properties()),
        ("b", "2", "p")
    );
    assert_eq!(list.header(), "a=1,c=3");
    assert!(list.remove("b").is_none());
    list.remove("a");
    list.remove("c");
    assert_eq!(list.header(), "");
    assert_eq!(list, BaggageList::new());
}

#[test]
fn iteration_forms_agree() {
    let list = parse("a=1,b=2");
    let by_ref: Vec<&BaggageEntry> = (&list).into_iter().collect();
    let by_iter: Vec<&BaggageEntry> = list.iter().collect();
    assert_eq!(by_ref, by_iter);
    assert_eq!(list.entries().len(), list.len());
    assert!(!list.is_empty());
}

// ---- encode_value ----

#[test]
fn encode_value_uses_rfc3986() {
    assert_eq!(encoded("a b"), "a%20b");
    assert_eq!(encoded("100%"), "100%25");
    assert_eq!(encoded("é世🚀"), "%C3%A9%E4%B8%96%F0%9F%9A%80");
    assert_eq!(encoded("AZaz09-._~"), "AZaz09-._~");
    assert_eq!(encoded("+,;=\"\\/*!"), "%2B%2C%3B%3D%22%5C%2F%2A%21");
    assert_eq!(encoded(""), "");
}

#[test]
fn encode_value_appends() {
    let mut out = String::from("k=");
    encode_value("a b", &mut out);
    assert_eq!(out, "k=a%20b");
}

// ---- explanations ----

#[test]
fn every_reason_names_a_spec_rule() {
    for reason in [
        BaggageIssueReason::InvalidKey,
        BaggageIssueReason::MissingEquals,
        BaggageIssueReason::InvalidValueCharacter,
        BaggageIssueReason::InvalidProperty,
        BaggageIssueReason::TooManyMembers,
        BaggageIssueReason::TooLarge,
    ] {
        let text = reason.to_string();
        assert!(text.contains("docs/propagation-rules.md#baggage"), "{text}");
    }
    let issue = BaggageIssue {
        member: "a b=1",
        reason: BaggageIssueReason::InvalidKey,
    };
    assert!(issue.to_string().contains("`a b=1`"));
}

// ---- properties (proptest) ----

fn small_limits() -> impl Strategy<Value = Limits> {
    (0usize..12, 0usize..300).prop_map(|(members, bytes)| {
        Limits::default()
            .with_baggage_members(members)
            .with_baggage_bytes(bytes)
    })
}

fn any_limits() -> impl Strategy<Value = Limits> {
    prop_oneof![Just(Limits::default()), small_limits()]
}

/// Strings made mostly of baggage syntax, to reach deep paths.
fn baggage_like() -> impl Strategy<Value = String> {
    proptest::string::string_regex("([ \t,;=%+a-cA-C0-9é\"\\\\]|%[0-9a-fA-FgG]{0,2}){0,80}")
        .expect("regex")
}

fn token() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[!#$%&'*+.^_`|~0-9A-Za-z-]{1,12}").expect("regex")
}

fn properties() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        (
            token(),
            proptest::option::of(
                proptest::string::string_regex("[!#-+./0-9:<-\\[\\]-~]{0,8}").expect("regex"),
            ),
        ),
        0..3,
    )
    .prop_map(|props| {
        props
            .into_iter()
            .map(|(k, v)| match v {
                Some(v) => format!("{k}={v}"),
                None => k,
            })
            .collect::<Vec<_>>()
            .join(";")
    })
}

fn check_within(list: &BaggageList, limits: &Limits) {
    assert!(list.len() <= limits.baggage_members);
    assert!(list.header().len() <= limits.baggage_bytes);
    // The header is what the entries encode to.
    let mut rebuilt = BaggageList::new();
    for e in list {
        rebuilt
            .set(e.key(), e.value(), e.properties(), &Limits::default())
            .unwrap();
    }
    assert_eq!(rebuilt.header(), list.header());
}

proptest! {
    #[test]
    fn parse_never_panics_and_stays_within_limits(
        lines in proptest::collection::vec(any::<String>(), 0..4),
        limits in any_limits(),
        plus in any::<bool>(),
    ) {
        let list = BaggageList::parse(lines.iter().map(String::as_str), &limits, plus);
        check_within(&list, &limits);
    }

    #[test]
    fn parse_of_baggage_like_text_is_stable(
        lines in proptest::collection::vec(baggage_like(), 0..4),
        limits in any_limits(),
        plus in any::<bool>(),
    ) {
        let list = BaggageList::parse(lines.iter().map(String::as_str), &limits, plus);
        check_within(&list, &limits);
        // Re-parsing what lens sends gives the same list.
        let again = BaggageList::parse([list.header()], &limits, plus);
        prop_assert_eq!(&again, &list);
    }

    #[test]
    fn header_of_set_entries_parses_back(
        entries in proptest::collection::vec((token(), any::<String>(), properties()), 0..12),
        plus in any::<bool>(),
    ) {
        let limits = Limits::default();
        let mut list = BaggageList::new();
        for (key, value, props) in &entries {
            list.set(key, value, props, &limits).unwrap();
        }
        let parsed = BaggageList::parse([list.header()], &limits, plus);
        prop_assert_eq!(parsed, list);
    }
}

proptest! {
    /// Many repeated keys (past the size where repeated keys are found through a hash index):
    /// the last value wins at the first position, as a plain model says.
    #[test]
    fn repeated_keys_match_a_plain_model(
        members in proptest::collection::vec((0u8..24, "[a-z0-9]{0,3}"), 0..80),
    ) {
        let header = members
            .iter()
            .map(|(k, v)| format!("k{k}={v}"))
            .collect::<Vec<_>>()
            .join(",");
        let mut model: Vec<(String, String)> = Vec::new();
        for (k, v) in &members {
            let key = format!("k{k}");
            match model.iter_mut().find(|(mk, _)| *mk == key) {
                Some(slot) => slot.1 = v.clone(),
                None => model.push((key, v.clone())),
            }
        }
        let list = parse(&header);
        let got: Vec<(String, String)> = list
            .iter()
            .map(|e| (e.key().to_owned(), e.value().to_owned()))
            .collect();
        prop_assert_eq!(got, model.clone());
        let expected_header = model
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",");
        prop_assert_eq!(list.header(), expected_header);
    }
}
