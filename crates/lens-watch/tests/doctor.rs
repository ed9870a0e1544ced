//! The propagation doctor, rule by rule, each with its near misses: OTLP/JSON requests as real
//! exporters write them, through the assembler and the doctor.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use lens_watch::assemble::{Assembler, Config};
use lens_watch::decode::decode_json;
use lens_watch::diagnose::{
    Doctor, DoctorConfig, Finding, NEW_ROOT_ATTRIBUTE, NewRootCause, Severity,
};
use lens_watch::model::{SpanId, TraceId};
use serde_json::{Value as Json, json};

const A: &str = "0af7651916cd43dd8448eb211c80319c";
const B: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const C: &str = "5c0c2a8b1d3e4f5061728394a5b6c7d8";

/// A span of `trace` as OTLP/JSON; times in microseconds after 1,700,000,000 s; `parent`
/// empty for a root; attribute values as OTLP/JSON `AnyValue`s.
#[allow(clippy::too_many_arguments)]
fn span(
    trace: &str,
    id: u64,
    parent: u64,
    name: &str,
    kind: u8,
    (start, end): (u64, u64),
    flags: u32,
    attributes: &[(&str, Json)],
) -> Json {
    let t0 = 1_700_000_000_000_000_000u64;
    let mut span = json!({
        "traceId": trace,
        "spanId": format!("{id:016x}"),
        "name": name,
        "kind": kind,
        "startTimeUnixNano": (t0 + start * 1000).to_string(),
        "endTimeUnixNano": (t0 + end * 1000).to_string(),
        "flags": flags,
        "attributes": attributes.iter().map(|(k, v)| json!({"key": k, "value": v})).collect::<Vec<_>>(),
    });
    if parent != 0 {
        span["parentSpanId"] = json!(format!("{parent:016x}"));
    }
    span
}

fn s(v: &str) -> Json {
    json!({ "stringValue": v })
}

fn i(v: i64) -> Json {
    json!({ "intValue": v.to_string() })
}

fn link(mut span: Json, trace: &str, id: u64) -> Json {
    span["links"] = json!([{ "traceId": trace, "spanId": format!("{id:016x}") }]);
    span
}

/// One OTLP/JSON export request of `service`.
fn export(service: &str, spans: Vec<Json>) -> String {
    json!({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": s(service)}]},
        "scopeSpans": [{"scope": {"name": "test"}, "spans": spans}],
    }]})
    .to_string()
}

/// Every finding on the traces of these export requests, as `lens check` reads a file.
fn check(lines: &[String]) -> Vec<Finding> {
    let mut assembler = Assembler::new(Config::default());
    let now = Instant::now();
    for line in lines {
        let batch = decode_json(line.as_bytes()).unwrap();
        assert_eq!(batch.rejected, 0, "{line}");
        assembler.insert(batch.spans, now);
    }
    let mut doctor = Doctor::new(DoctorConfig::default());
    assembler
        .flush()
        .into_iter()
        .flat_map(|id| doctor.diagnose(assembler.trace(&id).unwrap(), &assembler))
        .collect()
}

fn rules(findings: &[Finding]) -> Vec<&'static str> {
    findings.iter().map(|f| f.rule.id()).collect()
}

/// What the lost-context findings say of their pairing: `"address"` where the server reports
/// the address the client called, `"request"` where only the request and time matched.
fn pairings(findings: &[Finding]) -> Vec<&'static str> {
    findings
        .iter()
        .filter(|f| f.rule.id() == "lost-context")
        .map(|f| {
            if f.message.contains(
                "paired by request and time (behind a proxy or load balancer: the addresses differ)",
            ) {
                "request"
            } else {
                "address"
            }
        })
        .collect()
}

const CLIENT: u8 = 3;
const SERVER: u8 = 2;
const INTERNAL: u8 = 1;

/// gateway: a root and a CLIENT `GET http://127.0.0.1:8080/plan` (100..900 µs).
fn gateway_calls_plan() -> String {
    export(
        "gateway",
        vec![
            span(A, 1, 0, "request", SERVER, (0, 1000), 0x301, &[]),
            span(
                A,
                2,
                1,
                "GET",
                CLIENT,
                (100, 900),
                0x101,
                &[
                    ("http.request.method", s("GET")),
                    ("url.full", s("http://127.0.0.1:8080/plan?x=1")),
                    ("server.address", s("127.0.0.1")),
                    ("server.port", i(8080)),
                ],
            ),
        ],
    )
}

/// planner: a new root SERVER `GET /plan` (from, to) with lens' cause `cause`.
fn planner_root(trace: &str, (from, to): (u64, u64), path: &str, cause: &str) -> Json {
    let mut attrs = vec![
        ("http.request.method", s("GET")),
        ("url.path", s(path)),
        ("http.route", s(path)),
        ("server.address", s("127.0.0.1")),
        ("server.port", i(8080)),
    ];
    if !cause.is_empty() {
        attrs.push((NEW_ROOT_ATTRIBUTE, s(cause)));
    }
    span(trace, 7, 0, "GET /plan", SERVER, (from, to), 0x101, &attrs)
}

#[test]
fn lost_context_names_both_traces_and_the_cause_in_either_order() {
    let server = export(
        "planner",
        vec![planner_root(B, (200, 800), "/plan", "none")],
    );
    for lines in [
        [gateway_calls_plan(), server.clone()],
        [server.clone(), gateway_calls_plan()],
    ] {
        let findings = check(&lines);
        assert_eq!(rules(&findings), ["lost-context"]);
        let f = &findings[0];
        assert_eq!(f.severity(), Severity::Error);
        assert_eq!(
            f.trace_ids,
            [TraceId::from_hex(A).unwrap(), TraceId::from_hex(B).unwrap()]
        );
        assert_eq!(
            f.span_ids,
            [SpanId(2u64.to_be_bytes()), SpanId(7u64.to_be_bytes())]
        );
        assert_eq!(f.services, ["gateway", "planner"]);
        assert!(f.message.contains("gateway -> planner"), "{}", f.message);
        assert!(
            f.message.contains("received no traceparent"),
            "{}",
            f.message
        );
        assert_eq!(f.doc(), "docs/doctor.md#lost-context");
    }
}

