//! Scenario doctor: the propagation doctor (docs/doctor.md) on real traces of both languages.
//! Every span goes, by each SDK's own OTLP exporter, to one running `lens watch --save FILE`,
//! over four hops and no others:
//!
//! 1. healthy Python -> Rust: aiohttp (NeMo Lens `instrument_aiohttp_client`) -> axum with lens's
//!    `ServerLayer`;
//! 2. healthy Rust -> Python: reqwest with lens's `ClientMiddleware` -> FastAPI (NeMo Lens
//!    `instrument_fastapi`). Hops 1 and 2 are the `http-python-first` trace, checked as there;
//! 3. a client that does not inject: Python aiohttp whose CLIENT span the OpenTelemetry aiohttp
//!    instrumentation records, but whose W3C headers are dropped before the request leaves
//!    (service.py `POST /call`, `"propagate": false`) -> axum with lens, which starts a new trace
//!    (`lens.trace.new_root` = `none`);
//! 4. a public endpoint: Python aiohttp (NeMo Lens, injecting) -> axum with lens under
//!    `InboundPolicy::link_all()`, which starts a new trace linked to the client span
//!    (`untrusted:linked`).
//!
//! 5.–9. over a queue (NATS, [`doctor_queue`]): healthy Python -> Rust and Rust -> Python, a
//!    Python publisher that does not inject, a lens consumer that links, and fan-out (a
//!    Python publisher, a lens consumer continuing, a Python subscriber ignoring the headers).
//!
//! 10.–11. behind stock nginx ([`doctor_nginx`]): a NeMo Lens Python client sends 30 requests
//!    (HTTP, `proxy_pass`) and 30 calls (gRPC, `grpc_pass`), one at a time, round robin over
//!    three lens replicas each, the third behind a server block that drops the trace headers.
//!    Skipped with a note without nginx, unless `LENS_NGINX=require`.
//!
//! Checked on the JSON lines of `lens check --json` over the saved file: exactly three
//! `lost-context` (error: hop 3 with the "received no traceparent" cause, hop 7 over the
//! queue with "found no traceparent in the message", and hop 9's audit subscriber; each naming
//! both traces, spans and services), behind nginx exactly the 10 HTTP and 10 gRPC requests the
//! third replica served as `lost-context`, each paired by request and time ("behind a proxy or
//! load balancer") and naming `instance relay-3`, exactly one `untrusted-linked` (info, hop 4),
//! no other finding, exit 1; the
//! linked consumer's trace says which span it continues; the healthy queue hops are one trace
//! each; `--quiet` leaves the info out and still exits 1; `lens watch` reported the same live.

use std::path::Path;

use axum::Router;
use axum::extract::Json;
use axum::routing::post;
use lens_axum::{RequestContext, ServerLayer};
use lens_core::policy::InboundPolicy;
use serde_json::{Value, json};

use crate::check::Checks;
use crate::describe::seen;
use crate::doctor_nginx::{self, Pool};
use crate::doctor_queue::{self, PYTHON_NATS_SERVICE};
use crate::error::{Error, Result};
use crate::http::{
    self, Direction, OtlpTargets, PythonService, REQUEST_TIMEOUT, RUST_SERVICE, post_json,
};
use crate::spans::{self, Side, SpanRecord};
use crate::watch::{self, PYTHON_SERVICE, lens_check};

/// The attribute a lens server sets on a SERVER span that starts a new trace.
const NEW_ROOT: &str = "lens.trace.new_root";

/// A Rust handler of hops 3 and 4: what it saw.
async fn answer(cx: RequestContext) -> Json<Value> {
    Json(json!({"rust": seen(cx.context())}))
}

/// The spans of hops 3 and 4.
struct Broken {
    /// Hop 3: the Python CLIENT span that sent no context, and the Rust SERVER span.
    blind: (Option<SpanRecord>, Option<SpanRecord>),
    /// Hop 4: the Python CLIENT span, and the Rust SERVER span that linked to it.
    public: (Option<SpanRecord>, Option<SpanRecord>),
    /// Every span of both sides.
    all: Vec<SpanRecord>,
}

