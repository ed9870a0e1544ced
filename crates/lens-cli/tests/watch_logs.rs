//! `lens watch` receiving OTLP logs from a real sender: `tracing` events through
//! opentelemetry-appender-tracing into the OpenTelemetry Rust SDK's logger, records emitted
//! inside spans (so they carry the span's ids) and one outside any, exported by
//! opentelemetry-otlp's log exporter over OTLP/gRPC and OTLP/HTTP (protobuf), beside the spans
//! by its span exporter. Each span's records show under it (`--json --logs`, `--logs`, the
//! page's `GET /api/traces/{id}`); the record of no span is listed by `GET /api/logs`.
//!
//! The records and spans are made by the SDK's own pipeline (kept by its in-memory exporters),
//! then handed to the OTLP exporters directly: the same requests a batch processor sends, with
//! the logs sent first so that they are held before the trace completes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod browser_support;
mod watch_support;

use browser_support::{browse, chromium, console_messages, screenshot, tempdir};
use opentelemetry::logs::Severity;
use opentelemetry::trace::{
    Span as _, SpanKind, TraceContextExt as _, Tracer as _, TracerProvider as _,
};
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::logs::{InMemoryLogExporter, LogExporter as _, SdkLoggerProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanExporter as _};
use serde_json::Value;
use tracing_subscriber::layer::SubscriberExt as _;
use watch_support::{Watch, http};

/// The ids of what [`send`] sent.
struct Sent {
    trace_id: String,
    server: String,
    child: String,
}

/// How [`send`] exports.
#[derive(Clone, Copy)]
enum Protocol {
    Grpc,
    HttpProtobuf,
}

/// A server span `GET /plan` (a log record in it) with a child `plan` (two records), and one
/// record outside any span; the records exported, then the spans, to `watch` over `protocol`.
async fn send(watch: &Watch, protocol: Protocol) -> Sent {
    let spans = InMemorySpanExporter::default();
    let tracer_provider = SdkTracerProvider::builder()
        .with_simple_exporter(spans.clone())
        .build();
    let logs = InMemoryLogExporter::default();
    let logger_provider = SdkLoggerProvider::builder()
        .with_simple_exporter(logs.clone())
        .build();
    let tracer = tracer_provider.tracer("shop");
    // The application logs with `tracing`; opentelemetry-appender-tracing bridges each event
    // to the SDK's logger, which gives it the ids of the span current in the OpenTelemetry
    // Context.
    let subscriber = tracing_subscriber::registry().with(
        opentelemetry_appender_tracing::layer::OpenTelemetryTracingBridge::new(&logger_provider),
    );
    let logging = tracing::subscriber::set_default(subscriber);
    let emit = |severity: Severity, body: &str| match severity {
        Severity::Debug => tracing::debug!(order = 42_i64, "{body}"),
        Severity::Warn => tracing::warn!(order = 42_i64, "{body}"),
        Severity::Error => tracing::error!(order = 42_i64, "{body}"),
        _ => tracing::info!(order = 42_i64, "{body}"),
    };
    let server = tracer
        .span_builder("GET /plan")
        .with_kind(SpanKind::Server)
        .start(&tracer);
    let server_cx = opentelemetry::Context::current_with_span(server);
    let sent = {
        let _server = server_cx.clone().attach();
        emit(Severity::Info, "request received");
        let child = tracer.start("plan");
        let ids = Sent {
            trace_id: child.span_context().trace_id().to_string(),
            server: server_cx.span().span_context().span_id().to_string(),
            child: child.span_context().span_id().to_string(),
        };
        let _child = opentelemetry::Context::current_with_span(child).attach();
        emit(Severity::Debug, "planning");
        emit(Severity::Warn, "the plan is slow");
        ids
    };
    server_cx.span().end();
    emit(Severity::Error, "no span here");
    drop(logging);
    tracer_provider.force_flush().unwrap();

    let resource = Resource::builder_empty().with_service_name("shop").build();
    let records = logs.get_emitted_logs().unwrap();
    assert_eq!(records.len(), 4);
    let records: Vec<_> = records
        .iter()
        .map(|l| (&l.record, &l.instrumentation))
        .collect();
    let (mut log_exporter, mut span_exporter) = match protocol {
        Protocol::Grpc => {
            let endpoint = format!("http://{}", watch.grpc);
            (
                opentelemetry_otlp::LogExporter::builder()
                    .with_tonic()
                    .with_endpoint(&endpoint)
                    .build()
                    .unwrap(),
                opentelemetry_otlp::SpanExporter::builder()
                    .with_tonic()
                    .with_endpoint(&endpoint)
                    .build()
                    .unwrap(),
            )
        }
        Protocol::HttpProtobuf => (
            opentelemetry_otlp::LogExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_endpoint(format!("http://{}/v1/logs", watch.http))
                .build()
                .unwrap(),
            opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_endpoint(format!("http://{}/v1/traces", watch.http))
                .build()
                .unwrap(),
        ),
    };
    log_exporter.set_resource(&resource);
    span_exporter.set_resource(&resource);
    log_exporter
        .export(opentelemetry_sdk::logs::LogBatch::new(&records))
        .await
        .expect("lens watch accepts the logs");
    span_exporter
        .export(spans.get_finished_spans().unwrap())
        .await
        .expect("lens watch accepts the spans");
    sent
}