#[test]
fn overlapping_identical_requests_pair_by_the_tightest_fit() {
    const C: &str = "11111111111111111111111111111111";
    const D: &str = "22222222222222222222222222222222";
    let client = |trace: &str, times: (u64, u64)| {
        export(
            "gateway",
            vec![span(
                trace,
                2,
                0,
                "GET",
                CLIENT,
                times,
                0x101,
                &[
                    ("http.request.method", s("GET")),
                    ("url.full", s("http://127.0.0.1:8080/plan")),
                ],
            )],
        )
    };
    // Two GET /plan in flight together, each server 50 µs inside its own client: the first
    // server also fits in the second client (started later, within the 1 ms tolerance).
    let lines = [
        client(A, (100, 900)),
        client(C, (300, 1000)),
        export(
            "planner",
            vec![planner_root(B, (150, 850), "/plan", "none")],
        ),
        export(
            "planner",
            vec![planner_root(D, (350, 950), "/plan", "none")],
        ),
    ];
    let pairs: Vec<Vec<TraceId>> = check(&lines).into_iter().map(|f| f.trace_ids).collect();
    let id = |t: &str| TraceId::from_hex(t).unwrap();
    assert_eq!(pairs, [vec![id(A), id(B)], vec![id(C), id(D)]]);
}

#[test]
fn lost_context_names_a_rejected_traceparent_by_its_rule() {
    let server = export(
        "planner",
        vec![planner_root(
            B,
            (200, 800),
            "/plan",
            "rejected:traceparent-versions",
        )],
    );
    let findings = check(&[gateway_calls_plan(), server]);
    assert_eq!(rules(&findings), ["lost-context"]);
    assert!(
        findings[0]
            .message
            .contains("(rule traceparent-versions of docs/propagation-rules.md)")
    );
}

#[test]
fn no_lost_context_without_a_matching_new_root() {
    // The client called an uninstrumented service: no new root anywhere.
    assert!(check(&[gateway_calls_plan()]).is_empty());
    // New roots for another path, outside the client's time, for another query.
    let other_path = export(
        "planner",
        vec![planner_root(B, (200, 800), "/other", "none")],
    );
    let later = export(
        "planner",
        vec![planner_root(B, (5000, 6000), "/plan", "none")],
    );
    let mut query = planner_root(B, (200, 800), "/plan", "none");
    query["attributes"][4]["value"] = i(9090);
    query["attributes"]
        .as_array_mut()
        .unwrap()
        .push(json!({"key": "url.query", "value": s("x=2")}));
    for server in [other_path, later, export("planner", vec![query])] {
        assert_eq!(
            check(&[gateway_calls_plan(), server.clone()]),
            [],
            "{server}"
        );
    }
    // On another port, the same query: paired by request and time (a proxy between them).
    let mut port = planner_root(B, (200, 800), "/plan", "none");
    port["attributes"][4]["value"] = i(9090);
    port["attributes"]
        .as_array_mut()
        .unwrap()
        .push(json!({"key": "url.query", "value": s("x=1")}));
    let findings = check(&[gateway_calls_plan(), export("planner", vec![port])]);
    assert_eq!(pairings(&findings), ["request"]);
}

#[test]
fn lost_context_matches_python_s_older_http_conventions() {
    // aiohttp client: only http.method and http.url; FastAPI server: http.url from the Host
    // header, http.host the socket it listens on (a port mapping between them).
    let client = export(
        "py-client",
        vec![span(
            A,
            2,
            0,
            "GET",
            CLIENT,
            (100, 900),
            0x100,
            &[
                ("http.method", s("GET")),
                ("http.url", s("http://localhost:8000/plan")),
            ],
        )],
    );
    let server = export(
        "rust-planner",
        vec![span(
            B,
            7,
            0,
            "GET /plan",
            SERVER,
            (200, 800),
            0x100,
            &[
                ("http.method", s("GET")),
                ("http.url", s("http://localhost:8000/plan")),
                ("http.host", s("0.0.0.0:80")),
                ("http.target", s("/plan")),
            ],
        )],
    );
    let findings = check(&[client, server]);
    assert_eq!(rules(&findings), ["lost-context"]);
    assert!(
        findings[0]
            .message
            .contains("check that py-client injects traceparent")
    );
}

#[test]
fn lost_context_matches_grpc_methods_across_conventions() {
    let client = export(
        "planner",
        vec![span(
            A,
            2,
            0,
            "p.S/M",
            CLIENT,
            (100, 900),
            0x101,
            &[
                ("rpc.system", s("grpc")),
                ("rpc.service", s("p.S")),
                ("rpc.method", s("M")),
            ],
        )],
    );
    let server = |method: &str| {
        export(
            "trainer",
            vec![span(
                B,
                7,
                0,
                "p.S/M",
                SERVER,
                (200, 800),
                0x101,
                &[("rpc.system.name", s("grpc")), ("rpc.method", s(method))],
            )],
        )
    };
    assert_eq!(
        rules(&check(&[client.clone(), server("p.S/M")])),
        ["lost-context"]
    );
    assert_eq!(check(&[client, server("p.S/Other")]), []);
}

