//! Protocol tests of `lens w3c-service`, written from the W3C Trace Context (Level 2) and W3C
//! Baggage specifications: the test drives the service as the official harness does (a POST
//! whose JSON body lists the calls to make) and checks the headers the calls carry.
//!
//! Requests are written as raw HTTP/1.1 bytes, so that header names, casing, repeats and
//! whitespace reach the service exactly as written.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::http::HeaderMap;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The service, killed when dropped.
struct Service {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_service() -> Service {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lens"))
        .args(["w3c-service", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .parse()
        .unwrap();
    Service { child, addr }
}

/// The harness's callback endpoint: records the headers of every call it receives.
#[derive(Clone, Default)]
struct Callback {
    calls: Arc<Mutex<Vec<(HeaderMap, String)>>>,
}

impl Callback {
    async fn start(&self) -> SocketAddr {
        let calls = self.calls.clone();
        let app = Router::new().fallback(move |headers: HeaderMap, body: String| {
            let calls = calls.clone();
            async move {
                calls.lock().unwrap().push((headers, body));
                "{}"
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        addr
    }

    fn take(&self) -> Vec<(HeaderMap, String)> {
        std::mem::take(&mut *self.calls.lock().unwrap())
    }
}

/// One test setup: the service, a callback, and a way to send raw requests.
struct Harness {
    service: Service,
    callback: Callback,
    callback_addr: SocketAddr,
}

impl Harness {
    async fn new() -> Self {
        let callback = Callback::default();
        let callback_addr = callback.start().await;
        Harness {
            service: start_service(),
            callback,
            callback_addr,
        }
    }

    /// Sends the header lines (`"name: value"`, written as given) with `calls` calls back to the
    /// callback; returns the headers of each call the callback received, in order.
    async fn send(&self, header_lines: &[&str], calls: usize) -> Vec<HeaderMap> {
        self.exchange(header_lines, calls).await.1
    }

    /// [`Harness::send`], also returning the service's whole answer (status line, headers, body).
    async fn exchange(&self, header_lines: &[&str], calls: usize) -> (String, Vec<HeaderMap>) {
        let url = format!("http://{}/test", self.callback_addr);
        let list: Vec<String> = (0..calls)
            .map(|i| format!(r#"{{"url": "{url}", "arguments": [{i}]}}"#))
            .collect();
        let body = format!("[{}]", list.join(", "));
        let mut request = format!("POST /test HTTP/1.1\r\nHost: {}\r\n", self.service.addr);
        for line in header_lines {
            request.push_str(line);
            request.push_str("\r\n");
        }
        request.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ));
        let mut stream = tokio::net::TcpStream::connect(self.service.addr)
            .await
            .unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await.unwrap();
        let response = String::from_utf8_lossy(&response).into_owned();
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        let received = self.callback.take();
        assert_eq!(
            received.len(),
            calls,
            "every call completed before the answer"
        );
        for (i, (_, body)) in received.iter().enumerate() {
            assert_eq!(body, &format!("[{i}]"), "arguments sent in order as JSON");
        }
        (response, received.into_iter().map(|(h, _)| h).collect())
    }

    async fn send_one(&self, header_lines: &[&str]) -> HeaderMap {
        self.send(header_lines, 1).await.remove(0)
    }
}

const TRACE_ID: &str = "12345678901234567890123456789012";
const PARENT_ID: &str = "1234567890123456";
const TP: &str = "00-12345678901234567890123456789012-1234567890123456-01";

fn lines<'a>(headers: &'a HeaderMap, name: &str) -> Vec<&'a str> {
    headers
        .get_all(name)
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect()
}

/// The one traceparent of a call: (version, trace-id, parent-id, flags), checked for format.
fn traceparent(headers: &HeaderMap) -> (String, String, String, String) {
    let tp = lines(headers, "traceparent");
    assert_eq!(tp.len(), 1, "exactly one traceparent: {tp:?}");
    let parts: Vec<&str> = tp[0].split('-').collect();
    assert_eq!(parts.len(), 4, "{}", tp[0]);
    let hex = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    assert!(hex(parts[0], 2) && hex(parts[1], 32) && hex(parts[2], 16) && hex(parts[3], 2));
    assert_eq!(parts[0], "00");
    assert_ne!(parts[1], "0".repeat(32));
    assert_ne!(parts[2], "0".repeat(16));
    (
        parts[0].to_owned(),
        parts[1].to_owned(),
        parts[2].to_owned(),
        parts[3].to_owned(),
    )
}

/// The tracestate members of a call (all lines, split at commas, trimmed).
fn tracestate(headers: &HeaderMap) -> Vec<String> {
    lines(headers, "tracestate")
        .iter()
        .flat_map(|l| l.split(','))
        .map(|m| m.trim().to_owned())
        .filter(|m| !m.is_empty())
        .collect()
}

fn continued(headers: &HeaderMap) -> bool {
    let (_, trace_id, parent_id, _) = traceparent(headers);
    if trace_id == TRACE_ID {
        assert_ne!(parent_id, PARENT_ID, "a new parent-id on every call");
        true
    } else {
        false
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_valid_traceparent_is_continued_with_a_new_parent_id_per_call() {
    let h = Harness::new().await;
    let calls = h.send(&[&format!("traceparent: {TP}")], 3).await;
    let mut parents = Vec::new();
    for call in &calls {
        assert!(continued(call));
        parents.push(traceparent(call).2);
    }
    parents.sort();
    parents.dedup();
    assert_eq!(parents.len(), 3, "each call from a new client span");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_traceparent_starts_a_new_trace_and_drops_tracestate() {
    let h = Harness::new().await;
    let call = h.send_one(&[]).await;
    assert!(!continued(&call));
    let call = h.send_one(&["tracestate: foo=1"]).await;
    assert!(!continued(&call));
    assert!(tracestate(&call).is_empty());
    // A new trace in one request keeps one trace id across its calls.
    let calls = h.send(&[], 2).await;
    assert_eq!(traceparent(&calls[0]).1, traceparent(&calls[1]).1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_names_are_case_insensitive() {
    let h = Harness::new().await;
    for name in ["traceparent", "TraceParent", "TRACEPARENT", "tRaCePaReNt"] {
        let call = h
            .send_one(&[&format!("{name}: {TP}"), "TraceState: foo=1"])
            .await;
        assert!(continued(&call), "{name}");
        assert_eq!(tracestate(&call), ["foo=1"], "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn look_alike_header_names_are_not_traceparent() {
    let h = Harness::new().await;
    for name in [
        "trace-parent",
        "trace_parent",
        "traceparent1",
        "xtraceparent",
        "traceparents",
    ] {
        let call = h
            .send_one(&[&format!("{name}: {TP}"), "tracestate: foo=1"])
            .await;
        assert!(!continued(&call), "{name}");
        assert!(
            tracestate(&call).is_empty(),
            "{name}: tracestate needs a valid traceparent"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_traceparent_lines() {
    let h = Harness::new().await;
    // The same value twice counts as one.
    let call = h
        .send_one(&[&format!("traceparent: {TP}"), &format!("Traceparent: {TP}")])
        .await;
    assert!(continued(&call));
    // Two different values: invalid, a new trace, tracestate dropped.
    let other = "00-abcdefabcdefabcdefabcdefabcdefab-1234567890123456-01";
    let call = h
        .send_one(&[
            &format!("traceparent: {TP}"),
            &format!("traceparent: {other}"),
            "tracestate: foo=1",
        ])
        .await;
    let (_, trace_id, _, _) = traceparent(&call);
    assert_ne!(trace_id, TRACE_ID);
    assert_ne!(trace_id, "abcdefabcdefabcdefabcdefabcdefab");
    assert!(tracestate(&call).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spaces_and_tabs_around_values_are_ignored() {
    let h = Harness::new().await;
    let call = h
        .send_one(&[
            &format!("traceparent: \t {TP} \t "),
            "tracestate: \t foo=1 ,\t bar=2 \t",
        ])
        .await;
    assert!(continued(&call));
    assert_eq!(tracestate(&call), ["foo=1", "bar=2"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_traceparents_start_a_new_trace() {
    let h = Harness::new().await;
    let invalid = [
        "00-12345678901234567890123456789012-1234567890123456-01-", // trailing dash (v00)
        "00-12345678901234567890123456789012-1234567890123456-1",
        "00-12345678901234567890123456789012-1234567890123456-011",
        "00-1234567890123456789012345678901-1234567890123456-01",
        "00-123456789012345678901234567890123-1234567890123456-01",
        "00-12345678901234567890123456789012-123456789012345-01",
        "00-ABCDEF78901234567890123456789012-1234567890123456-01", // uppercase
        "00-00000000000000000000000000000000-1234567890123456-01",
        "00-12345678901234567890123456789012-0000000000000000-01",
        "ff-12345678901234567890123456789012-1234567890123456-01",
        "0-12345678901234567890123456789012-1234567890123456-01",
        "00-12345678901234567890123456789012-1234567890123456-.1",
    ];
    for tp in invalid {
        let call = h
            .send_one(&[&format!("traceparent: {tp}"), "tracestate: foo=1"])
            .await;
        assert!(!continued(&call), "{tp} must be rejected");
        assert!(
            tracestate(&call).is_empty(),
            "{tp}: tracestate dropped with it"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_higher_version_is_read_with_the_version_00_layout_and_sent_as_00() {
    let h = Harness::new().await;
    for tp in [
        "cc-12345678901234567890123456789012-1234567890123456-01",
        "cc-12345678901234567890123456789012-1234567890123456-01-what-the-future-will-be-like",
    ] {
        let call = h.send_one(&[&format!("traceparent: {tp}")]).await;
        assert!(continued(&call), "{tp}");
        assert_eq!(traceparent(&call).0, "00");
    }
    let call = h
        .send_one(&["traceparent: cc-12345678901234567890123456789012-1234567890123456-01.what"])
        .await;
    assert!(!continued(&call));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tracestate_over_several_lines_is_one_list() {
    let h = Harness::new().await;
    let call = h
        .send_one(&[
            &format!("traceparent: {TP}"),
            "tracestate: foo=1,bar=2",
            "TraceState: baz=3",
            "tracestate: ",
            "tracestate: qux=4",
        ])
        .await;
    assert_eq!(tracestate(&call), ["foo=1", "bar=2", "baz=3", "qux=4"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_members_are_kept_thirty_three_drop_the_tracestate() {
    let h = Harness::new().await;
    let members = |n: usize| (0..n).map(|i| format!("k{i}=v{i}")).collect::<Vec<_>>();
    let call = h
        .send_one(&[
            &format!("traceparent: {TP}"),
            &format!("tracestate: {}", members(32).join(",")),
        ])
        .await;
    assert_eq!(tracestate(&call), members(32));
    // 33 members over two lines: the whole tracestate goes, the traceparent stays.
    let m = members(33);
    let call = h
        .send_one(&[
            &format!("traceparent: {TP}"),
            &format!("tracestate: {}", m[..20].join(",")),
            &format!("tracestate: {}", m[20..].join(",")),
        ])
        .await;
    assert!(continued(&call));
    assert!(tracestate(&call).is_empty());
    assert!(
        lines(&call, "tracestate").is_empty(),
        "no empty tracestate header"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tracestate_key_grammar() {
    let h = Harness::new().await;
    let max_key = format!("a{}", "b".repeat(255));
    let valid = [
        "foo=1".to_owned(),
        "1abc=1".to_owned(),
        "a_b-c*d/e=1".to_owned(),
        "t@1v=1".to_owned(),
        "foo@@bar=1".to_owned(),
        "tenant@abcdefghijklmn=1".to_owned(),
        format!("{max_key}=1"),
        "foo= value with spaces".to_owned(),
    ];
    for member in &valid {
        let call = h
            .send_one(&[
                &format!("traceparent: {TP}"),
                &format!("tracestate: {member},z=9"),
            ])
            .await;
        assert_eq!(
            tracestate(&call),
            [member.as_str(), "z=9"],
            "{member} is valid"
        );
    }
    let invalid = [
        "Foo=1".to_owned(),
        "_foo=1".to_owned(),
        "foo bar=1".to_owned(),
        "foo.bar=1".to_owned(),
        "@foo=1".to_owned(),
        format!("a{}=1", "b".repeat(256)),
        "foo=1=2".to_owned(),
        "foo=a,b".to_owned(),
        "foo".to_owned(),
        "=1".to_owned(),
    ];
    for member in &invalid {
        let call = h
            .send_one(&[
                &format!("traceparent: {TP}"),
                &format!("tracestate: z=9,{member}"),
            ])
            .await;
        assert!(continued(&call), "{member}: traceparent kept");
        assert!(
            tracestate(&call).is_empty(),
            "{member} makes the tracestate invalid"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_tracestate_key_keeps_the_first_member() {
    let h = Harness::new().await;
    let call = h
        .send_one(&[
            &format!("traceparent: {TP}"),
            "tracestate: foo=1,bar=2,foo=3",
        ])
        .await;
    assert_eq!(tracestate(&call), ["foo=1", "bar=2"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trace_flags_sampled_and_random() {
    let h = Harness::new().await;
    for (incoming, outgoing) in [
        ("00", "00"),
        ("01", "01"),
        ("02", "02"),
        ("03", "03"),
        ("ff", "03"),
        ("fe", "02"),
    ] {
        let call = h
            .send_one(&[&format!(
                "traceparent: 00-{TRACE_ID}-{PARENT_ID}-{incoming}"
            )])
            .await;
        assert!(continued(&call), "{incoming}");
        assert_eq!(traceparent(&call).3, outgoing, "flags {incoming}");
    }
    // A trace the service starts has a random trace id: the random flag is set.
    let call = h.send_one(&[]).await;
    let flags = u8::from_str_radix(&traceparent(&call).3, 16).unwrap();
    assert_eq!(flags & 0x02, 0x02);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn baggage_is_carried_to_every_call() {
    let h = Harness::new().await;
    let calls = h
        .send(
            &[
                &format!("traceparent: {TP}"),
                "baggage: user=alice%20smith;prop1;prop2=x , tier = gold",
                "Baggage: expr=a=b, plus=1+1, bad=\"q\", enc=%E2%9C%93",
            ],
            2,
        )
        .await;
    for call in &calls {
        assert_eq!(
            lines(call, "baggage"),
            ["user=alice%20smith;prop1;prop2=x,tier=gold,expr=a%3Db,plus=1%2B1,enc=%E2%9C%93"]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn baggage_limits_keep_the_leading_members() {
    let h = Harness::new().await;
    let members: Vec<String> = (0..200).map(|i| format!("k{i}=v")).collect();
    let call = h
        .send_one(&[&format!("baggage: {}", members.join(","))])
        .await;
    let sent = lines(&call, "baggage");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0], members[..180].join(","));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_answer_is_a_json_array_sent_as_application_json() {
    let h = Harness::new().await;
    // The harness reads the answer with `response.json(content_type = 'application/json')`.
    let (response, _) = h.exchange(&[&format!("traceparent: {TP}")], 2).await;
    let (head, body) = response
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no end of headers: {response}"));
    let content_types: Vec<&str> = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(name, _)| name.eq_ignore_ascii_case("content-type"))
        .map(|(_, value)| value.trim())
        .collect();
    assert_eq!(content_types, ["application/json"], "{head}");
    // One entry per call: the callback's status.
    let answer: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(answer, serde_json::json!([200, 200]));
}
