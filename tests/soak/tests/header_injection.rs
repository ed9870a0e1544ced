//! Header injection through baggage: a value holding CR, LF, `,`, `;` or `=` goes out
//! percent-encoded in one `baggage` header line (no new header, no new member), and comes back
//! as the same single entry; a key that is not an HTTP token is refused when set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use http::HeaderMap;
use lens_core::{HeaderCarrier, LensContextExt, extract_context, inject_context_from};
use opentelemetry::Context;

const HOSTILE: &str = "x\r\nx-injected: yes\r\n\r\n<body>,evil=1;prop=2 \u{0}\u{7f}\u{e9}";

#[test]
fn a_hostile_value_stays_one_encoded_member_of_one_header() {
    let cx = Context::new()
        .with_baggage_entry("note", HOSTILE)
        .unwrap()
        .with_baggage_entry("user", "alice")
        .unwrap();
    let mut headers = HeaderMap::new();
    inject_context_from(&cx, &mut HeaderCarrier(&mut headers));
    assert_eq!(headers.len(), 1, "{headers:?}");
    assert!(headers.get("x-injected").is_none());
    let lines: Vec<_> = headers.get_all("baggage").iter().collect();
    assert_eq!(lines.len(), 1);
    let value = lines[0].to_str().unwrap();
    assert!(
        value.bytes().all(|b| b.is_ascii_graphic()),
        "raw control, space or non-ASCII byte in {value:?}"
    );
    assert_eq!(value.matches(',').count(), 1, "two members: {value:?}");
    assert!(!value.contains(';'), "a property appeared: {value:?}");

    let back = extract_context(&HeaderCarrier(&headers));
    let list = back.lens_baggage();
    assert_eq!(list.len(), 2);
    assert_eq!(list.get("note").unwrap().value(), HOSTILE);
    assert_eq!(list.get("note").unwrap().properties(), "");
    assert_eq!(list.get("user").unwrap().value(), "alice");
}

#[test]
fn keys_that_are_not_tokens_are_refused() {
    for key in ["x\r\ny", "a b", "k,v", "k=v", "k;p", "", "caf\u{e9}"] {
        assert!(
            Context::new().with_baggage_entry(key, "v").is_err(),
            "key {key:?} accepted"
        );
    }
}
