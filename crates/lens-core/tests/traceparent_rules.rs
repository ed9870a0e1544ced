//! docs/propagation-rules.md#traceparent: one behaviour per test.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use lens_core::traceparent::{TraceParent, TraceParentError};

const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn err(v: &str) -> TraceParentError {
    TraceParent::parse(v).unwrap_err()
}

#[test]
fn valid_version_00_parses_ids_and_flags() {
    let tp = TraceParent::parse(VALID).unwrap();
    assert_eq!(tp.version, 0);
    assert_eq!(tp.trace_id.to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(tp.parent_id.to_string(), "00f067aa0ba902b7");
    assert_eq!(tp.flags, 1);
}

#[test]
fn uppercase_hex_is_invalid() {
    assert_eq!(
        err(&VALID.replace("4bf9", "4BF9")),
        TraceParentError::InvalidTraceId
    );
    assert_eq!(
        err(&VALID.replace("00f0", "00F0")),
        TraceParentError::InvalidParentId
    );
    assert_eq!(
        err(&VALID.replace("-01", "-0A")),
        TraceParentError::InvalidFlags
    );
}

#[test]
fn plus_sign_in_a_field_is_invalid() {
    assert_eq!(
        err(&VALID.replace("4bf9", "+bf9")),
        TraceParentError::InvalidTraceId
    );
}

#[test]
fn short_or_long_fields_are_invalid() {
    assert!(TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01").is_err());
    assert!(
        TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b77-01").is_err()
    );
    assert!(TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1").is_err());
}

#[test]
fn version_00_with_trailing_dash_or_extra_characters_is_invalid() {
    assert!(matches!(
        err(&format!("{VALID}-")),
        TraceParentError::WrongLength { .. }
    ));
    assert!(matches!(
        err(&format!("{VALID}-abc")),
        TraceParentError::WrongLength { .. }
    ));
}

#[test]
fn version_ff_is_invalid() {
    assert_eq!(
        err(&VALID.replacen("00", "ff", 1)),
        TraceParentError::ForbiddenVersion
    );
}

#[test]
fn higher_version_parses_with_the_00_layout() {
    let tp = TraceParent::parse(&VALID.replacen("00", "cc", 1)).unwrap();
    assert_eq!(tp.version, 0xcc);
    assert_eq!(tp.trace_id.to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
}

#[test]
fn higher_version_may_continue_with_dash_and_printable_ascii() {
    let v = format!("{}-what the future holds", VALID.replacen("00", "01", 1));
    assert!(TraceParent::parse(&v).is_ok());
}

#[test]
fn higher_version_continuing_without_dash_is_invalid() {
    let v = format!("{}xyz", VALID.replacen("00", "01", 1));
    assert_eq!(err(&v), TraceParentError::InvalidSuffix);
}

#[test]
fn higher_version_continuing_with_control_character_is_invalid() {
    let v = format!("{}-a\u{1}b", VALID.replacen("00", "01", 1));
    assert!(matches!(err(&v), TraceParentError::InvalidCharacter { .. }));
}

#[test]
fn all_zero_trace_id_is_invalid() {
    let v = "00-00000000000000000000000000000000-00f067aa0ba902b7-01";
    assert_eq!(err(v), TraceParentError::ZeroTraceId);
}

#[test]
fn all_zero_parent_id_is_invalid() {
    let v = "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01";
    assert_eq!(err(v), TraceParentError::ZeroParentId);
}

#[test]
fn spaces_and_tabs_around_the_value_are_ignored() {
    assert!(TraceParent::parse(&format!(" \t{VALID}\t ")).is_ok());
}

#[test]
fn trailing_newline_is_invalid() {
    assert!(matches!(
        err(&format!("{VALID}\n")),
        TraceParentError::InvalidCharacter { .. }
    ));
}

#[test]
fn non_ascii_is_invalid() {
    assert!(matches!(
        err(&format!("{VALID}é")),
        TraceParentError::InvalidCharacter { .. }
    ));
}

#[test]
fn value_longer_than_512_bytes_is_invalid() {
    let v = format!("{}-{}", VALID.replacen("00", "01", 1), "a".repeat(512 - 56));
    assert_eq!(v.len(), 512);
    assert!(TraceParent::parse(&v).is_ok());
    let v = format!("{v}a");
    assert_eq!(
        err(&v),
        TraceParentError::TooLong {
            len: 513,
            limit: 512
        }
    );
}

#[test]
fn the_limit_counts_bytes_not_characters() {
    // 512 characters, more bytes: invalid before anything else is looked at.
    let v = format!("{}-{}", VALID.replacen("00", "01", 1), "é".repeat(300));
    assert!(v.chars().count() <= 512 && v.len() > 512);
    assert!(matches!(err(&v), TraceParentError::TooLong { .. }));
}

#[test]
fn identical_repeated_lines_count_as_one() {
    let tp = TraceParent::parse_lines([VALID, VALID, &format!(" {VALID}")], 512).unwrap();
    assert_eq!(tp, TraceParent::parse(VALID).unwrap());
}

#[test]
fn differing_lines_are_invalid() {
    let other = VALID.replace("-01", "-00");
    assert_eq!(
        TraceParent::parse_lines([VALID, &other], 512).unwrap_err(),
        TraceParentError::ConflictingLines
    );
}

#[test]
fn encode_restricts_flags_to_sampled_and_random() {
    let tp = TraceParent::parse(&VALID.replace("-01", "-ff")).unwrap();
    assert_eq!(tp.flags, 0xff);
    assert_eq!(&tp.encode()[53..], b"03");
}

#[test]
fn encode_always_writes_version_00() {
    let tp = TraceParent::parse(&VALID.replacen("00", "01", 1)).unwrap();
    assert_eq!(tp.to_header_string(), VALID);
}

#[test]
fn random_flag_is_reported() {
    let tp = TraceParent::parse(&VALID.replace("-01", "-02")).unwrap();
    assert!(tp.is_random() && !tp.is_sampled());
}

#[test]
fn errors_name_the_spec_rule() {
    assert!(
        err("junk")
            .to_string()
            .contains("docs/propagation-rules.md#traceparent")
    );
}

/// Each of the three separators must be a `-`, even when what stands there instead is a hex digit
/// that would make the fields around it decode (the fast path checks each one).
#[test]
fn every_separator_must_be_a_dash() {
    for at in [2, 35, 52] {
        for other in ["0", "a", "_"] {
            let mut value = VALID.to_owned();
            value.replace_range(at..=at, other);
            assert_eq!(err(&value), TraceParentError::MissingSeparator, "{value}");
        }
    }
}

/// Every prefix of a valid value is invalid (and none panics, whatever the length); so is every
/// version-00 value longer than 55 characters.
#[test]
fn only_the_whole_55_characters_are_valid() {
    for len in 0..VALID.len() {
        assert!(TraceParent::parse(&VALID[..len]).is_err(), "{len}");
    }
    for tail in ["0", "-", "-0", "00", "-00-x"] {
        assert!(matches!(
            err(&format!("{VALID}{tail}")),
            TraceParentError::WrongLength { .. }
        ));
    }
}

/// A 55-character value of another version keeps its version (only `00` takes the fast path).
#[test]
fn a_higher_version_of_55_characters_keeps_its_version() {
    for (prefix, version) in [("01", 0x01), ("0a", 0x0a), ("10", 0x10), ("fe", 0xfe)] {
        let value = format!("{prefix}{}", &VALID[2..]);
        let tp = TraceParent::parse(&value).unwrap();
        assert_eq!(tp.version, version, "{value}");
        assert_eq!(&tp.encode()[..], VALID.as_bytes());
    }
}

#[test]
fn a_value_that_is_only_a_version_is_too_short_not_a_bad_version() {
    // Two hex digits are a version; the error is about what is missing after them.
    assert!(matches!(err("00"), TraceParentError::WrongLength { .. }));
    assert!(matches!(err("0"), TraceParentError::InvalidVersion));
}

#[test]
fn each_flag_is_read_on_its_own_and_display_writes_the_header() {
    for (flags, sampled, random) in [
        ("00", false, false),
        ("01", true, false),
        ("02", false, true),
        ("03", true, true),
        ("fc", false, false),
    ] {
        let value = VALID.replace("-01", &format!("-{flags}"));
        let tp = TraceParent::parse(&value).unwrap();
        assert_eq!(
            (tp.is_sampled(), tp.is_random()),
            (sampled, random),
            "{value}"
        );
        // Display is the header lens sends: unknown flag bits cleared.
        let sent = tp.to_string();
        assert_eq!(sent, tp.to_header_string());
        assert_eq!(&sent[..53], &VALID[..53]);
    }
}

/// Each rejection names the rule it breaks by its anchor in docs/propagation-rules.md (the
/// value a SERVER span records in `lens.trace.new_root` as `rejected:<anchor>`), and the page
/// has that anchor.
#[test]
fn a_rejection_names_the_anchor_of_its_rule() {
    let rules = include_str!("../../../docs/propagation-rules.md");
    let long = format!("{VALID}{}", "-0".repeat(300));
    let cases = [
        (
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "traceparent-versions",
        ),
        (
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "traceparent-zero-ids",
        ),
        (
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "traceparent-zero-ids",
        ),
        (
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "traceparent-length",
        ),
        (long.as_str(), "traceparent-length"),
        (
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "traceparent-format",
        ),
    ];
    for (header, anchor) in cases {
        assert_eq!(err(header).anchor(), anchor, "{header}");
        assert!(
            rules.contains(&format!("<a id=\"{anchor}\"></a>")),
            "docs/propagation-rules.md has no anchor {anchor}"
        );
    }
    let repeated = TraceParent::parse_lines(
        [
            VALID,
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b8-01",
        ],
        512,
    )
    .unwrap_err();
    assert_eq!(repeated.anchor(), "traceparent-repeated");
    assert!(rules.contains("<a id=\"traceparent-repeated\"></a>"));
}