/// The bodies of a span's `logs` in a `--json` trace.
fn bodies(trace: &Value, span_id: &str) -> Vec<String> {
    let span = trace["spans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["span_id"] == span_id)
        .unwrap_or_else(|| panic!("span {span_id} in {trace}"));
    span["logs"]
        .as_array()
        .map(|logs| {
            logs.iter()
                .map(|l| {
                    format!(
                        "{} {}",
                        l["severity"].as_str().unwrap(),
                        l["body"].as_str().unwrap()
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn over_grpc_json_and_the_page_show_each_spans_logs_under_it_and_list_the_rest() {
    let watch = Watch::start(&["--json", "--logs"]);
    let sent = send(&watch, Protocol::Grpc).await;
    let trace: Value = serde_json::from_str(&watch.next_stdout()).unwrap();
    assert_eq!(trace["trace_id"], sent.trace_id);
    assert_eq!(bodies(&trace, &sent.server), ["INFO request received"]);
    assert_eq!(
        bodies(&trace, &sent.child),
        ["DEBUG planning", "WARN the plan is slow"]
    );
    let child = trace["spans"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["span_id"] == sent.child.as_str())
        .unwrap();
    assert_eq!(child["logs"][0]["attributes"]["order"], 42);
    assert_eq!(child["logs"][0]["trace_id"], sent.trace_id);

    // The page: the waterfall has the records in a row under each span's row.
    let (status, html) = http(
        &watch.http,
        "GET",
        &format!("/api/traces/{}", sent.trace_id),
        None,
    );
    assert!(status.contains("200"), "{status}");
    for (span, body) in [
        (&sent.server, "request received"),
        (&sent.child, "the plan is slow"),
    ] {
        let row = html
            .find(&format!("data-span-id=\"{span}\""))
            .unwrap_or_else(|| panic!("{html}"));
        let logs = html[row..]
            .find(&format!("<tr class=\"logs\" data-logs-for=\"{span}\">"))
            .unwrap_or_else(|| panic!("{html}"));
        let next_row = html[row + 1..]
            .find("<tr class=\"span")
            .map_or(usize::MAX, |n| n + 1);
        assert!(
            logs < next_row,
            "the logs of {span} are right under its row: {html}"
        );
        assert!(html[row + logs..].contains(body), "{html}");
    }
    assert!(!html.contains("no span here"));

    // The record of no span is listed, with its service.
    let (_, list) = http(&watch.http, "GET", "/api/logs?service=shop", None);
    let list: Value = serde_json::from_str(&list).unwrap();
    assert_eq!(list["matching"], 1, "{list}");
    assert_eq!(list["logs"][0]["body"], "no span here");
    assert_eq!(list["logs"][0]["severity"], "ERROR");
    assert_eq!(list["logs"][0]["span_id"], Value::Null);
    assert_eq!(list["services"][0], "shop");
    assert!(list["html"].as_str().unwrap().contains("no span here"));
    let (_, none) = http(&watch.http, "GET", "/api/logs?service=nobody", None);
    assert_eq!(serde_json::from_str::<Value>(&none).unwrap()["matching"], 0);

    let (_, status) = http(&watch.http, "GET", "/api/status", None);
    let status: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(
        (
            status["logs_received"].as_u64(),
            status["logs_dropped"].as_u64()
        ),
        (Some(4), Some(0))
    );
    assert!(
        status["status"]
            .as_str()
            .unwrap()
            .contains("4 logs received (4 held)"),
        "{status}"
    );
}

#[tokio::test]
async fn over_http_the_waterfall_with_logs_prints_them_under_their_spans() {
    let watch = Watch::start(&["--logs", "--max-logs", "3"]);
    let sent = send(&watch, Protocol::HttpProtobuf).await;
    let mut lines = Vec::new();
    while !lines
        .last()
        .is_some_and(|l: &String| l.contains(" spans, "))
    {
        lines.push(watch.next_stdout());
    }
    let text = lines.join("\n");
    assert!(lines[0].contains(&sent.trace_id), "{text}");
    let server = lines.iter().position(|l| l.contains("GET /plan")).unwrap();
    let child = lines
        .iter()
        .position(|l| l.contains("plan") && l.contains("INTERNAL"))
        .unwrap();
    // --max-logs 3: the oldest record ("request received") was dropped.
    assert_eq!(child, server + 1, "{text}");
    assert!(
        lines[child + 1].trim_start().starts_with("DEBUG planning"),
        "{text}"
    );
    assert!(
        lines[child + 2]
            .trim_start()
            .starts_with("WARN the plan is slow"),
        "{text}"
    );
    // Indented under the span's name.
    let indent = |l: &str| l.len() - l.trim_start().len();
    assert!(indent(&lines[child + 1]) > indent(&lines[child]), "{text}");
    let status = watch
        .stderr
        .iter()
        .find(|l| l.contains("logs received"))
        .unwrap();
    assert!(
        status.contains("4 logs received (3 held, 1 dropped, the oldest first)"),
        "{status}"
    );
}

#[tokio::test]
async fn save_keeps_the_logs_and_load_shows_them_under_their_spans_again() {
    let dir = std::env::temp_dir().join(format!("lens-watch-logs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("session.jsonl");
    let _ = std::fs::remove_file(&file);
    let path = file.to_str().unwrap();
    let watch = Watch::start(&["--json", "--save", path]);
    let sent = send(&watch, Protocol::HttpProtobuf).await;
    let shown: Value = serde_json::from_str(&watch.next_stdout()).unwrap();
    // Without --logs, --json is as before.
    assert!(
        shown["spans"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s.get("logs").is_none())
    );
    assert!(watch.stop("INT").status.success());
    let saved = std::fs::read_to_string(&file).unwrap();
    assert!(
        saved
            .lines()
            .next()
            .unwrap()
            .starts_with(r#"{"resourceLogs":"#),
        "{saved}"
    );

    let again = Watch::with(&["--json", "--logs", "--load", path]);
    let trace: Value = serde_json::from_str(&again.next_stdout()).unwrap();
    assert_eq!(trace["trace_id"], sent.trace_id);
    assert_eq!(bodies(&trace, &sent.server), ["INFO request received"]);
    assert_eq!(
        bodies(&trace, &sent.child),
        ["DEBUG planning", "WARN the plan is slow"]
    );
    let (_, list) = http(&again.http, "GET", "/api/logs", None);
    assert_eq!(serde_json::from_str::<Value>(&list).unwrap()["matching"], 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn the_page_in_chromium_shows_the_logs_under_their_spans_and_the_rest_apart() {
    let Some(chromium) = chromium() else {
        return;
    };
    let watch = Watch::start(&["--json"]);
    let sent = send(&watch, Protocol::Grpc).await;
    let _ = watch.next_stdout();
    let work = tempdir(
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")),
        "lens-watch-logs",
    );
    let url = format!("http://{}/#trace={}", watch.http, sent.trace_id);
    let virtual_time = "--virtual-time-budget=4000";
    let shown = browse(&chromium, &work, &url, &["--dump-dom", virtual_time]);
    let dom = &shown.stdout;
    let row = dom
        .find(&format!("data-span-id=\"{}\"", sent.child))
        .unwrap_or_else(|| panic!("the waterfall is shown: {dom}"));
    let logs = dom[row..]
        .find(&format!("data-logs-for=\"{}\"", sent.child))
        .unwrap_or_else(|| panic!("the logs row is shown: {dom}"));
    assert!(dom[row + logs..].contains("the plan is slow"));
    assert!(
        dom.contains("Logs of no span (<span id=\"unmatched-count\">1</span>)"),
        "{dom}"
    );
    assert!(dom.contains("no span here"));
    assert_eq!(console_messages(&shown.stderr), Vec::<&str>::new());
    // For a person to look at.
    screenshot(&chromium, &work, &url, virtual_time, "watch-logs.png");
}