/// The Python CLIENT span that called `path`, and the Rust SERVER span of `path`.
fn hop(
    checks: &mut Checks,
    all: &[SpanRecord],
    path: &str,
) -> (Option<SpanRecord>, Option<SpanRecord>) {
    let called = |s: &SpanRecord| {
        s.attribute("url.full")
            .or_else(|| s.attribute("http.url"))
            .is_some_and(|u| u.ends_with(path))
    };
    let client = spans::one(checks, all, Side::Python, "CLIENT", path, called).cloned();
    let route = format!("POST {path}");
    let server = spans::one(checks, all, Side::Rust, "SERVER", &route, |s| {
        s.name == route
    })
    .cloned();
    (client, server)
}

/// Hops 3 and 4: service.py's `POST /call` to a lens axum service with a route of each.
async fn breaks(
    python: &Path,
    scripts: &Path,
    out: &Path,
    otlp: &OtlpTargets,
    checks: &mut Checks,
) -> Result<Broken> {
    let spans::Recording {
        exporter,
        provider,
        tracer,
    } = spans::Recording::new();
    let trusting = Router::new()
        .route("/blind", post(answer))
        .layer(ServerLayer::new().with_tracer(tracer.clone()));
    let public = Router::new().route("/public", post(answer)).layer(
        ServerLayer::new()
            .with_tracer(tracer.clone())
            .with_inbound_policy(InboundPolicy::link_all()),
    );
    let rust = http::serve(trusting.merge(public)).await?;
    let client = reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(Error::http("reqwest client"))?;
    let service =
        PythonService::start(python, scripts, &rust.url, out, Some(otlp), &client).await?;
    for (path, propagate) in [("/blind", false), ("/public", true)] {
        let answer = post_json(
            &client,
            &format!("{}/call", service.url),
            &json!({"url": format!("{}{path}", rust.url), "propagate": propagate}),
            checks,
            &format!("python /call {path} answers 200"),
        )
        .await?;
        checks.eq(
            &format!("rust {path} answers python 200"),
            &answer["status"].as_u64(),
            &Some(200),
        );
    }
    let mut all = service.stop(checks)?;
    rust.stop(checks).await;
    all.extend(http::finish_rust(&provider, &exporter, Some(otlp), out).await?);

    let blind = hop(checks, &all, "/blind");
    let public = hop(checks, &all, "/public");
    for ((_, server), cause) in [(&blind, "none"), (&public, "untrusted:linked")] {
        let Some(server) = server else { continue };
        checks.eq(
            &format!("rust {}: a new root, {NEW_ROOT} = {cause}", server.name),
            &(server.parent_span_id.as_deref(), server.attribute(NEW_ROOT)),
            &(None, Some(cause.to_owned())),
        );
    }
    Ok(Broken { blind, public, all })
}

/// Trace ids and the span count of each, in order of first appearance.
fn trace_counts(all: &[SpanRecord]) -> Vec<(String, usize)> {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for span in all {
        match counts.iter_mut().find(|(id, _)| *id == span.trace_id) {
            Some((_, n)) => *n += 1,
            None => counts.push((span.trace_id.clone(), 1)),
        }
    }
    counts
}

/// The finding lines of `lines`.
fn findings(lines: &[Value]) -> Vec<&Value> {
    lines
        .iter()
        .filter(|l| l.get("finding").is_some())
        .collect()
}