/// A Python (aiohttp, older conventions) CLIENT `GET url` (100..900 µs) in trace A.
fn py_client_calls(url: &str) -> String {
    export(
        "py-client",
        vec![span(
            A,
            2,
            0,
            "GET",
            CLIENT,
            (100, 900),
            0x100,
            &[("http.method", s("GET")), ("http.url", s(url))],
        )],
    )
}

/// A new root SERVER `GET /plan` (200..800 µs) of `service` in `trace`, in the older
/// conventions of Python's instrumentations, with these address attributes.
fn py_root(service: &str, trace: &str, address: &[(&str, Json)]) -> String {
    let mut attrs = vec![("http.method", s("GET")), ("http.target", s("/plan"))];
    attrs.extend(address.iter().cloned());
    export(
        service,
        vec![span(
            trace,
            7,
            0,
            "GET /plan",
            SERVER,
            (200, 800),
            0x100,
            &attrs,
        )],
    )
}

#[test]
fn lost_context_reads_the_port_in_a_server_name_and_prefers_the_port_called() {
    // FastAPI/uvicorn: http.server_name is the Host header, port included. Two servers of
    // one host (planner on :8000, trainer on :8001) both start a new root for GET /plan
    // within the client span; the client called :8001. Where the trainer's root is held when
    // the client's trace completes, the address decides. (A root that completes before the
    // one at the client's address, with the client already held, is paired by request:
    // docs/doctor.md#lost-context says what the doctor cannot see.)
    let client = py_client_calls("http://10.0.0.5:8001/plan");
    let planner = py_root("planner", B, &[("http.server_name", s("10.0.0.5:8000"))]);
    let trainer = py_root("trainer", C, &[("http.server_name", s("10.0.0.5:8001"))]);
    for lines in [
        [planner.clone(), trainer.clone(), client.clone()],
        [trainer.clone(), planner.clone(), client.clone()],
        [trainer.clone(), client.clone(), planner.clone()],
    ] {
        let findings = check(&lines);
        assert_eq!(rules(&findings), ["lost-context"], "{lines:?}");
        assert_eq!(findings[0].services, ["py-client", "trainer"]);
        assert_eq!(pairings(&findings), ["address"]);
    }
    // Only the other port's root: by request and time.
    let findings = check(&[client, planner]);
    assert_eq!(findings[0].services, ["py-client", "planner"]);
    assert_eq!(pairings(&findings), ["request"]);
}

#[test]
fn lost_context_falls_back_to_the_port_when_the_server_s_host_is_not_the_client_s() {
    // Flask (WSGI): http.server_name is the server's configured name, net.host.port its
    // port; the client called it by IP, or by another name.
    let flask = |port: i64| {
        py_root(
            "planner",
            B,
            &[
                ("http.server_name", s("build-host")),
                ("net.host.port", i(port)),
            ],
        )
    };
    for url in ["http://10.0.0.5:5000/plan", "http://planner:5000/plan"] {
        let client = py_client_calls(url);
        assert_eq!(
            pairings(&check(&[client.clone(), flask(5000)])),
            ["address"]
        );
        assert_eq!(
            pairings(&check(&[client, flask(5001)])),
            ["request"],
            "{url}"
        );
    }
    // FastAPI's http.url is built from the socket's address: an IP where the client used a
    // name.
    let fastapi = |port: u16| {
        py_root(
            "planner",
            B,
            &[("http.url", s(&format!("http://10.0.0.5:{port}/plan")))],
        )
    };
    let client = py_client_calls("http://planner:8000/plan");
    assert_eq!(
        pairings(&check(&[client.clone(), fastapi(8000)])),
        ["address"]
    );
    assert_eq!(pairings(&check(&[client, fastapi(8001)])), ["request"]);
    // Behind a port mapping (8080 -> 8000) the Host header keeps the port the client used.
    let mapped = py_root(
        "planner",
        B,
        &[
            ("http.url", s("http://172.17.0.2:8000/plan")),
            ("http.server_name", s("127.0.0.1:8080")),
            ("net.host.port", i(8000)),
        ],
    );
    let client = py_client_calls("http://127.0.0.1:8080/plan");
    assert_eq!(pairings(&check(&[client, mapped])), ["address"]);
}

#[test]
fn a_root_at_another_host_than_the_client_called_is_paired_by_request() {
    // The Host header (http.host, WSGI; server.address, stable) names another host of the
    // same kind (IP and IP, name and name): another server, as behind a load balancer.
    let client = py_client_calls("http://10.0.0.5:8000/plan");
    let other = py_root("planner", B, &[("http.host", s("10.0.0.6:8000"))]);
    assert_eq!(pairings(&check(&[client.clone(), other])), ["request"]);
    let same = py_root("planner", B, &[("http.host", s("10.0.0.5:8000"))]);
    assert_eq!(pairings(&check(&[client, same])), ["address"]);
    let client = py_client_calls("http://planner-1:8000/plan");
    let other = py_root(
        "planner",
        B,
        &[("server.address", s("planner-2")), ("server.port", i(8000))],
    );
    assert_eq!(pairings(&check(&[client, other])), ["request"]);
}

#[test]
fn lost_context_to_a_python_grpc_server_ignores_the_caller_s_port() {
    // Python's gRPC server span: net.peer.* is its caller (an ephemeral port), not itself.
    let client = export(
        "gateway",
        vec![span(
            A,
            2,
            0,
            "p.S/M",
            CLIENT,
            (100, 900),
            0x101,
            &[
                ("rpc.system.name", s("grpc")),
                ("rpc.method", s("p.S/M")),
                ("server.address", s("10.0.0.5")),
                ("server.port", i(50051)),
            ],
        )],
    );
    let server = export(
        "py-trainer",
        vec![span(
            B,
            7,
            0,
            "p.S/M",
            SERVER,
            (200, 800),
            0x100,
            &[
                ("rpc.system", s("grpc")),
                ("rpc.service", s("p.S")),
                ("rpc.method", s("M")),
                ("net.peer.ip", s("10.0.0.9")),
                ("net.peer.port", s("57284")),
            ],
        )],
    );
    assert_eq!(rules(&check(&[client, server])), ["lost-context"]);
}

