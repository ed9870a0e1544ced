//! The lost hop behind a proxy or load balancer: the client called the balancer's address, the
//! server reports its own (or the Host the balancer sent), so the doctor pairs the two sides by
//! the request (method, path, query; the gRPC method) and time. With its near misses: another
//! service serving the same path at the same moment, a retry, a server that is not
//! instrumented, concurrent identical requests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use lens_watch::assemble::{Assembler, Config};
use lens_watch::decode::decode_json;
use lens_watch::diagnose::{Doctor, DoctorConfig, Finding, NEW_ROOT_ATTRIBUTE, Severity};
use lens_watch::model::{SpanId, TraceId};
use serde_json::{Value as Json, json};

const CLIENT: u8 = 3;
const SERVER: u8 = 2;

/// What `request` says when the pairing was by request and time.
const BY_REQUEST: &str =
    "paired by request and time (behind a proxy or load balancer: the addresses differ)";

fn s(v: &str) -> Json {
    json!({ "stringValue": v })
}

fn i(v: i64) -> Json {
    json!({ "intValue": v.to_string() })
}

/// Trace `n`'s id.
fn trace(n: u64) -> String {
    format!("{:032x}", 0xa000 + n)
}

/// A span as OTLP/JSON; times in microseconds after 1,700,000,000 s; `parent` 0 for a root.
fn span(
    trace: &str,
    (id, parent): (u64, u64),
    kind: u8,
    (start, end): (u64, u64),
    attributes: &[(&str, Json)],
) -> Json {
    let t0 = 1_700_000_000_000_000_000u64;
    let mut span = json!({
        "traceId": trace,
        "spanId": format!("{id:016x}"),
        "name": "span",
        "kind": kind,
        "startTimeUnixNano": (t0 + start * 1000).to_string(),
        "endTimeUnixNano": (t0 + end * 1000).to_string(),
        "flags": 0x101,
        "attributes": attributes.iter().map(|(k, v)| json!({"key": k, "value": v})).collect::<Vec<_>>(),
    });
    if parent != 0 {
        span["parentSpanId"] = json!(format!("{parent:016x}"));
    }
    span
}

/// One OTLP/JSON export request of `service`, on `instance` (`service.instance.id`) if any.
fn export(service: &str, instance: Option<&str>, spans: Vec<Json>) -> String {
    let mut resource = vec![json!({"key": "service.name", "value": s(service)})];
    if let Some(instance) = instance {
        resource.push(json!({"key": "service.instance.id", "value": s(instance)}));
    }
    json!({"resourceSpans": [{
        "resource": {"attributes": resource},
        "scopeSpans": [{"scope": {"name": "test"}, "spans": spans}],
    }]})
    .to_string()
}

/// Every finding on the traces of these export requests, in this order, as `lens check`
/// reads a file.
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

/// py-client's CLIENT span (span 2 of trace `n`) `GET http://127.0.0.1:8080/relay?n=<n>`: the
/// balancer's address.
fn client_span(n: u64, (start, end): (u64, u64)) -> Json {
    span(
        &trace(n),
        (2, 0),
        CLIENT,
        (start, end),
        &[
            ("http.request.method", s("GET")),
            ("url.full", s(&format!("http://127.0.0.1:8080/relay?n={n}"))),
            ("server.address", s("127.0.0.1")),
            ("server.port", i(8080)),
        ],
    )
}

/// rust-relay's SERVER span of `GET /relay?n=<query>` in `trace`, as lens-axum writes it
/// behind nginx's `proxy_pass http://pool;` (Host: pool, so port 80); a new root (`none`) when
/// `parent` is 0.
fn relay_span(trace: &str, (id, parent): (u64, u64), times: (u64, u64), query: u64) -> Json {
    let mut attrs = vec![
        ("http.request.method", s("GET")),
        ("url.path", s("/relay")),
        ("url.query", s(&format!("n={query}"))),
        ("http.route", s("/relay")),
        ("server.address", s("pool")),
        ("server.port", i(80)),
    ];
    if parent == 0 {
        attrs.push((NEW_ROOT_ATTRIBUTE, s("none")));
    }
    span(trace, (id, parent), SERVER, times, &attrs)
}

/// Request `n` (1-based) of a client sending one at a time through a round-robin balancer of
/// three replicas, the third behind a proxy that drops the trace headers: the client's export,
/// and the replica's (in the client's trace when it continued, else a trace of its own).
fn request(n: u64) -> [String; 2] {
    let start = n * 2000;
    let client = export(
        "py-client",
        None,
        vec![client_span(n, (start, start + 800))],
    );
    let replica = (n - 1) % 3 + 1;
    let instance = format!("relay-{replica}");
    let times = (start + 100, start + 700);
    let server = if replica == 3 {
        relay_span(&trace(1000 + n), (7, 0), times, n)
    } else {
        relay_span(&trace(n), (7, 2), times, n)
    };
    [client, export("rust-relay", Some(&instance), vec![server])]
}