/// The one finding of `rule` between the services `from` and `to` (a failed check otherwise),
/// checked to have `severity` and its section of docs/doctor.md.
fn one_finding<'a>(
    checks: &mut Checks,
    found: &[&'a Value],
    rule: &str,
    severity: &str,
    (from, to): (&str, &str),
) -> Option<&'a Value> {
    let of_rule: Vec<&Value> = found
        .iter()
        .copied()
        .filter(|f| f["finding"] == rule && f["services"] == json!([from, to]))
        .collect();
    let label = format!("lens check: exactly one {rule} from {from} to {to}");
    let [finding] = of_rule[..] else {
        checks.fail(&label, format!("{of_rule:?} of {found:?}"));
        return None;
    };
    checks.eq(
        &format!("{label}: severity and doc"),
        &(finding["severity"].as_str(), finding["doc"].as_str()),
        &(
            Some(severity),
            Some(format!("docs/doctor.md#{rule}").as_str()),
        ),
    );
    Some(finding)
}

/// `finding` names `hop`'s client and server (or producer and consumer): their traces and
/// spans, in that order.
fn names_hop(
    checks: &mut Checks,
    label: &str,
    finding: &Value,
    hop: &(Option<SpanRecord>, Option<SpanRecord>),
) {
    let ids = |key: &str| -> Vec<String> {
        finding[key]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let (client, server) = hop;
    let both = |f: fn(&SpanRecord) -> &String| -> Vec<String> {
        [client, server]
            .iter()
            .map(|s| s.as_ref().map(|s| f(s).clone()).unwrap_or_default())
            .collect()
    };
    checks.eq(
        &format!("{label}: trace ids"),
        &ids("trace_ids"),
        &both(|s| &s.trace_id),
    );
    checks.eq(
        &format!("{label}: span ids"),
        &ids("span_ids"),
        &both(|s| &s.span_id),
    );
}

pub(crate) async fn run(
    lens: &Path,
    python: &Path,
    scripts: &Path,
    out: &Path,
    checks: &mut Checks,
) -> Result<()> {
    let save = out.join("doctor.jsonl");
    let watch = watch::start(lens, &save)?;
    let otlp = OtlpTargets {
        python: ("grpc", watch.grpc_url()),
        rust: (opentelemetry_otlp::Protocol::HttpBinary, watch.http_url()),
    };

    // Hops 1 and 2.
    let healthy_dir = out.join("healthy");
    std::fs::create_dir_all(&healthy_dir)
        .map_err(Error::io(format!("creating {}", healthy_dir.display())))?;
    let mut all = http::run(
        python,
        scripts,
        &healthy_dir,
        Direction::PythonFirst,
        Some(&otlp),
        checks,
    )
    .await?;
    // Hops 3 and 4.
    let broken = breaks(python, scripts, out, &otlp, checks).await?;
    all.extend(broken.all.iter().cloned());
    checks.spans += broken.all.len();
    // Hops 5 to 9, over a queue.
    let queue_dir = out.join("nats");
    std::fs::create_dir_all(&queue_dir)
        .map_err(Error::io(format!("creating {}", queue_dir.display())))?;
    let queue = doctor_queue::run(python, scripts, &queue_dir, &otlp, checks).await?;
    all.extend(queue.all.iter().cloned());
    checks.spans += queue.all.len();
    // Hops 10 and 11, behind nginx.
    let nginx_dir = out.join("nginx");
    std::fs::create_dir_all(&nginx_dir)
        .map_err(Error::io(format!("creating {}", nginx_dir.display())))?;
    let pools = doctor_nginx::run(python, scripts, &nginx_dir, &otlp, checks).await?;
    if let Some(pools) = &pools {
        all.extend(pools.all.iter().cloned());
        checks.spans += pools.all.len();
    }

    // Every trace whole in lens watch (so in the saved file), and what it found live.
    let expected = trace_counts(&all);
    let mut lines = tokio::task::block_in_place(|| watch.read_until(&expected))?;
    lines.extend(watch.finish()?);
    checks.eq(
        "lens watch shows every trace of the hops",
        &expected.len(),
        &expected
            .iter()
            .filter(|(id, _)| watch::last_trace(&lines, id).is_some())
            .count(),
    );

    let checked = lens_check(lens, &["--json"], &save)?;
    checks.eq(
        "lens check exits 1 (an error finding)",
        &checked.code,
        &Some(1),
    );
    let found = findings(&checked.lines);
    let behind_nginx = if pools.is_some() {
        2 * doctor_nginx::REQUESTS / 3
    } else {
        0
    };
    checks.check(
        &format!(
            "lens check: no finding but {} lost-context and one untrusted-linked",
            3 + behind_nginx
        ),
        found.len() == 4 + behind_nginx,
        || format!("{found:#?}"),
    );
    let mut lost_behind_nginx = Vec::new();
    if let Some(pools) = &pools {
        for (label, server, pool) in [
            ("proxy_pass", doctor_nginx::RELAY_SERVICE, &pools.http),
            ("grpc_pass", doctor_nginx::TRAINER_SERVICE, &pools.grpc),
        ] {
            lost_behind_nginx.extend(check_pool(checks, &found, label, server, pool));
        }
    }
    let http = (PYTHON_SERVICE, RUST_SERVICE);
    let lost = one_finding(checks, &found, "lost-context", "error", http);
    if let Some(lost) = lost {
        names_hop(checks, "lost-context (hop 3)", lost, &broken.blind);
        let message = lost["message"].as_str().unwrap_or_default();
        checks.check(
            "lost-context: the message names both services and the cause",
            message.contains(&format!("{PYTHON_SERVICE} -> {RUST_SERVICE}:"))
                && message.contains(&format!("{RUST_SERVICE} received no traceparent")),
            || message.to_owned(),
        );
    }
    let over_queue = (PYTHON_NATS_SERVICE, RUST_SERVICE);
    let lost_message = one_finding(checks, &found, "lost-context", "error", over_queue);
    if let Some(lost) = lost_message {
        names_hop(
            checks,
            "lost-context over the queue (hop 7)",
            lost,
            &queue.blind,
        );
        let message = lost["message"].as_str().unwrap_or_default();
        checks.check(
            "lost-context over the queue: the message names both services, the queue and the cause",
            message.contains(&format!(
                "{PYTHON_NATS_SERVICE} -> {RUST_SERVICE} over a queue:"
            )) && message.contains(&format!(
                "{RUST_SERVICE} found no traceparent in the message"
            )),
            || message.to_owned(),
        );
    }
    // Hop 9, fan-out: the subscriber that ignored the headers, and no other consumer of it.
    let fan_out = (PYTHON_NATS_SERVICE, PYTHON_NATS_SERVICE);
    let lost_fan_out = one_finding(checks, &found, "lost-context", "error", fan_out);
    if let Some(lost) = lost_fan_out {
        let hop = (queue.fanout.0.clone(), queue.fanout_ignored.clone());
        names_hop(
            checks,
            "lost-context of the audit subscriber (hop 9)",
            lost,
            &hop,
        );
    }
    if let Some(linked) = one_finding(checks, &found, "untrusted-linked", "info", http) {
        names_hop(checks, "untrusted-linked (hop 4)", linked, &broken.public);
    }
    check_queue_traces(checks, &checked.lines, &queue);

    let sorted = |found: Vec<&Value>| {
        let mut text: Vec<String> = found.iter().map(ToString::to_string).collect();
        text.sort();
        text
    };
    // --quiet leaves the info out; the errors stay.
    let quiet = lens_check(lens, &["--json", "--quiet"], &save)?;
    checks.eq("lens check --quiet exits 1", &quiet.code, &Some(1));
    checks.eq(
        "lens check --quiet: the lost-context alone",
        &sorted(findings(&quiet.lines)),
        &sorted(
            lost.into_iter()
                .chain(lost_message)
                .chain(lost_fan_out)
                .chain(lost_behind_nginx)
                .collect(),
        ),
    );

    // Live, lens watch found the same four. (Not the warnings: a trace can complete there
    // before the late export of its other half, and a missing parent is then reported and
    // reopened.)
    let live = findings(&lines)
        .into_iter()
        .filter(|f| f["severity"] != "warning")
        .collect();
    checks.eq(
        "lens watch reported the same lost-context and untrusted-linked live",
        &sorted(live),
        &sorted(found),
    );
    Ok(())
}

/// The findings between the nginx pool's client and `server` (`label`: the pool): exactly one
/// `lost-context` (error) for each request the third replica served, from the client's CLIENT
/// span to one of that replica's SERVER spans, paired by request and time, naming the instance
/// and the cause; those findings.
fn check_pool<'a>(
    checks: &mut Checks,
    found: &[&'a Value],
    label: &str,
    server: &str,
    pool: &Pool,
) -> Vec<&'a Value> {
    let client = doctor_nginx::CLIENT_SERVICE;
    let of_pool: Vec<&Value> = found
        .iter()
        .copied()
        .filter(|f| f["services"] == json!([client, server]))
        .collect();
    let sorted = |mut ids: Vec<String>| {
        ids.sort();
        ids
    };
    let id = |f: &Value, key: &str, n: usize| f[key][n].as_str().unwrap_or_default().to_owned();
    checks.eq(
        &format!(
            "behind nginx {label}: a finding for exactly the requests the third replica served"
        ),
        &sorted(of_pool.iter().map(|f| id(f, "trace_ids", 0)).collect()),
        &sorted(pool.lost_traces.clone()),
    );
    let lead = format!(
        "context lost on {client} -> {server} (instance {}): ",
        doctor_nginx::LOST_INSTANCE
    );
    let wrong: Vec<&&Value> = of_pool
        .iter()
        .filter(|f| {
            let message = f["message"].as_str().unwrap_or_default();
            f["finding"] != "lost-context"
                || f["severity"] != "error"
                || f["doc"] != "docs/doctor.md#lost-context"
                || !pool.lost_servers.contains(&id(f, "span_ids", 1))
                || !message.starts_with(&lead)
                || !message.contains(
                    "paired by request and time (behind a proxy or load balancer: the addresses \
                     differ)",
                )
                || !message.contains(&format!("{server} received no traceparent"))
        })
        .collect();
    checks.check(
        &format!(
            "behind nginx {label}: each an error lost-context to a SERVER span of {}, paired by \
             request and time, naming the instance and the cause",
            doctor_nginx::LOST_INSTANCE
        ),
        wrong.is_empty() && !of_pool.is_empty(),
        || format!("{wrong:#?}"),
    );
    of_pool
}