#[test]
fn a_reopened_trace_does_not_report_its_lost_hop_twice() {
    let mut assembler = Assembler::new(Config::default());
    let mut doctor = Doctor::new(DoctorConfig::default());
    let now = Instant::now();
    let late_b = export(
        "planner",
        vec![span(B, 8, 7, "late", INTERNAL, (300, 400), 0x101, &[])],
    );
    let late_a = export(
        "gateway",
        vec![span(A, 9, 1, "late", INTERNAL, (300, 400), 0x101, &[])],
    );
    let server = export(
        "planner",
        vec![planner_root(B, (200, 800), "/plan", "none")],
    );
    let mut found = Vec::new();
    // The server's trace, the client's, then each reopened by a late span and completed again.
    for line in [server, gateway_calls_plan(), late_b, late_a] {
        assembler.insert(decode_json(line.as_bytes()).unwrap().spans, now);
        for id in assembler.flush() {
            found.extend(doctor.diagnose(assembler.trace(&id).unwrap(), &assembler));
        }
    }
    assert_eq!(rules(&found), ["lost-context"]);
}

#[test]
fn a_client_whose_child_arrives_late_is_no_longer_a_lost_hop_candidate() {
    // Live: gateway's trace closes with its CLIENT span childless (a lost-hop candidate),
    // then planner's SERVER child arrives late and reopens it. A new root of planner for
    // the same request, within that client span (another caller, not traced), is then
    // no lost context of it.
    let t0 = Instant::now();
    let mut assembler = Assembler::new(Config::default());
    let mut doctor = Doctor::new(DoctorConfig::default());
    let mut found = Vec::new();
    // Spans that arrive `secs` after t0, and the traces that complete a quiet window later.
    let mut step = |line: String, secs: u64, doctor: &mut Doctor| {
        let at = t0 + Duration::from_secs(secs);
        assembler.insert(decode_json(line.as_bytes()).unwrap().spans, at);
        assert!(assembler.poll(at).is_empty());
        let quiet = assembler.config().quiet_for;
        for id in assembler.poll(at + quiet) {
            found.extend(doctor.diagnose(assembler.trace(&id).unwrap(), &assembler));
        }
        found.clone()
    };
    assert_eq!(step(gateway_calls_plan(), 0, &mut doctor), []);
    assert_eq!(doctor.candidates(), 1);
    let late_child = export(
        "planner",
        vec![span(
            A,
            3,
            2,
            "GET /plan",
            SERVER,
            (150, 850),
            0x301,
            &[("http.request.method", s("GET")), ("url.path", s("/plan"))],
        )],
    );
    assert_eq!(step(late_child, 10, &mut doctor), []);
    assert_eq!(doctor.candidates(), 0);
    let other_caller = export(
        "planner",
        vec![planner_root(B, (300, 700), "/plan", "none")],
    );
    assert_eq!(step(other_caller, 20, &mut doctor), []);
}

#[test]
fn a_linked_new_root_is_untrusted_linked_not_lost() {
    let server = export(
        "planner",
        vec![link(
            planner_root(B, (200, 800), "/plan", "untrusted:linked"),
            A,
            2,
        )],
    );
    for lines in [
        [gateway_calls_plan(), server.clone()],
        [server.clone(), gateway_calls_plan()],
    ] {
        let findings = check(&lines);
        assert_eq!(rules(&findings), ["untrusted-linked"]);
        assert_eq!(findings[0].severity(), Severity::Info);
        assert_eq!(findings[0].services, ["gateway", "planner"]);
    }
}

#[test]
fn missing_parent_tells_a_remote_parent_from_a_local_one() {
    let remote = export(
        "planner",
        vec![span(A, 2, 9, "GET /plan", SERVER, (0, 5), 0x301, &[])],
    );
    let findings = check(&[remote]);
    assert_eq!(rules(&findings), ["missing-parent"]);
    assert!(
        findings[0].message.contains("came over the wire"),
        "{}",
        findings[0].message
    );
    let local = export(
        "planner",
        vec![span(A, 2, 9, "step", INTERNAL, (0, 5), 0x101, &[])],
    );
    let findings = check(&[local]);
    assert_eq!(rules(&findings), ["missing-parent"]);
    assert!(
        findings[0].message.contains("local to planner"),
        "{}",
        findings[0].message
    );
    // Near miss: the parent arrived (in another export).
    let parent = export(
        "gateway",
        vec![span(A, 9, 0, "root", SERVER, (0, 10), 0x101, &[])],
    );
    let child = export(
        "planner",
        vec![span(A, 2, 9, "GET", SERVER, (1, 5), 0x301, &[])],
    );
    assert_eq!(check(&[child, parent]), []);
}

/// gateway CLIENT (5,000..9,000 µs) in `trace` and its planner SERVER child (`server`).
fn hop(trace: &str, server: (u64, u64), server_flags: u32) -> [String; 2] {
    [
        export(
            "gateway",
            vec![span(trace, 2, 0, "GET", CLIENT, (5000, 9000), 0x101, &[])],
        ),
        export(
            "planner",
            vec![span(
                trace,
                3,
                2,
                "GET /plan",
                SERVER,
                server,
                server_flags,
                &[],
            )],
        ),
    ]
}

