//! `lens inspect --as KIND`: kinds are case-insensitive, NCCL included. (Reported: `--as NCCL`
//! was refused although `nccl` is a kind.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cli_support;

use cli_support::lens;

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[test]
fn as_nccl_in_capitals_reads_nccl_bytes() {
    let json = format!(r#"{{"traceparent": "{TRACEPARENT}"}}"#);
    for kind in ["NCCL", "Nccl", "nccl"] {
        let run = lens(&["inspect", "--as", kind, &json]);
        assert_eq!(run.code, Some(0), "{kind}: {run:?}");
        assert!(run.stdout.starts_with("nccl bytes: "), "{}", run.stdout);
        let run = lens(&["inspect", &format!("--as={kind}"), &json]);
        assert_eq!(run.code, Some(0), "{kind}: {run:?}");
    }
}

#[test]
fn every_kind_is_case_insensitive() {
    for (kind, value, shown) in [
        ("TRACEPARENT", TRACEPARENT, "traceparent: "),
        ("TraceState", "rojo=00f067aa0ba902b7", "tracestate: "),
        ("BAGGAGE", "rojo=00f067aa0ba902b7", "baggage: "),
    ] {
        let run = lens(&["inspect", "--as", kind, value]);
        assert_eq!(run.code, Some(0), "{kind}: {run:?}");
        assert!(run.stdout.starts_with(shown), "{kind}: {}", run.stdout);
    }
}