/// What `lens check` says of the queue hops' traces: a healthy hop is one trace holding its
/// producer and its consumer, the consumer's parent the producer; the linked consumer's trace
/// is continued by link from the producer's span.
fn check_queue_traces(checks: &mut Checks, lines: &[Value], queue: &doctor_queue::QueueHops) {
    for (label, hop) in [
        ("queue hop 5 (python -> rust)", &queue.healthy_to_rust),
        ("queue hop 6 (rust -> python)", &queue.healthy_to_python),
    ] {
        let (Some(producer), Some(consumer)) = hop else {
            continue;
        };
        let spans = watch::last_trace(lines, &producer.trace_id)
            .and_then(|t| t["spans"].as_array())
            .map(Vec::as_slice)
            .unwrap_or_default();
        let parent = spans
            .iter()
            .find(|s| s["span_id"] == consumer.span_id.as_str())
            .map(|s| s["parent_span_id"].clone());
        checks.eq(
            &format!("lens check: {label} is one trace, the consumer under the producer"),
            &parent,
            &Some(json!(producer.span_id)),
        );
    }
    if let (Some(producer), Some(consumer)) = &queue.linked {
        checks.eq(
            "lens check: the linked consumer's trace (hop 8) is continued by link from the producer",
            &watch::last_trace(lines, &consumer.trace_id).map(|t| t["continued_from"].clone()),
            &Some(json!({"trace_id": producer.trace_id, "span_id": producer.span_id})),
        );
    }
}