#[test]
fn clock_skew_is_reported_once_per_pair_of_services() {
    let mut lines = hop(A, (1000, 4000), 0x301).to_vec();
    lines.extend(hop(B, (500, 3500), 0x301));
    let findings = check(&lines);
    assert_eq!(rules(&findings), ["clock-skew"]);
    assert!(
        findings[0]
            .message
            .contains("planner's clock is at least 4.000 ms behind gateway's"),
        "{}",
        findings[0].message
    );
    // A server clock 2 s ahead: the server starts and ends 2 s after its client, even
    // where its span also ends 25 ms after the client's (a busy host).
    for (server, bound) in [
        ((2_005_100, 2_008_900), "1999.900"),
        ((2_005_100, 2_034_000), "2000.100"),
    ] {
        let findings = check(&hop(A, server, 0x301));
        assert_eq!(rules(&findings), ["clock-skew"], "{server:?}");
        let expected = format!("planner's clock is at least {bound} ms ahead of gateway's");
        assert!(
            findings[0].message.contains(&expected),
            "{}",
            findings[0].message
        );
    }
}

#[test]
fn no_clock_skew_for_a_server_span_that_ends_after_its_client_on_a_busy_host() {
    // The server's span ends once the response is written, the client's once it has read
    // it: on a loaded host they cross, by a few ms, or by tens with a busy event loop. The
    // server started after its client: no clock offset explains both ends, no skew.
    for end in [12_000, 34_000, 60_000] {
        assert_eq!(check(&hop(A, (5100, end), 0x301)), [], "{end}");
    }
}

#[test]
fn no_clock_skew_for_a_busy_host_or_a_python_server_ending_after_its_client() {
    // Starts 1 ms late (a busy host); an ASGI span that ends 0.43 ms after its client.
    assert_eq!(check(&hop(A, (6000, 8800), 0x301)), []);
    assert_eq!(check(&hop(A, (5500, 9430), 0x300)), []);
    // Within the start tolerance: 0.5 ms early.
    assert_eq!(check(&hop(A, (4500, 9430), 0x300)), []);
}

#[test]
fn flag_dropped_only_when_both_exporters_report_flags() {
    let parent = |flags| {
        export(
            "gateway",
            vec![span(A, 2, 0, "GET", CLIENT, (100, 900), flags, &[])],
        )
    };
    let child = |flags| {
        export(
            "planner",
            vec![span(A, 3, 2, "GET /plan", SERVER, (200, 800), flags, &[])],
        )
    };
    let findings = check(&[parent(0x103), child(0x301)]);
    assert_eq!(rules(&findings), ["flag-dropped"]);
    assert_eq!(findings[0].services, ["gateway", "planner"]);
    // Kept: nothing. A Python child (no flags reported): nothing. A parent without it: nothing.
    assert_eq!(check(&[parent(0x103), child(0x303)]), []);
    assert_eq!(check(&[parent(0x103), child(0x300)]), []);
    assert_eq!(check(&[parent(0x101), child(0x301)]), []);
}

#[test]
fn a_span_that_is_its_own_parent() {
    let findings = check(&[export(
        "svc",
        vec![span(A, 4, 4, "x", INTERNAL, (0, 1), 0x101, &[])],
    )]);
    assert_eq!(rules(&findings), ["self-parent"]);
    assert_eq!(
        check(&[export(
            "svc",
            vec![span(A, 4, 0, "x", INTERNAL, (0, 1), 0x101, &[])]
        )]),
        []
    );
}

#[test]
fn duplicate_span_ids_in_one_trace() {
    let one = span(A, 4, 0, "x", INTERNAL, (0, 1), 0x101, &[]);
    let findings = check(&[export("svc", vec![one.clone(), one.clone()])]);
    assert_eq!(rules(&findings), ["duplicate-span-id"]);
    // The same id in two traces is no duplicate.
    let other = span(B, 4, 0, "x", INTERNAL, (0, 1), 0x101, &[]);
    assert_eq!(check(&[export("svc", vec![one, other])]), []);
}

#[test]
fn dangling_links_only_to_traces_received() {
    let target = span(A, 1, 0, "stage a", INTERNAL, (0, 1), 0x101, &[]);
    let linked = |id| {
        link(
            span(A, 2, 1, "stage b", INTERNAL, (1, 2), 0x101, &[]),
            A,
            id,
        )
    };
    let findings = check(&[export("svc", vec![target.clone(), linked(9)])]);
    assert_eq!(rules(&findings), ["dangling-link"]);
    assert_eq!(check(&[export("svc", vec![target.clone(), linked(1)])]), []);
    // A link to a trace never received: cannot decide, nothing.
    let elsewhere = link(span(A, 2, 1, "b", INTERNAL, (1, 2), 0x101, &[]), B, 3);
    assert_eq!(check(&[export("svc", vec![target, elsewhere])]), []);
}

#[test]
fn a_healthy_mixed_python_and_rust_trace_gives_no_finding() {
    // Rust gateway (0x301/0x303 flags, stable conventions) -> Python planner (0x300, older
    // conventions, ending 0.43 ms after its client) -> Rust trainer over gRPC.
    let rust = export(
        "gateway",
        vec![
            span(
                A,
                1,
                0,
                "POST /v1",
                SERVER,
                (0, 2000),
                0x303,
                &[("http.request.method", s("POST")), ("url.path", s("/v1"))],
            ),
            span(
                A,
                2,
                1,
                "POST",
                CLIENT,
                (100, 900),
                0x103,
                &[
                    ("http.request.method", s("POST")),
                    ("url.full", s("http://127.0.0.1:8000/plan")),
                ],
            ),
        ],
    );
    let python = export(
        "planner",
        vec![
            span(
                A,
                3,
                2,
                "POST /plan",
                SERVER,
                (150, 1330),
                0x300,
                &[
                    ("http.method", s("POST")),
                    ("http.url", s("http://127.0.0.1:8000/plan")),
                ],
            ),
            span(
                A,
                4,
                3,
                "p.S/M",
                CLIENT,
                (200, 800),
                0x100,
                &[
                    ("rpc.system", s("grpc")),
                    ("rpc.service", s("p.S")),
                    ("rpc.method", s("M")),
                ],
            ),
        ],
    );
    let trainer = export(
        "trainer",
        vec![span(
            A,
            5,
            4,
            "p.S/M",
            SERVER,
            (210, 790),
            0x301,
            &[("rpc.system.name", s("grpc")), ("rpc.method", s("p.S/M"))],
        )],
    );
    assert_eq!(check(&[rust, python, trainer]), []);
}