#[test]
fn every_request_to_the_replica_behind_the_dropping_proxy_is_found_naming_the_instance() {
    let requests: Vec<[String; 2]> = (1..=30).map(request).collect();
    // Clients first, servers first, and each request's two sides in turn.
    let orders: [Vec<String>; 3] = [
        requests
            .iter()
            .map(|r| r[0].clone())
            .chain(requests.iter().map(|r| r[1].clone()))
            .collect(),
        requests
            .iter()
            .map(|r| r[1].clone())
            .chain(requests.iter().map(|r| r[0].clone()))
            .collect(),
        requests.iter().flat_map(|r| r.iter().cloned()).collect(),
    ];
    for lines in orders {
        let findings = check(&lines);
        assert_eq!(rules(&findings), ["lost-context"; 10]);
        let mut lost: Vec<TraceId> = findings.iter().map(|f| f.trace_ids[0]).collect();
        lost.sort();
        let expected: Vec<TraceId> = (1..=30)
            .filter(|n| n % 3 == 0)
            .map(|n| TraceId::from_hex(&trace(n)).unwrap())
            .collect();
        assert_eq!(lost, expected);
        for f in &findings {
            assert_eq!(f.severity(), Severity::Error);
            assert!(
                f.message
                    .starts_with("context lost on py-client -> rust-relay (instance relay-3): "),
                "{}",
                f.message
            );
            assert!(f.message.contains(BY_REQUEST), "{}", f.message);
            // Each client with its own request's root.
            let n = u64::from_str_radix(&f.trace_ids[0].to_string()[28..], 16).unwrap() - 0xa000;
            assert_eq!(f.trace_ids[1], TraceId::from_hex(&trace(1000 + n)).unwrap());
        }
    }
}

#[test]
fn a_server_reporting_its_own_port_or_host_names_is_paired_by_request() {
    // The server saw its own port (proxy_pass http://127.0.0.1:9003), or names its host.
    for (key, value) in [("server.port", i(9003)), ("server.address", s("10.0.0.7"))] {
        let mut root = relay_span(&trace(100), (7, 0), (2100, 2700), 1);
        root["attributes"]
            .as_array_mut()
            .unwrap()
            .retain(|kv| kv["key"] != "server.address" && kv["key"] != "server.port");
        root["attributes"]
            .as_array_mut()
            .unwrap()
            .push(json!({"key": key, "value": value}));
        let lines = [
            export("py-client", None, vec![client_span(1, (2000, 2800))]),
            export("rust-relay", None, vec![root]),
        ];
        let findings = check(&lines);
        assert_eq!(rules(&findings), ["lost-context"], "{key}");
        assert!(findings[0].message.contains(BY_REQUEST));
        // No instance on the resource: the service alone.
        assert!(
            findings[0]
                .message
                .starts_with("context lost on py-client -> rust-relay: ")
        );
    }
}

#[test]
fn the_instance_falls_back_to_the_host_name() {
    let root = relay_span(&trace(100), (7, 0), (2100, 2700), 1);
    let server = json!({"resourceSpans": [{
        "resource": {"attributes": [
            {"key": "service.name", "value": s("rust-relay")},
            {"key": "host.name", "value": s("node-b")},
        ]},
        "scopeSpans": [{"scope": {"name": "test"}, "spans": [root]}],
    }]})
    .to_string();
    let client = export("py-client", None, vec![client_span(1, (2000, 2800))]);
    let findings = check(&[client, server]);
    assert!(
        findings[0]
            .message
            .starts_with("context lost on py-client -> rust-relay (instance node-b): "),
        "{}",
        findings[0].message
    );
}

/// A gRPC call `lens.Relay/Forward`: the client's (to the balancer on 8443) or a server's (on
/// `port`), in the stable conventions as lens-tonic writes them.
fn rpc(trace: &str, (id, parent): (u64, u64), kind: u8, times: (u64, u64), port: i64) -> Json {
    let mut attrs = vec![
        ("rpc.system", s("grpc")),
        ("rpc.service", s("lens.Relay")),
        ("rpc.method", s("Forward")),
        ("server.address", s("127.0.0.1")),
        ("server.port", i(port)),
    ];
    if kind == SERVER && parent == 0 {
        attrs.push((NEW_ROOT_ATTRIBUTE, s("none")));
    }
    span(trace, (id, parent), kind, times, &attrs)
}

