//! `lens demo --json[=BOOL]`. (Reported: `--json=false` printed JSON.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod demo_support;

use demo_support::{run, stderr, stdout};

#[test]
fn json_false_prints_the_waterfall() {
    let output = run(&["--json=false"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        serde_json::from_str::<serde_json::Value>(&text).is_err(),
        "{text}"
    );
    assert!(text.starts_with("trace "), "{text}");
    assert!(text.contains("timeline"), "{text}");
}

#[test]
fn json_and_json_true_print_json() {
    for flag in ["--json", "--json=true"] {
        let output = run(&[flag]);
        assert!(output.status.success(), "{}", stderr(&output));
        let spans: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert!(!spans.as_array().unwrap().is_empty(), "{flag}");
    }
}