#[test]
fn new_root_causes_round_trip() {
    for cause in [
        NewRootCause::NoTraceparent,
        NewRootCause::Rejected("traceparent-versions".into()),
        NewRootCause::UntrustedIgnored,
        NewRootCause::UntrustedLinked,
    ] {
        assert_eq!(NewRootCause::parse(&cause.value()), Some(cause));
    }
    assert_eq!(NewRootCause::parse("other"), None);
}

#[test]
fn no_finding_rests_on_what_a_partial_trace_is_missing() {
    // gateway's CLIENT span (2) and the SERVER child (3) it got, then a span (4) whose
    // parent (5) the per-trace cap dropped; and another trace linking to a dropped span.
    let trace = "0af7651916cd43dd8448eb211c80319c";
    let other = "1af7651916cd43dd8448eb211c80319c";
    let http = [
        ("http.request.method", s("GET")),
        ("url.full", s("http://h/p")),
    ];
    let spans = vec![
        span(trace, 1, 0, "root", INTERNAL, (0, 100), 0x101, &[]),
        span(trace, 2, 1, "GET", CLIENT, (10, 90), 0x101, &http),
        span(trace, 4, 5, "child", INTERNAL, (20, 30), 0x101, &[]),
        span(trace, 3, 2, "GET /p", SERVER, (20, 80), 0x301, &http),
        span(trace, 5, 1, "dropped", INTERNAL, (15, 40), 0x101, &[]),
    ];
    let linking = link(
        span(other, 9, 0, "later", INTERNAL, (200, 300), 0x101, &[]),
        trace,
        5,
    );
    let lines = [export("gateway", spans), export("worker", vec![linking])];
    let mut assembler = Assembler::new(Config {
        max_spans_per_trace: 3,
        ..Config::default()
    });
    let now = Instant::now();
    for line in &lines {
        assembler.insert(decode_json(line.as_bytes()).unwrap().spans, now);
    }
    let mut doctor = Doctor::new(DoctorConfig::default());
    let findings: Vec<Finding> = assembler
        .flush()
        .into_iter()
        .flat_map(|id| doctor.diagnose(assembler.trace(&id).unwrap(), &assembler))
        .collect();
    assert_eq!(rules(&findings), Vec::<&str>::new());
    // The near miss: the same three spans held, the other two never sent (no bound
    // involved): a missing parent and a dangling link.
    let held = assembler
        .trace(&TraceId::from_hex(trace).unwrap())
        .map(|t| t.spans.len());
    assert_eq!(held, Some(3));
    let sent: Vec<Json> = lines_spans(trace, &http);
    let mut findings = check(&[
        export("gateway", sent),
        export(
            "worker",
            vec![link(
                span(other, 9, 0, "later", INTERNAL, (200, 300), 0x101, &[]),
                trace,
                5,
            )],
        ),
    ]);
    findings.sort_by_key(|f| f.rule.id());
    assert_eq!(rules(&findings), ["dangling-link", "missing-parent"]);
}

fn lines_spans(trace: &str, http: &[(&str, Json)]) -> Vec<Json> {
    vec![
        span(trace, 1, 0, "root", INTERNAL, (0, 100), 0x101, &[]),
        span(trace, 2, 1, "GET", CLIENT, (10, 90), 0x101, http),
        span(trace, 4, 5, "child", INTERNAL, (20, 30), 0x101, &[]),
    ]
}

#[test]
fn the_candidate_index_is_bounded() {
    let mut assembler = Assembler::new(Config::default());
    let mut doctor = Doctor::new(DoctorConfig {
        max_candidates: 10,
        ..DoctorConfig::default()
    });
    let now = Instant::now();
    for n in 1..=50u64 {
        let trace = format!("{n:032x}");
        let line = export(
            "gateway",
            vec![span(
                &trace,
                2,
                0,
                "GET",
                CLIENT,
                (n, n + 10),
                0x101,
                &[
                    ("http.request.method", s("GET")),
                    ("url.full", s("http://h/p")),
                ],
            )],
        );
        assembler.insert(decode_json(line.as_bytes()).unwrap().spans, now);
    }
    for id in assembler.flush() {
        assert_eq!(
            doctor.diagnose(assembler.trace(&id).unwrap(), &assembler),
            []
        );
    }
    assert_eq!(doctor.candidates(), 10);
}