#[test]
fn a_grpc_call_through_a_balancer_is_paired_by_its_method() {
    let client = export(
        "grpcio-client",
        None,
        vec![rpc(&trace(1), (2, 0), CLIENT, (100, 900), 8443)],
    );
    let root = |method: &str| {
        let mut root = rpc(&trace(2), (7, 0), SERVER, (200, 800), 50053);
        root["attributes"][2]["value"] = s(method);
        export("trainer", Some("trainer-3"), vec![root])
    };
    let findings = check(&[client.clone(), root("Forward")]);
    assert_eq!(rules(&findings), ["lost-context"]);
    assert!(
        findings[0]
            .message
            .starts_with("context lost on grpcio-client -> trainer (instance trainer-3): ")
    );
    assert!(findings[0].message.contains(BY_REQUEST));
    assert_eq!(check(&[client, root("Backward")]), []);
}

#[test]
fn another_service_serving_the_same_path_at_the_same_moment_is_no_finding() {
    // The client's request was continued by relay-1; at the same moment relay-2 started a
    // root for an unrelated request to the same path and query (a health checker, a client
    // that is not traced).
    let lines = [
        export(
            "py-client",
            None,
            vec![
                client_span(1, (2000, 2800)),
                relay_span(&trace(1), (7, 2), (2100, 2700), 1),
            ],
        ),
        export(
            "rust-relay",
            Some("relay-2"),
            vec![relay_span(&trace(500), (7, 0), (2150, 2650), 1)],
        ),
    ];
    assert_eq!(check(&lines), []);
    let reversed = [lines[1].clone(), lines[0].clone()];
    assert_eq!(check(&reversed), []);
}

#[test]
fn a_retry_is_paired_by_the_attempt_the_root_fits() {
    // Two attempts of one request: the first reached relay-3 (context dropped, a new root),
    // the second relay-1 (continued).
    let attempts = |second_child: bool| {
        let mut spans = vec![
            span(&trace(1), (1, 0), SERVER, (0, 5000), &[]),
            {
                let mut a = client_span(1, (1000, 1800));
                a["spanId"] = json!(format!("{:016x}", 3));
                a["parentSpanId"] = json!(format!("{:016x}", 1));
                a
            },
            {
                let mut a = client_span(1, (3000, 3800));
                a["spanId"] = json!(format!("{:016x}", 4));
                a["parentSpanId"] = json!(format!("{:016x}", 1));
                a
            },
        ];
        if second_child {
            spans.push(relay_span(&trace(1), (7, 4), (3100, 3700), 1));
        }
        export("py-client", None, spans)
    };
    let lost = export(
        "rust-relay",
        Some("relay-3"),
        vec![relay_span(&trace(2), (7, 0), (1100, 1700), 1)],
    );
    for lines in [
        [attempts(true), lost.clone()],
        [lost.clone(), attempts(true)],
    ] {
        let findings = check(&lines);
        assert_eq!(rules(&findings), ["lost-context"]);
        assert_eq!(
            findings[0].span_ids,
            [SpanId(3u64.to_be_bytes()), SpanId(7u64.to_be_bytes())]
        );
    }
    // The first attempt failed before any server saw it: no root anywhere, no finding.
    assert_eq!(check(&[attempts(true)]), []);
}

#[test]
fn a_client_whose_server_is_not_instrumented_is_no_finding() {
    // No new root anywhere; nor one for the same path with another query, or after the client
    // ended.
    let client = export("py-client", None, vec![client_span(1, (2000, 2800))]);
    assert_eq!(check(std::slice::from_ref(&client)), []);
    let other_query = export(
        "rust-relay",
        None,
        vec![relay_span(&trace(100), (7, 0), (2100, 2700), 2)],
    );
    let later = export(
        "rust-relay",
        None,
        vec![relay_span(&trace(100), (7, 0), (5000, 5600), 1)],
    );
    for server in [other_query, later] {
        assert_eq!(check(&[client.clone(), server.clone()]), [], "{server}");
    }
}

