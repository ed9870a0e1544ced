//! `lens inspect -`: values and header lines from standard input, one per line. (Reported:
//! `lens inspect -` inspected the string "-".)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cli_support;

use cli_support::lens_with_stdin;

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[test]
fn a_value_on_stdin_is_inspected() {
    let run = lens_with_stdin(&["inspect", "-"], &format!("{TRACEPARENT}\n"));
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stdout
            .starts_with(&format!("traceparent: \"{TRACEPARENT}\"")),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("\"-\""), "{}", run.stdout);
}

#[test]
fn a_request_header_dump_is_read_header_by_header() {
    let dump = format!(
        "POST /v1/train HTTP/1.1\r\n\
         Host: gateway:8080\r\n\
         Content-Type: application/json\r\n\
         traceparent: {TRACEPARENT}\r\n\
         tracestate: rojo=00f067aa0ba902b7\r\n\
         Baggage: userId=alice\r\n\
         TraceState: congo=t61rcWkgMzE\r\n\
         baggage: job=a%20b\r\n\
         User-Agent: curl/8.5\r\n\
         \r\n"
    );
    let run = lens_with_stdin(&["inspect", "-"], &dump);
    assert_eq!(run.code, Some(0), "{run:?}");
    let out = &run.stdout;
    // One block per header, in order of first appearance; lines of a header are one list.
    let tp = out.find("traceparent: ").unwrap();
    let ts = out.find("tracestate: ").unwrap();
    let bg = out.find("baggage: ").unwrap();
    assert!(tp < ts && ts < bg, "{out}");
    assert!(out.contains(&format!("sent as    {TRACEPARENT}")), "{out}");
    assert!(
        out.contains("sent as    rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"),
        "{out}"
    );
    assert!(out.contains("sent as    userId=alice,job=a%20b"), "{out}");
    // The request line and the other headers are skipped, with a note on stderr.
    assert!(
        !out.contains("gateway:8080") && !out.contains("curl"),
        "{out}"
    );
    assert!(run.stderr.contains("skipped 4 lines"), "{}", run.stderr);
}

#[test]
fn an_invalid_header_in_a_dump_exits_1() {
    let dump = format!("traceparent: {TRACEPARENT}\nbaggage: a b=1\n");
    let run = lens_with_stdin(&["inspect", "-"], &dump);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.stdout.contains("dropped `a b=1`"), "{}", run.stdout);
}

#[test]
fn bare_values_are_one_value_each() {
    let input = format!("{TRACEPARENT}\nuserId=alice\n\nfoo@bar=1\n");
    let run = lens_with_stdin(&["inspect", "-"], &input);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout.matches("sent as").count(), 3, "{}", run.stdout);
    assert!(
        run.stdout.contains("baggage: \"userId=alice\""),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("tracestate: \"foo@bar=1\""),
        "{}",
        run.stdout
    );
}

#[test]
fn empty_stdin_is_a_usage_error() {
    let run = lens_with_stdin(&["inspect", "-"], "\n\n");
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(run.stderr.starts_with("error: "), "{}", run.stderr);
}