#[test]
fn matched_hops_do_not_count_against_the_bound() {
    let mut assembler = Assembler::new(Config::default());
    let mut doctor = Doctor::new(DoctorConfig {
        max_candidates: 3,
        ..DoctorConfig::default()
    });
    let now = Instant::now();
    let client = |n: u64, at: u64| {
        export(
            "gateway",
            vec![span(
                &format!("{n:032x}"),
                2,
                0,
                "GET",
                CLIENT,
                (at, at + 500),
                0x101,
                &[
                    ("http.request.method", s("GET")),
                    ("url.full", s("http://h/p")),
                ],
            )],
        )
    };
    let root = |n: u64, at: u64| {
        export(
            "planner",
            vec![span(
                &format!("{n:032x}"),
                7,
                0,
                "GET /p",
                SERVER,
                (at + 10, at + 20),
                0x101,
                &[("http.request.method", s("GET")), ("url.path", s("/p"))],
            )],
        )
    };
    let mut found = Vec::new();
    let mut run = |line: String, found: &mut Vec<Finding>| {
        assembler.insert(decode_json(line.as_bytes()).unwrap().spans, now);
        for id in assembler.flush() {
            found.extend(doctor.diagnose(assembler.trace(&id).unwrap(), &assembler));
        }
    };
    // One client waits (at 0 ms) while ten other hops are matched (from 10 ms on)...
    run(client(1, 0), &mut found);
    for n in 1..=10u64 {
        run(client(100 + n, n * 10_000), &mut found);
        run(root(200 + n, n * 10_000), &mut found);
    }
    assert_eq!(found.len(), 10);
    // ... and is still there for its server.
    run(root(300, 0), &mut found);
    assert_eq!(found.len(), 11);
    assert_eq!(
        found[10].trace_ids[0],
        TraceId::from_hex(&format!("{:032x}", 1)).unwrap()
    );
}

const PRODUCER: u8 = 4;
const CONSUMER: u8 = 5;

/// trainer's PRODUCER span (a root) publishing to `rollout.jobs` at 5-6 ms, with `id`'s
/// attributes.
fn send(trace: &str, id: &[(&str, Json)]) -> String {
    let mut attrs = vec![
        ("messaging.system", s("nats")),
        ("messaging.destination.name", s("rollout.jobs")),
        ("messaging.operation.type", s("send")),
    ];
    attrs.extend(id.iter().cloned());
    export(
        "trainer",
        vec![span(
            trace,
            2,
            0,
            "send rollout.jobs",
            PRODUCER,
            (5_000, 6_000),
            0x101,
            &attrs,
        )],
    )
}

/// rollout-worker's CONSUMER span for `destination` starting at `start` µs, as the root of
/// `trace` (its parent: `parent`, 0 for none).
fn process(
    trace: &str,
    parent: u64,
    start: u64,
    destination: &str,
    extra: &[(&str, Json)],
) -> String {
    let mut attrs = vec![
        ("messaging.system", s("nats")),
        ("messaging.destination.name", s(destination)),
        ("messaging.operation.type", s("process")),
    ];
    attrs.extend(extra.iter().cloned());
    export(
        "rollout-worker",
        vec![span(
            trace,
            7,
            parent,
            "process rollout.jobs",
            CONSUMER,
            (start, start + 500),
            0x101,
            &attrs,
        )],
    )
}

#[test]
fn a_message_sent_without_context_is_a_lost_hop_over_the_queue() {
    let cause = [(NEW_ROOT_ATTRIBUTE, s("none"))];
    // Either order of completion.
    for lines in [
        [send(A, &[]), process(B, 0, 6_500, "rollout.jobs", &cause)],
        [process(B, 0, 6_500, "rollout.jobs", &cause), send(A, &[])],
    ] {
        let findings = check(&lines);
        assert_eq!(rules(&findings), ["lost-context"], "{findings:?}");
        let f = &findings[0];
        assert_eq!(f.services, ["trainer", "rollout-worker"]);
        assert_eq!(
            f.trace_ids,
            [TraceId::from_hex(A).unwrap(), TraceId::from_hex(B).unwrap()]
        );
        assert!(f.message.contains("over a queue"), "{}", f.message);
        assert!(
            f.message.contains("found no traceparent in the message"),
            "{}",
            f.message
        );
        assert!(
            f.message.contains("make trainer inject the context"),
            "{}",
            f.message
        );
    }
}

#[test]
fn a_queue_hop_needs_the_same_destination_message_and_time() {
    // Near misses: another destination; a root that starts before the send; one after the
    // window; another message id; the same service.
    let id = |m: &str| [("messaging.message.id", s(m))];
    for (why, lines) in [
        (
            "destination",
            vec![send(A, &[]), process(B, 0, 6_500, "other.jobs", &[])],
        ),
        (
            "before the send",
            vec![send(A, &[]), process(B, 0, 1_000, "rollout.jobs", &[])],
        ),
        (
            "after the window",
            vec![send(A, &[]), process(B, 0, 2_500_000, "rollout.jobs", &[])],
        ),
        (
            "message id",
            vec![
                send(A, &id("m1")),
                process(B, 0, 6_500, "rollout.jobs", &id("m2")),
            ],
        ),
    ] {
        assert_eq!(check(&lines), [], "{why}");
    }
    // The same message id pairs, whatever else is waiting.
    let findings = check(&[
        send(A, &id("m1")),
        process(B, 0, 6_500, "rollout.jobs", &id("m1")),
    ]);
    assert_eq!(rules(&findings), ["lost-context"]);
}

#[test]
fn a_consumer_that_continued_the_trace_or_by_link_is_no_finding() {
    // The consumer is the child of the producer's span: one trace, no finding.
    assert_eq!(
        check(&[send(A, &[]), process(A, 2, 6_500, "rollout.jobs", &[])]),
        []
    );
    // The consumer's root links to the producer's span (a batch receive, or links by choice):
    // continued by link, by design: no finding, in either order.
    let linked = |line: String| -> String {
        let mut request: Json = serde_json::from_str(&line).unwrap();
        let span = &mut request["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
        *span = link(span.take(), A, 2);
        request.to_string()
    };
    let consumer = linked(process(
        B,
        0,
        6_500,
        "rollout.jobs",
        &[(NEW_ROOT_ATTRIBUTE, s("linked"))],
    ));
    assert_eq!(check(&[send(A, &[]), consumer.clone()]), []);
    assert_eq!(check(&[consumer, send(A, &[])]), []);
    // A message nobody consumed (or whose consumer is not instrumented): no finding.
    assert_eq!(check(&[send(A, &[])]), []);
}

/// One hop: the CLIENT's and the SERVER's tracestate and attributes.
type HopSides<'a> = [(&'a str, &'a [(&'a str, Json)]); 2];