#[test]
fn concurrent_identical_requests_behind_a_balancer_are_an_ambiguous_hop() {
    // Two clients send the same request at the same moment; both lose their context on
    // replicas that report other addresses: which root is whose, the doctor cannot tell.
    let client = |n: u64, from: u64| {
        let mut c = client_span(n, (from, from + 800));
        c["attributes"][1]["value"] = s("http://127.0.0.1:8080/relay?n=1");
        export("py-client", None, vec![c])
    };
    let root = |t: u64, instance: &str, from: u64| {
        export(
            "rust-relay",
            Some(instance),
            vec![relay_span(&trace(t), (7, 0), (from, from + 600), 1)],
        )
    };
    let clients = [client(1, 2000), client(2, 2050)];
    let roots = [root(101, "relay-1", 2100), root(102, "relay-2", 2120)];
    for lines in [
        [&clients[..], &roots[..]].concat(),
        [&roots[..], &clients[..]].concat(),
    ] {
        let findings = check(&lines);
        assert_eq!(rules(&findings), ["ambiguous-hop"; 2]);
        for f in &findings {
            assert_eq!(f.severity(), Severity::Warning);
            // The span and the two candidates on the other side; the client's service first.
            assert_eq!(f.span_ids.len(), 3, "{}", f.message);
            assert_eq!(f.services, ["py-client", "rust-relay"]);
            assert!(f.message.contains("behind a proxy or load balancer"));
        }
    }
    let findings = check(&[&clients[..], &roots[..]].concat());
    assert!(
        findings[0]
            .message
            .contains("client span 0000000000000002 of py-client"),
        "{}",
        findings[0].message
    );
    let findings = check(&[&roots[..], &clients[..]].concat());
    assert!(
        findings[0]
            .message
            .contains("of rust-relay (instance relay-1)")
            && findings[0]
                .message
                .contains("of rust-relay (instance relay-2)"),
        "{}",
        findings[0].message
    );
}

#[test]
fn a_root_that_says_no_context_arrived_is_preferred_over_one_that_says_nothing() {
    // Two roots fit by request: one from a lens server that received no traceparent, one from
    // a server that records no cause (not lens: a root of its own for another caller).
    let client = export("py-client", None, vec![client_span(1, (2000, 2800))]);
    let lens = export(
        "rust-relay",
        Some("relay-3"),
        vec![relay_span(&trace(101), (7, 0), (2100, 2700), 1)],
    );
    let mut other = relay_span(&trace(102), (7, 0), (2110, 2690), 1);
    other["attributes"]
        .as_array_mut()
        .unwrap()
        .retain(|kv| kv["key"] != NEW_ROOT_ATTRIBUTE);
    let other = export("legacy", None, vec![other]);
    for lines in [
        [client.clone(), lens.clone(), other.clone()],
        [lens.clone(), other.clone(), client.clone()],
    ] {
        let findings = check(&lines);
        assert_eq!(rules(&findings), ["lost-context"]);
        assert_eq!(findings[0].services, ["py-client", "rust-relay"]);
    }
}

#[test]
fn a_redacted_query_value_matches_and_another_value_does_not() {
    let client = |query: &str| {
        let mut c = client_span(1, (2000, 2800));
        c["attributes"][1]["value"] = s(&format!("http://127.0.0.1:8080/relay?{query}"));
        export("py-client", None, vec![c])
    };
    let root = |query: &str| {
        let mut r = relay_span(&trace(100), (7, 0), (2100, 2700), 1);
        r["attributes"][2]["value"] = s(query);
        export("rust-relay", None, vec![r])
    };
    assert_eq!(
        rules(&check(&[
            client("n=1&token=abc"),
            root("n=1&token=REDACTED")
        ])),
        ["lost-context"]
    );
    assert_eq!(check(&[client("n=1&page=2"), root("n=1&page=3")]), []);
    assert_eq!(check(&[client("n=1"), root("n=1&page=3")]), []);
}

#[test]
fn a_long_query_is_compared_within_its_bound() {
    // 4 KiB of parameters: held to 256 bytes on each side (the index stays bounded); a
    // difference within them still tells requests apart, one beyond them cannot.
    let long = |first: &str, last: &str| {
        let middle: Vec<String> = (0..400).map(|i| format!("p{i}=v")).collect();
        format!("n={first}&{}&z={last}", middle.join("&"))
    };
    let client = |query: &str| {
        let mut c = client_span(1, (2000, 2800));
        c["attributes"][1]["value"] = s(&format!("http://127.0.0.1:8080/relay?{query}"));
        export("py-client", None, vec![c])
    };
    let root = |query: &str| {
        let mut r = relay_span(&trace(100), (7, 0), (2100, 2700), 1);
        r["attributes"][2]["value"] = s(query);
        export("rust-relay", None, vec![r])
    };
    assert_eq!(
        rules(&check(&[client(&long("1", "a")), root(&long("1", "a"))])),
        ["lost-context"]
    );
    assert_eq!(check(&[client(&long("1", "a")), root(&long("2", "a"))]), []);
    assert_eq!(
        rules(&check(&[client(&long("1", "a")), root(&long("1", "b"))])),
        ["lost-context"]
    );
}
