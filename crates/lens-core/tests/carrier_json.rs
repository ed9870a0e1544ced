//! The JSON carrier: encoding as Python's `json.dumps` (docs/propagation-rules.md#json-byte-format) and strict, bounded decoding
//! (docs/propagation-rules.md#carriers, docs/propagation-rules.md#limits).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lens_core::Limits;
use lens_core::carrier::{Carrier, CarrierError};
use opentelemetry::propagation::{Extractor, Injector};
use proptest::prelude::*;

const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn one(key: &str, value: &str) -> Carrier {
    let mut c = Carrier::new();
    c.insert(key, value);
    c
}

fn json(c: &Carrier) -> String {
    String::from_utf8(c.to_json_bytes()).unwrap()
}

fn parse(s: &str) -> Result<Carrier, CarrierError> {
    Carrier::from_json_bytes(s.as_bytes())
}

fn is_invalid(r: Result<Carrier, CarrierError>) -> bool {
    matches!(r, Err(CarrierError::InvalidJson { .. }))
}

// ------------------------------------------------------------------------------------------
// Encoding
// ------------------------------------------------------------------------------------------

#[test]
fn encode_empty_is_braces() {
    assert_eq!(Carrier::new().to_json_bytes(), b"{}");
}

#[test]
fn encode_single_string_value() {
    assert_eq!(
        json(&one("traceparent", TP)),
        format!(r#"{{"traceparent": "{TP}"}}"#)
    );
}

#[test]
fn encode_keeps_insertion_order_with_python_separators() {
    let mut c = Carrier::new();
    c.insert("traceparent", "a");
    c.insert("tracestate", "b");
    c.insert("baggage", "c");
    assert_eq!(
        json(&c),
        r#"{"traceparent": "a", "tracestate": "b", "baggage": "c"}"#
    );
}

#[test]
fn encode_several_lines_as_array() {
    let mut c = Carrier::new();
    c.insert("a", "1");
    c.append("b", "x");
    c.append("b", "y");
    assert_eq!(json(&c), r#"{"a": "1", "b": ["x", "y"]}"#);
}

#[test]
fn encode_escapes_quote_and_backslash_not_slash() {
    assert_eq!(json(&one("k", r#"a"b\c/d"#)), r#"{"k": "a\"b\\c/d"}"#);
}

#[test]
fn encode_escapes_short_control_forms() {
    assert_eq!(
        json(&one("k", "\n\r\t\u{8}\u{c}")),
        r#"{"k": "\n\r\t\b\f"}"#
    );
}

#[test]
fn encode_escapes_other_controls_and_del_as_lowercase_u() {
    assert_eq!(
        json(&one("k", "\u{0}\u{1}\u{1f}\u{7f}")),
        r#"{"k": "\u0000\u0001\u001f\u007f"}"#
    );
    // Alone among printable characters too: `~` (0x7e) is the last byte sent as it is.
    assert_eq!(json(&one("k", "a~\u{7f}b")), r#"{"k": "a~\u007fb"}"#);
    assert_eq!(json(&one("k", " ~")), r#"{"k": " ~"}"#);
}

#[test]
fn encode_escapes_non_ascii_lowercase_hex() {
    assert_eq!(
        json(&one("k", "\u{e9}\u{ffff}\u{100}\u{2028}\u{abcd}")),
        r#"{"k": "\u00e9\uffff\u0100\u2028\uabcd"}"#
    );
}

#[test]
fn encode_astral_as_surrogate_pair() {
    assert_eq!(
        json(&one("k", "\u{1F600}\u{10FFFF}")),
        r#"{"k": "\ud83d\ude00\udbff\udfff"}"#
    );
}

#[test]
fn encode_escapes_keys_too() {
    assert_eq!(json(&one("tr\u{e9}\"", "v")), r#"{"tr\u00e9\"": "v"}"#);
}

#[test]
fn encode_write_json_appends() {
    let mut out = b"prefix:".to_vec();
    one("a", "b").write_json(&mut out);
    assert_eq!(out, br#"prefix:{"a": "b"}"#);
}

#[test]
fn encode_then_decode_round_trips() {
    let mut c = Carrier::new();
    c.insert("k\u{1F600}", "\u{0}\"\\/\u{7f}\u{e9}\u{10FFFF}");
    c.append("b", "x");
    c.append("b", "y\n");
    assert_eq!(Carrier::from_json_bytes(&c.to_json_bytes()).unwrap(), c);
}

// ------------------------------------------------------------------------------------------
// Map behaviour
// ------------------------------------------------------------------------------------------

#[test]
fn insert_existing_key_keeps_position_and_replaces_lines() {
    let mut c = Carrier::new();
    c.append("a", "1");
    c.append("a", "2");
    c.insert("b", "x");
    c.insert("a", "3");
    assert_eq!(json(&c), r#"{"a": "3", "b": "x"}"#);
}

#[test]
fn get_is_case_sensitive_and_returns_first_line() {
    let mut c = Carrier::new();
    c.append("traceparent", "1");
    c.append("traceparent", "2");
    assert_eq!(c.get("traceparent"), Some("1"));
    assert_eq!(c.get("Traceparent"), None);
    assert_eq!(
        c.get_all("traceparent"),
        Some(&["1".to_owned(), "2".to_owned()][..])
    );
}

#[test]
fn remove_returns_lines_and_drops_key() {
    let mut c = one("a", "1");
    c.insert("b", "2");
    assert_eq!(c.remove("a"), Some(vec!["1".to_owned()]));
    assert_eq!(c.remove("a"), None);
    assert_eq!(c.len(), 1);
    assert!(!c.is_empty());
    assert_eq!(
        c.iter().collect::<Vec<_>>(),
        vec![("b", &["2".to_owned()][..])]
    );
}

#[test]
fn from_iter_repeated_key_replaces() {
    let c: Carrier = [("a", "1"), ("b", "2"), ("a", "3")].into_iter().collect();
    assert_eq!(json(&c), r#"{"a": "3", "b": "2"}"#);
}

#[test]
fn injector_set_replaces_and_extractor_reads_all_lines() {
    let mut c = Carrier::new();
    c.append("baggage", "a=1");
    c.append("baggage", "b=2");
    assert_eq!(Extractor::get_all(&c, "baggage"), Some(vec!["a=1", "b=2"]));
    Injector::set(&mut c, "baggage", "c=3".to_owned());
    Injector::set(&mut c, "traceparent", TP.to_owned());
    assert_eq!(Extractor::get_all(&c, "baggage"), Some(vec!["c=3"]));
    assert_eq!(Extractor::keys(&c), vec!["baggage", "traceparent"]);
    assert_eq!(Extractor::get(&c, "BAGGAGE"), None);
}

// ------------------------------------------------------------------------------------------
// Decoding: accepted shapes
// ------------------------------------------------------------------------------------------

#[test]
fn decode_empty_object() {
    assert!(parse("{}").unwrap().is_empty());
    assert!(parse(" { \t\r\n} \n").unwrap().is_empty());
}

#[test]
fn decode_whitespace_everywhere() {
    let c = parse(" \t\r\n{ \"a\" \n: \"1\" , \"b\" : [ \"x\" , \"y\" ] }\n ").unwrap();
    assert_eq!(json(&c), r#"{"a": "1", "b": ["x", "y"]}"#);
}

#[test]
fn decode_escapes() {
    let c = parse(r#"{"\u0074raceparent": "\"\\\/\b\f\n\r\t\u00E9\u00e9\ud83d\ude00"}"#).unwrap();
    assert_eq!(
        c.get("traceparent"),
        Some("\"\\/\u{8}\u{c}\n\r\t\u{e9}\u{e9}\u{1F600}")
    );
}

#[test]
fn decode_raw_non_ascii_and_del() {
    let c = parse("{\"k\u{e9}\": \"\u{1F600}\u{7f}\"}").unwrap();
    assert_eq!(c.get("k\u{e9}"), Some("\u{1F600}\u{7f}"));
}

#[test]
fn decode_ignores_numbers_bools_null_objects() {
    let c = parse(
        r#"{"n": -1.5e+10, "z": 0, "t": true, "f": false, "u": null, "o": {"a": ["b"]}, "k": "v"}"#,
    )
    .unwrap();
    assert_eq!(json(&c), r#"{"k": "v"}"#);
}

#[test]
fn decode_ignores_array_with_a_non_string() {
    let c = parse(r#"{"a": ["x", 1], "b": [null], "c": [["x"]], "d": ["y"]}"#).unwrap();
    assert_eq!(json(&c), r#"{"d": "y"}"#);
}

#[test]
fn decode_big_integer_in_ignored_key() {
    let c = parse(&format!(
        r#"{{"x": 123456789012345678901234567890, "traceparent": "{TP}"}}"#
    ))
    .unwrap();
    assert_eq!(c.len(), 1);
    assert_eq!(c.get("traceparent"), Some(TP));
}

#[test]
fn decode_empty_array_is_absent_key() {
    let c = parse(r#"{"baggage": [], "a": "1"}"#).unwrap();
    assert_eq!(c.get_all("baggage"), None);
    assert_eq!(json(&c), r#"{"a": "1"}"#);
}

#[test]
fn decode_single_element_array_is_one_line() {
    let c = parse(r#"{"baggage": ["a=1"]}"#).unwrap();
    assert_eq!(json(&c), r#"{"baggage": "a=1"}"#);
}

#[test]
fn decode_duplicate_key_last_wins_at_first_position() {
    let c = parse(r#"{"a": "1", "b": "2", "a": "3"}"#).unwrap();
    assert_eq!(json(&c), r#"{"a": "3", "b": "2"}"#);
}

#[test]
fn decode_duplicate_key_with_ignored_last_value_drops_key() {
    let c = parse(r#"{"a": "1", "b": "2", "a": 5}"#).unwrap();
    assert_eq!(json(&c), r#"{"b": "2"}"#);
}

#[test]
fn decode_duplicate_key_ignored_then_string_keeps_first_position() {
    let c = parse(r#"{"a": null, "b": "2", "a": "3"}"#).unwrap();
    assert_eq!(json(&c), r#"{"a": "3", "b": "2"}"#);
}

#[test]
fn decode_many_duplicate_keys_use_index() {
    let mut s = String::from("{");
    for i in 0..100 {
        s.push_str(&format!("\"k{i}\": \"{i}\", "));
    }
    s.push_str("\"k3\": \"last\", \"k99\": [\"x\", \"y\"], \"k50\": 1}");
    let c = parse(&s).unwrap();
    assert_eq!(c.len(), 99);
    assert_eq!(c.iter().nth(3).unwrap().0, "k3");
    assert_eq!(c.get("k3"), Some("last"));
    assert_eq!(c.get_all("k99").unwrap().len(), 2);
    assert_eq!(c.get("k50"), None);
}

// ------------------------------------------------------------------------------------------
// Decoding: rejections
// ------------------------------------------------------------------------------------------

fn nested_arrays(levels_inside: usize) -> String {
    format!(
        r#"{{"x": {}{}, "traceparent": "{TP}"}}"#,
        "[".repeat(levels_inside),
        "]".repeat(levels_inside)
    )
}

#[test]
fn depth_32_accepted() {
    // Top-level object = level 1, 31 arrays = levels 2..=32.
    let c = parse(&nested_arrays(31)).unwrap();
    assert_eq!(c.get("traceparent"), Some(TP));
}

#[test]
fn depth_33_rejected() {
    assert_eq!(
        parse(&nested_arrays(32)),
        Err(CarrierError::TooDeep { limit: 32 })
    );
}

#[test]
fn depth_counts_objects_too() {
    let ok = format!(r#"{{"x": {}1{}}}"#, "{\"a\": ".repeat(31), "}".repeat(31));
    assert!(parse(&ok).is_ok());
    let deep = format!(r#"{{"x": {}1{}}}"#, "{\"a\": ".repeat(32), "}".repeat(32));
    assert!(parse(&deep).unwrap_err().is_too_deep());
}

#[test]
fn depth_inside_string_array_element() {
    // ["s", [[...]]]: the array is level 2, its nested arrays levels 3 and up.
    let ok = format!(r#"{{"x": ["s", {}{}]}}"#, "[".repeat(30), "]".repeat(30));
    assert!(parse(&ok).unwrap().is_empty());
    let deep = format!(r#"{{"x": ["s", {}{}]}}"#, "[".repeat(31), "]".repeat(31));
    assert!(parse(&deep).unwrap_err().is_too_deep());
}

#[test]
fn depth_of_non_object_top_level_is_checked() {
    let deep = "[".repeat(20_000);
    assert!(parse(&deep).unwrap_err().is_too_deep());
}

#[test]
fn depth_limit_is_configurable() {
    let limits = Limits::default().with_carrier_depth(2);
    assert!(Carrier::from_json_bytes_with_limits(br#"{"a": ["x"]}"#, &limits).is_ok());
    assert_eq!(
        Carrier::from_json_bytes_with_limits(br#"{"a": [["x"]]}"#, &limits),
        Err(CarrierError::TooDeep { limit: 2 })
    );
    let limits = Limits::default().with_carrier_depth(1);
    assert!(Carrier::from_json_bytes_with_limits(br#"{"a": "x"}"#, &limits).is_ok());
    assert!(
        Carrier::from_json_bytes_with_limits(br#"{"a": []}"#, &limits)
            .unwrap_err()
            .is_too_deep()
    );
}

fn padded_to(len: usize) -> Vec<u8> {
    let mut v = format!(r#"{{"traceparent": "{TP}"}}"#).into_bytes();
    v.resize(len, b' ');
    v
}

#[test]
fn size_exactly_at_limit_accepted() {
    let bytes = padded_to(64 * 1024);
    assert_eq!(bytes.len(), Limits::default().carrier_bytes);
    assert_eq!(
        Carrier::from_json_bytes(&bytes).unwrap().get("traceparent"),
        Some(TP)
    );
}

#[test]
fn size_one_over_limit_rejected() {
    let bytes = padded_to(64 * 1024 + 1);
    assert_eq!(
        Carrier::from_json_bytes(&bytes),
        Err(CarrierError::TooLarge {
            len: 65537,
            limit: 65536
        })
    );
}

#[test]
fn size_limit_is_configurable_and_checked_before_parsing() {
    let limits = Limits::default().with_carrier_bytes(4);
    assert!(Carrier::from_json_bytes_with_limits(b"{ }", &limits).is_ok());
    // Not UTF-8 and too large: the size wins.
    assert!(
        Carrier::from_json_bytes_with_limits(b"\xff\xff\xff\xff\xff", &limits)
            .unwrap_err()
            .is_too_large()
    );
}

#[test]
fn nan_and_infinity_rejected() {
    for s in [
        r#"{"traceparent": NaN}"#,
        r#"{"x": Infinity, "a": "b"}"#,
        r#"{"x": -Infinity}"#,
        r#"{"x": [NaN]}"#,
    ] {
        assert!(is_invalid(parse(s)), "{s}");
    }
}

#[test]
fn lone_high_surrogate_rejected() {
    assert!(is_invalid(parse(r#"{"baggage": "k=\ud800,b=2"}"#)));
}

#[test]
fn lone_low_surrogate_rejected() {
    assert!(is_invalid(parse(r#"{"baggage": "\udc00"}"#)));
}

#[test]
fn high_surrogate_followed_by_non_low_rejected() {
    assert!(is_invalid(parse(r#"{"k": "\ud800\u0041"}"#)));
    assert!(is_invalid(parse(r#"{"k": "\ud800\ud800"}"#)));
    assert!(is_invalid(parse(r#"{"k": "\ud800\n"}"#)));
}

#[test]
fn lone_surrogate_in_ignored_value_rejected() {
    assert!(is_invalid(parse(r#"{"x": {"\ud800": 1}, "a": "b"}"#)));
}

#[test]
fn trailing_garbage_rejected() {
    assert!(is_invalid(parse(&format!(
        r#"{{"traceparent": "{TP}"}} x"#
    ))));
    assert!(is_invalid(parse("{}{}")));
    assert!(is_invalid(parse("{},")));
}

#[test]
fn top_level_not_an_object_rejected() {
    for s in [
        "null",
        "true",
        "false",
        "1",
        "\"x\"",
        "[]",
        "[{\"a\": \"b\"}]",
        " [1] ",
    ] {
        assert_eq!(parse(s), Err(CarrierError::NotAnObject), "{s}");
    }
}

#[test]
fn not_json_rejected() {
    for s in [
        "",
        "  \n",
        "{",
        "}",
        "{'a': 'b'}",
        r#"{"a"}"#,
        r#"{"a": }"#,
        r#"{"a": "b",}"#,
        r#"{"a": ["b",]}"#,
        r#"{"a" "b"}"#,
        r#"{"a": "b" "c": "d"}"#,
        r#"{a: "b"}"#,
        r#"{"a": "b"]"#,
        r#"{"a": ["b"}"#,
        r#"{"a": tru}"#,
        r#"{"a": True}"#,
        r#"{"a": "\x41"}"#,
        r#"{"a": "\u12"}"#,
        r#"{"a": "\u12G4"}"#,
        r#"{"a": "unterminated}"#,
        "{\"a\": \"tab\tinside\"}",
        "{\"a\": \"nul\u{0}inside\"}",
        "\u{c}{}",
        "{\"a\": \"b\"}\u{0}",
    ] {
        assert!(is_invalid(parse(s)), "{s:?}");
    }
}

#[test]
fn bad_numbers_rejected() {
    for s in [
        "01", "-01", "00", "1.", ".5", "1e", "1e+", "+1", "-", "0x10", "1.e5", "--1", "1E",
    ] {
        assert!(is_invalid(parse(&format!(r#"{{"x": {s}}}"#))), "{s}");
    }
}

#[test]
fn good_numbers_accepted() {
    for s in [
        "0", "-0", "10", "1.5", "-0.0", "1e5", "1E+5", "1e-05", "2.5E10", "1e400",
    ] {
        assert!(
            parse(&format!(r#"{{"x": {s}}}"#)).unwrap().is_empty(),
            "{s}"
        );
    }
}

#[test]
fn invalid_utf8_rejected() {
    assert_eq!(
        Carrier::from_json_bytes(b"\xff"),
        Err(CarrierError::NotUtf8 { offset: 0 })
    );
    // Overlong encoding and a UTF-8-encoded surrogate (CESU).
    assert_eq!(
        Carrier::from_json_bytes(b"{\"baggage\": \"k=\xc0\xaf\"}"),
        Err(CarrierError::NotUtf8 { offset: 15 })
    );
    assert!(
        Carrier::from_json_bytes(b"{\"baggage\": \"k=\xed\xa0\x80\"}")
            .unwrap_err()
            .is_not_utf8()
    );
}

#[test]
fn utf16_rejected() {
    let utf16: Vec<u8> = "\u{feff}{\"a\": \"b\"}"
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    assert!(Carrier::from_json_bytes(&utf16).is_err());
}

#[test]
fn utf8_bom_rejected() {
    // Python's deserialize_context decodes as UTF-8, then json.loads rejects the BOM.
    assert!(is_invalid(Carrier::from_json_bytes(
        b"\xef\xbb\xbf{\"a\": \"b\"}"
    )));
}

#[test]
fn errors_have_clear_messages() {
    assert_eq!(
        CarrierError::TooLarge { len: 10, limit: 5 }.to_string(),
        "JSON carrier of 10 bytes exceeds the limit of 5 bytes"
    );
    let e = parse(r#"{"a": NaN}"#).unwrap_err();
    assert!(e.to_string().contains("NaN"), "{e}");
    assert!(e.is_invalid_json());
    // Python's json.dumps writes -Infinity for float("-inf"): named as such, not as a bad digit.
    let e = parse(r#"{"a": -Infinity}"#).unwrap_err();
    assert!(e.to_string().contains("Infinity are not JSON"), "{e}");
    assert!(parse("1").unwrap_err().is_not_an_object());
}

#[test]
fn many_distinct_keys_at_size_limit() {
    let mut s = String::from("{");
    let mut i = 0;
    while s.len() < 64 * 1024 - 32 {
        s.push_str(&format!("\"{i:x}\":\"\","));
        i += 1;
    }
    s.push_str("\"end\":\"\"}");
    let start = std::time::Instant::now();
    let c = parse(&s).unwrap();
    assert_eq!(c.len(), i + 1);
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn one_key_repeated_to_size_limit() {
    let mut s = String::from("{");
    while s.len() < 64 * 1024 - 32 {
        s.push_str("\"k\":\"v\",");
    }
    s.push_str("\"k\":[\"a\",\"b\"]}");
    let c = parse(&s).unwrap();
    assert_eq!(c.len(), 1);
    assert_eq!(c.get_all("k").unwrap(), ["a", "b"]);
}

// ------------------------------------------------------------------------------------------
// Robustness
// ------------------------------------------------------------------------------------------

/// Inputs the mutation loop starts from.
const SEEDS: &[&str] = &[
    r#"{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "a=b"}"#,
    r#"{"baggage": ["k=v", "k2=\u00e9\ud83d\ude00"], "x": [1, {"y": null}], "n": -3.5, "m": 1e2}"#,
    r#"{"a": [[[[["x"]]]]], "b": {"c": {"d": [true, false, null]}}}"#,
    r#"{"\"\\\/\b\f\n\r\t": "\u0000"}"#,
];

/// A small deterministic PRNG (xorshift64*), so failures reproduce.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const INTERESTING: &[u8] =
    b"{}[]\",:\\u0123456789abcdefABCDEF-+.eEtrufalsnNI \t\r\n\x00\x1f\x7f\xc3\xa9\xed\xa0\x80\xff";

/// What serde_json thinks, for comparison: `None` when it rejects, or when it is not an object.
fn serde_view(bytes: &[u8]) -> Option<Vec<(String, Vec<String>)>> {
    let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    let map = value.as_object()?;
    let mut out = Vec::new();
    for (k, v) in map {
        match v {
            serde_json::Value::String(s) => out.push((k.clone(), vec![s.clone()])),
            serde_json::Value::Array(items) if !items.is_empty() => {
                let lines: Option<Vec<String>> = items
                    .iter()
                    .map(|i| i.as_str().map(str::to_owned))
                    .collect();
                if let Some(lines) = lines {
                    out.push((k.clone(), lines));
                }
            }
            _ => {}
        }
    }
    out.sort();
    Some(out)
}

fn our_view(c: &Carrier) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<_> = c.iter().map(|(k, l)| (k.to_owned(), l.to_vec())).collect();
    out.sort();
    out
}

/// serde_json rejects numbers out of f64 range, which Python (and lens) accept.
fn out_of_f64_range(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(bytes)
        .is_err_and(|e| e.to_string().contains("number out of range"))
}

#[test]
fn mutated_inputs_never_panic_and_agree_with_serde_json() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut agreed = 0;
    let mut accepted = 0;
    for round in 0..6000 {
        let mut bytes = SEEDS[round % SEEDS.len()].as_bytes().to_vec();
        for _ in 0..=rng.below(4) {
            let at = rng.below(bytes.len() + 1);
            match rng.below(3) {
                0 if at < bytes.len() => {
                    bytes.remove(at);
                }
                1 if at < bytes.len() => bytes[at] = INTERESTING[rng.below(INTERESTING.len())],
                _ => bytes.insert(at, INTERESTING[rng.below(INTERESTING.len())]),
            }
        }
        let ours = Carrier::from_json_bytes(&bytes);
        if let Ok(c) = &ours {
            accepted += 1;
            // Whatever is accepted re-encodes and decodes to the same carrier.
            assert_eq!(&Carrier::from_json_bytes(&c.to_json_bytes()).unwrap(), c);
        }
        if out_of_f64_range(&bytes) {
            continue;
        }
        let theirs = serde_view(&bytes);
        assert_eq!(
            ours.as_ref().ok().map(our_view),
            theirs,
            "input {:?}",
            String::from_utf8_lossy(&bytes)
        );
        agreed += 1;
    }
    assert!(agreed > 3000, "only {agreed} inputs compared");
    assert!(accepted > 500, "only {accepted} inputs accepted");
    assert!(accepted < 5000, "{accepted} inputs accepted");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = Carrier::from_json_bytes(&bytes);
    }

    #[test]
    fn arbitrary_json_like_text_never_panics(s in "[{}\\[\\]\",:\\\\u0-9a-fA-FeEnNItrulsf \t.+-]{0,64}") {
        let _ = Carrier::from_json_bytes(s.as_bytes());
    }

    #[test]
    fn any_carrier_round_trips(
        pairs in proptest::collection::vec((any::<String>(), proptest::collection::vec(any::<String>(), 1..3)), 0..6)
    ) {
        let mut c = Carrier::new();
        for (k, lines) in pairs {
            c.remove(&k);
            for line in lines {
                c.append(k.clone(), line);
            }
        }
        let bytes = c.to_json_bytes();
        prop_assert!(bytes.is_ascii());
        prop_assert_eq!(Carrier::from_json_bytes(&bytes).unwrap(), c);
    }
}

#[test]
fn a_container_closed_by_the_other_bracket_is_invalid_json() {
    // Inside values lens skips (a key it does not read, an array element that is no string).
    let array_closed_by_brace = r#"{"x": {"a": [1}}}"#;
    let object_closed_by_bracket = r#"{"x": [{"a": 1]]}"#;
    let e = parse(array_closed_by_brace).unwrap_err();
    assert!(e.is_invalid_json(), "{e}");
    assert!(e.to_string().contains("',' or ']' in an array"), "{e}");
    let e = parse(object_closed_by_bracket).unwrap_err();
    assert!(e.is_invalid_json(), "{e}");
    assert!(e.to_string().contains("',' or '}' in an object"), "{e}");
    // Extract rejects the whole carrier, the traceparent beside it included.
    for bad in [array_closed_by_brace, object_closed_by_bracket] {
        let bytes = bad.replacen(
            '{',
            r#"{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "#,
            1,
        );
        let extracted = lens_core::W3cPropagator::new()
            .extract_json(&opentelemetry::Context::new(), bytes.as_bytes());
        assert!(extracted.is_err(), "{bytes}");
    }
}