/// gateway -> planner hops in trace A, one per item: a CLIENT span (id 2n + 2, under
/// gateway's root) and its SERVER child (id 2n + 3), each with its tracestate and attributes.
fn hops(hops: &[HopSides<'_>]) -> [String; 2] {
    let traced = |mut span: Json, trace_state: &str| {
        if !trace_state.is_empty() {
            span["traceState"] = json!(trace_state);
        }
        span
    };
    let mut gateway = vec![span(A, 1, 0, "request", SERVER, (0, 10_000), 0x101, &[])];
    let mut planner = Vec::new();
    for (n, [(client_ts, client), (server_ts, server)]) in (0u64..).zip(hops) {
        let (id, at) = (2 * n + 2, 1000 * n);
        let client = span(A, id, 1, "GET", CLIENT, (at + 100, at + 900), 0x101, client);
        gateway.push(traced(client, client_ts));
        let server = span(
            A,
            id + 1,
            id,
            "GET /plan",
            SERVER,
            (at + 200, at + 800),
            0x101,
            server,
        );
        planner.push(traced(server, server_ts));
    }
    [export("gateway", gateway), export("planner", planner)]
}

/// `lens.baggage.keys` as a lens adapter records it: a string array.
fn keys(keys: &[&str]) -> Json {
    json!({"arrayValue": {"values": keys.iter().map(|k| s(k)).collect::<Vec<_>>()}})
}

const SENT: &str = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7";

#[test]
fn tracestate_dropped_where_the_child_s_service_reports_tracestate() {
    // The first hop lost it; the second shows planner's exporter reports tracestate.
    let findings = check(&hops(&[
        [(SENT, &[]), ("", &[])],
        [(SENT, &[]), (SENT, &[])],
    ]));
    assert_eq!(rules(&findings), ["tracestate-dropped"]);
    let finding = &findings[0];
    assert_eq!(finding.severity(), Severity::Warning);
    assert_eq!(finding.services, ["gateway", "planner"]);
    assert_eq!(
        finding.span_ids,
        [
            SpanId([0, 0, 0, 0, 0, 0, 0, 2]),
            SpanId([0, 0, 0, 0, 0, 0, 0, 3])
        ]
    );
    assert!(
        finding
            .message
            .contains("the tracestate of gateway (congo, rojo) did not reach planner")
            && finding
                .message
                .contains("make it forward the tracestate header"),
        "{}",
        finding.message
    );
}

#[test]
fn no_tracestate_dropped_where_unknown_or_changed() {
    // planner never reports tracestate: an exporter that leaves it out, or a drop on every
    // hop; either way, nothing to go on.
    assert_eq!(check(&hops(&[[(SENT, &[]), ("", &[])]])), []);
    // Changed is not dropped: an entry added at the front, a value changed.
    let changed = format!("new=1,{SENT}");
    let rewritten = "congo=x,rojo=00f067aa0ba902b7";
    for child in [changed.as_str(), rewritten] {
        assert_eq!(check(&hops(&[[(SENT, &[]), (child, &[])]])), [], "{child}");
    }
    // Nothing sent: nothing dropped, even where planner reports tracestate elsewhere.
    assert_eq!(
        check(&hops(&[[("", &[]), ("", &[])], [(SENT, &[]), (SENT, &[])]])),
        []
    );
}

#[test]
fn baggage_dropped_names_the_keys_and_the_likely_cause() {
    let sent = [("lens.baggage.keys", keys(&["a", "b"]))];
    for (received, missing, cause) in [
        (
            keys(&["a"]),
            "baggage keys b sent by gateway",
            "planner received its other keys",
        ),
        (
            keys(&[]),
            "baggage keys a, b sent by gateway",
            "planner received no baggage",
        ),
    ] {
        let received = [("lens.baggage.keys", received)];
        let findings = check(&hops(&[[("", &sent), ("", &received)]]));
        assert_eq!(rules(&findings), ["baggage-dropped"], "{missing}");
        assert_eq!(findings[0].services, ["gateway", "planner"]);
        assert!(
            findings[0].message.contains(missing) && findings[0].message.contains(cause),
            "{}",
            findings[0].message
        );
    }
    // Over a queue: the PRODUCER's keys and its CONSUMER child's.
    let findings = check(&[
        send(A, &[("lens.baggage.keys", keys(&["a", "b"]))]),
        process(
            A,
            2,
            5_500,
            "rollout.jobs",
            &[("lens.baggage.keys", keys(&["b"]))],
        ),
    ]);
    assert_eq!(rules(&findings), ["baggage-dropped"]);
    assert_eq!(findings[0].services, ["trainer", "rollout-worker"]);
}

#[test]
fn no_baggage_dropped_unless_both_sides_record_keys() {
    let sent = [("lens.baggage.keys", keys(&["a", "b"]))];
    // Everything arrived, and more (the server's own gateway added one).
    let more = [("lens.baggage.keys", keys(&["b", "a", "c"]))];
    assert_eq!(check(&hops(&[[("", &sent), ("", &more)]])), []);
    // One side does not record keys (the knob off there, or not a lens adapter).
    let none = [("lens.baggage.keys", keys(&[]))];
    assert_eq!(check(&hops(&[[("", &sent), ("", &[])]])), []);
    assert_eq!(check(&hops(&[[("", &[]), ("", &none)]])), []);
    // Not a list of keys: not lens's attribute.
    let odd = [("lens.baggage.keys", s("a"))];
    assert_eq!(check(&hops(&[[("", &sent), ("", &odd)]])), []);
}
