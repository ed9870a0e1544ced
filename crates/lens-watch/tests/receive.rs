//! The receivers against real senders: opentelemetry-otlp's exporter over OTLP/gRPC (gzip) and
//! OTLP/HTTP (protobuf), and raw requests for every bad input.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lens_watch::decode::Batch;
use lens_watch::model::SpanKind;
use lens_watch::receive::{self, MAX_BODY};
use opentelemetry::KeyValue;
use opentelemetry::trace::{
    Span as _, SpanKind as OtelKind, TraceContextExt as _, Tracer as _, TracerProvider as _,
};
use opentelemetry_otlp::{WithExportConfig as _, WithTonicConfig as _};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter as _};
use prost::Message as _;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::mpsc;

/// An exporter that keeps what the SDK hands it, so the same spans can go to a real exporter.
#[derive(Clone, Debug, Default)]
struct Keep(Arc<Mutex<Vec<SpanData>>>);

impl opentelemetry_sdk::trace::SpanExporter for Keep {
    fn export(&self, batch: Vec<SpanData>) -> impl Future<Output = OTelSdkResult> + Send {
        self.0.lock().unwrap().extend(batch);
        std::future::ready(Ok(()))
    }
}

/// A client span and, as if in another process, the server span it called (remote parent),
/// with a child: three spans of one trace, as the SDK finished them.
fn sdk_spans() -> Vec<SpanData> {
    let keep = Keep::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(keep.clone())
        .build();
    let tracer = provider.tracer("test-scope");
    let client = tracer
        .span_builder("GET /plan")
        .with_kind(OtelKind::Client)
        .with_attributes([KeyValue::new("http.request.method", "GET")])
        .start(&tracer);
    // What the server extracts from the traceparent: the client's context, remote.
    let sent = client.span_context();
    let remote = opentelemetry::trace::SpanContext::new(
        sent.trace_id(),
        sent.span_id(),
        sent.trace_flags(),
        true,
        sent.trace_state().clone(),
    );
    let client_cx = opentelemetry::Context::current().with_remote_span_context(remote);
    let server = tracer
        .span_builder("GET /plan")
        .with_kind(OtelKind::Server)
        .with_attributes([
            KeyValue::new("http.request.method", "GET"),
            KeyValue::new("n", 7_i64),
        ])
        .start_with_context(&tracer, &client_cx);
    let server_cx = opentelemetry::Context::current().with_span(server);
    let mut child = tracer.start_with_context("plan", &server_cx);
    child.add_event("thinking", vec![KeyValue::new("step", 1_i64)]);
    child.end();
    server_cx.span().end();
    let mut client = client;
    client.end();
    provider.shutdown().unwrap();
    let spans = keep.0.lock().unwrap().clone();
    assert_eq!(spans.len(), 3);
    spans
}

struct Receivers {
    grpc: SocketAddr,
    http: SocketAddr,
    batches: mpsc::Receiver<Batch>,
}

async fn start() -> Receivers {
    let (sender, batches) = mpsc::channel(16);
    let grpc = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let http = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addrs = (grpc.local_addr().unwrap(), http.local_addr().unwrap());
    tokio::spawn(receive::grpc::serve(
        grpc,
        sender.clone(),
        std::future::pending(),
    ));
    tokio::spawn(receive::http::serve(
        http,
        receive::http::router(sender),
        std::future::pending(),
    ));
    Receivers {
        grpc: addrs.0,
        http: addrs.1,
        batches,
    }
}

fn check_received(batch: &Batch, sent: &[SpanData]) {
    assert_eq!((batch.spans.len(), batch.rejected), (3, 0));
    for data in sent {
        let span = batch
            .spans
            .iter()
            .find(|s| s.span_id.0 == data.span_context.span_id().to_bytes())
            .expect("every span arrives");
        assert_eq!(span.trace_id.0, data.span_context.trace_id().to_bytes());
        assert_eq!(span.name, data.name);
        assert_eq!(span.service(), "watched");
        assert_eq!(span.scope.name, "test-scope");
    }
    let server = batch
        .spans
        .iter()
        .find(|s| s.kind == SpanKind::Server)
        .unwrap();
    assert_eq!(server.parent_is_remote(), Some(true));
    assert_eq!(
        server.attribute("n"),
        Some(&lens_watch::model::Value::Int(7))
    );
    let child = batch.spans.iter().find(|s| s.name == "plan").unwrap();
    assert_eq!(child.parent_span_id, Some(server.span_id));
    assert_eq!(child.parent_is_remote(), Some(false));
    assert_eq!(child.events[0].name, "thinking");
    // opentelemetry-rust reports the trace flags (sampled) in the low byte.
    assert_eq!(child.flags & 0xff & 0x01, 0x01);
}

async fn export(mut exporter: opentelemetry_otlp::SpanExporter, spans: Vec<SpanData>) {
    exporter.set_resource(
        &Resource::builder_empty()
            .with_service_name("watched")
            .build(),
    );
    exporter
        .export(spans)
        .await
        .expect("the receiver accepts the export");
}

#[tokio::test]
async fn the_rust_sdk_exporter_over_grpc_with_gzip() {
    let mut r = start().await;
    let spans = sdk_spans();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .with_endpoint(format!("http://{}", r.grpc))
        .with_compression(opentelemetry_otlp::Compression::Gzip)
        .build()
        .unwrap();
    export(exporter, spans.clone()).await;
    check_received(&r.batches.recv().await.unwrap(), &spans);
}

#[tokio::test]
async fn the_rust_sdk_exporter_over_http_protobuf() {
    let mut r = start().await;
    let spans = sdk_spans();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(format!("http://{}/v1/traces", r.http))
        .build()
        .unwrap();
    export(exporter, spans.clone()).await;
    check_received(&r.batches.recv().await.unwrap(), &spans);
}

// ---- logs ----

/// Log records as the SDK emits them: two inside a server span (so they carry its trace and
/// span ids), one outside any span; and that span's context.
fn sdk_logs() -> (
    Vec<opentelemetry_sdk::logs::in_memory_exporter::LogDataWithResource>,
    opentelemetry::trace::SpanContext,
) {
    use opentelemetry::logs::{
        AnyValue, LogRecord as _, Logger as _, LoggerProvider as _, Severity,
    };
    let logs = opentelemetry_sdk::logs::InMemoryLogExporter::default();
    let provider = opentelemetry_sdk::logs::SdkLoggerProvider::builder()
        .with_simple_exporter(logs.clone())
        .build();
    let logger = provider.logger("test-logger");
    let emit = |severity: Severity, body: &str| {
        let mut record = logger.create_log_record();
        record.set_severity_number(severity);
        record.set_severity_text(severity.name());
        record.set_body(AnyValue::from(body.to_owned()));
        record.add_attribute("user", "ada");
        logger.emit(record);
    };
    let tracer = SdkTracerProvider::builder().build().tracer("test-scope");
    let span = tracer
        .span_builder("GET /plan")
        .with_kind(OtelKind::Server)
        .start(&tracer);
    let context = span.span_context().clone();
    {
        let _in_span = opentelemetry::Context::current_with_span(span).attach();
        emit(Severity::Info, "planning");
        emit(Severity::Warn, "slow plan");
    }
    emit(Severity::Error, "no span");
    let emitted = logs.get_emitted_logs().unwrap();
    assert_eq!(emitted.len(), 3);
    (emitted, context)
}

async fn export_logs(
    mut exporter: opentelemetry_otlp::LogExporter,
    logs: &[opentelemetry_sdk::logs::in_memory_exporter::LogDataWithResource],
) {
    use opentelemetry_sdk::logs::LogExporter as _;
    exporter.set_resource(
        &Resource::builder_empty()
            .with_service_name("watched")
            .build(),
    );
    let records: Vec<_> = logs
        .iter()
        .map(|l| (&l.record, &l.instrumentation))
        .collect();
    exporter
        .export(opentelemetry_sdk::logs::LogBatch::new(&records))
        .await
        .expect("the receiver accepts the export");
}

fn check_logs(batch: &Batch, span: &opentelemetry::trace::SpanContext) {
    assert_eq!((batch.logs.len(), batch.rejected_logs), (3, 0));
    assert!(batch.spans.is_empty());
    let body = |b: &str| {
        batch
            .logs
            .iter()
            .find(|l| l.body == lens_watch::model::Value::String(b.into()))
            .expect("every record arrives")
    };
    for (text, severity) in [("planning", "INFO"), ("slow plan", "WARN")] {
        let log = body(text);
        assert_eq!(log.trace_id.unwrap().0, span.trace_id().to_bytes());
        assert_eq!(log.span_id.unwrap().0, span.span_id().to_bytes());
        assert_eq!((log.severity(), log.service()), (severity, "watched"));
        assert_eq!(log.scope.name, "test-logger");
        assert!(log.time() > 0);
        assert!(log.attributes.iter().any(|kv| &*kv.key == "user"));
    }
    assert_eq!(body("no span").span(), None);
}

#[tokio::test]
async fn logs_from_the_rust_sdk_exporter_over_grpc_with_gzip() {
    let mut r = start().await;
    let (logs, span) = sdk_logs();
    let exporter = opentelemetry_otlp::LogExporter::builder()
        .with_tonic()
        .with_endpoint(format!("http://{}", r.grpc))
        .with_compression(opentelemetry_otlp::Compression::Gzip)
        .build()
        .unwrap();
    export_logs(exporter, &logs).await;
    check_logs(&r.batches.recv().await.unwrap(), &span);
}

#[tokio::test]
async fn logs_from_the_rust_sdk_exporter_over_http_protobuf() {
    let mut r = start().await;
    let (logs, span) = sdk_logs();
    let exporter = opentelemetry_otlp::LogExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(format!("http://{}/v1/logs", r.http))
        .build()
        .unwrap();
    export_logs(exporter, &logs).await;
    check_logs(&r.batches.recv().await.unwrap(), &span);
}

fn json_logs(records: &str) -> String {
    format!(r#"{{"resourceLogs":[{{"scopeLogs":[{{"logRecords":[{records}]}}]}}]}}"#)
}

const GOOD_LOG: &str = r#"{"timeUnixNano":"1","body":{"stringValue":"ok"},"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7"}"#;
const BAD_LOG: &str = r#"{"body":{"stringValue":"bad"},"spanId":"00f0"}"#;

#[tokio::test]
async fn json_logs_with_a_bad_record_get_a_partial_success_in_json_and_keep_the_rest() {
    let mut r = start().await;
    let body = gzip(json_logs(&format!("{GOOD_LOG},{BAD_LOG}")).as_bytes());
    let (status, ct, reply) = post_to(r.http, LOGS, "application/json", Some("gzip"), body).await;
    assert_eq!((status, ct.as_str()), (200, "application/json"));
    assert_json_partial_success(&reply, "rejectedLogRecords", "invalid span id");
    let batch = r.batches.recv().await.unwrap();
    assert_eq!(
        (batch.logs.len(), batch.rejected_logs, batch.rejected),
        (1, 1, 0)
    );
}

/// A protobuf logs request of [`GOOD_LOG`] and [`BAD_LOG`].
fn logs_protobuf_with_a_bad_record() -> Vec<u8> {
    use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
    use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
    let good = LogRecord {
        trace_id: vec![1; 16],
        span_id: vec![2; 8],
        ..Default::default()
    };
    let bad = LogRecord {
        span_id: vec![2; 3],
        ..Default::default()
    };
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            scope_logs: vec![ScopeLogs {
                log_records: vec![good, bad],
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
    .encode_to_vec()
}

#[tokio::test]
async fn protobuf_logs_with_a_bad_record_get_a_partial_success_in_protobuf() {
    use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceResponse;
    let mut r = start().await;
    let (status, ct, reply) = post_to(
        r.http,
        LOGS,
        "application/x-protobuf",
        None,
        logs_protobuf_with_a_bad_record(),
    )
    .await;
    assert_eq!((status, ct.as_str()), (200, "application/x-protobuf"));
    let reply = ExportLogsServiceResponse::decode(&reply[..]).unwrap();
    assert_eq!(reply.partial_success.unwrap().rejected_log_records, 1);
    assert_eq!(r.batches.recv().await.unwrap().logs.len(), 1);
}

#[tokio::test]
async fn grpc_logs_with_a_bad_record_get_a_partial_success_and_the_rest_is_kept() {
    use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceResponse;
    let mut r = start().await;
    let reply = grpc_send_to(
        grpc_channel(r.grpc).await,
        GRPC_LOGS,
        logs_protobuf_with_a_bad_record(),
    )
    .await
    .unwrap();
    let reply = ExportLogsServiceResponse::decode(&reply[..]).unwrap();
    let partial = reply.partial_success.unwrap();
    assert_eq!(partial.rejected_log_records, 1);
    assert!(partial.error_message.contains("invalid span id"));
    let batch = r.batches.recv().await.unwrap();
    assert_eq!((batch.logs.len(), batch.rejected_logs), (1, 1));
}

const GOOD: &str = r#"{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7","name":"ok","startTimeUnixNano":"1","endTimeUnixNano":"2"}"#;
const BAD_ID: &str = r#"{"traceId":"4bf92f","spanId":"00f067aa0ba902b7","name":"bad"}"#;

/// One service's metrics as the SDK collects them: a duration histogram with one measurement.
fn sdk_metrics() -> opentelemetry_sdk::metrics::data::ResourceMetrics {
    use opentelemetry::metrics::MeterProvider as _;
    let memory = opentelemetry_sdk::metrics::InMemoryMetricExporter::default();
    let provider = opentelemetry_sdk::metrics::SdkMeterProvider::builder()
        .with_resource(
            Resource::builder_empty()
                .with_service_name("watched")
                .build(),
        )
        .with_reader(opentelemetry_sdk::metrics::PeriodicReader::builder(memory.clone()).build())
        .build();
    let duration = provider
        .meter("test-scope")
        .f64_histogram("http.server.request.duration")
        .with_unit("s")
        .build();
    duration.record(0.012, &[KeyValue::new("http.request.method", "GET")]);
    provider.force_flush().unwrap();
    let mut all = memory.get_finished_metrics().unwrap();
    provider.shutdown().unwrap();
    assert_eq!(all.len(), 1);
    all.remove(0)
}

#[tokio::test]
async fn metrics_from_the_rust_sdk_exporter_are_accepted_and_dropped() {
    use opentelemetry_sdk::metrics::exporter::PushMetricExporter as _;
    let mut r = start().await;
    let metrics = sdk_metrics();
    let grpc = opentelemetry_otlp::MetricExporter::builder()
        .with_tonic()
        .with_endpoint(format!("http://{}", r.grpc))
        .with_compression(opentelemetry_otlp::Compression::Gzip)
        .build()
        .unwrap();
    let http = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(format!("http://{}/v1/metrics", r.http))
        .build()
        .unwrap();
    for exporter in [grpc, http] {
        exporter
            .export(&metrics)
            .await
            .expect("the receiver accepts the metrics");
    }
    // Nothing went to the traces: the first batch delivered is the spans sent next.
    let spans = sdk_spans();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(format!("http://{}/v1/traces", r.http))
        .build()
        .unwrap();
    export(exporter, spans.clone()).await;
    check_received(&r.batches.recv().await.unwrap(), &spans);
    assert!(r.batches.try_recv().is_err());
}

#[tokio::test]
async fn metrics_as_json_get_an_empty_json_success() {
    let r = start().await;
    let response = reqwest::Client::new()
        .post(format!("http://{}/v1/metrics", r.http))
        .header("content-type", "application/json")
        .body(r#"{"resourceMetrics":[]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "application/json"
    );
    assert_eq!(response.text().await.unwrap(), "{}");
}

fn json_request(spans: &str) -> String {
    format!(r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{spans}]}}]}}]}}"#)
}

async fn post(
    addr: SocketAddr,
    content_type: &str,
    encoding: Option<&str>,
    body: Vec<u8>,
) -> (u16, String, Vec<u8>) {
    post_to(addr, TRACES, content_type, encoding, body).await
}

/// The OTLP/HTTP paths.
const TRACES: &str = receive::http::TRACES_PATH;
const LOGS: &str = receive::http::LOGS_PATH;

async fn post_to(
    addr: SocketAddr,
    path: &str,
    content_type: &str,
    encoding: Option<&str>,
    body: Vec<u8>,
) -> (u16, String, Vec<u8>) {
    let mut request = reqwest::Client::new()
        .post(format!("http://{addr}{path}"))
        .header("content-type", content_type)
        .body(body);
    if let Some(e) = encoding {
        request = request.header("content-encoding", e);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let ct = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, ct, response.bytes().await.unwrap().to_vec())
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

/// `reply` is an OTLP/JSON partial success of one rejected (counted as `count`), saying `says`.
fn assert_json_partial_success(reply: &[u8], count: &str, says: &str) {
    let reply: serde_json::Value = serde_json::from_slice(reply).unwrap();
    assert_eq!(reply["partialSuccess"][count], "1", "{reply}");
    assert!(
        reply["partialSuccess"]["errorMessage"]
            .as_str()
            .unwrap()
            .contains(says),
        "{reply}"
    );
}

#[tokio::test]
async fn json_with_a_bad_span_gets_a_partial_success_in_json_and_keeps_the_rest() {
    let mut r = start().await;
    let body = json_request(&format!("{GOOD},{BAD_ID}"));
    let (status, ct, reply) = post(
        r.http,
        "application/json; charset=utf-8",
        None,
        body.into_bytes(),
    )
    .await;
    assert_eq!((status, ct.as_str()), (200, "application/json"));
    assert_json_partial_success(&reply, "rejectedSpans", "invalid trace id");
    let batch = r.batches.recv().await.unwrap();
    assert_eq!((batch.spans.len(), batch.rejected), (1, 1));
}

#[tokio::test]
async fn gzip_json_is_accepted_and_a_clean_request_replies_without_partial_success() {
    let mut r = start().await;
    let body = gzip(json_request(GOOD).as_bytes());
    let (status, _, reply) = post(r.http, "application/json", Some("gzip"), body).await;
    assert_eq!(status, 200);
    assert_eq!(reply, b"{}");
    assert_eq!(r.batches.recv().await.unwrap().spans.len(), 1);
}

#[tokio::test]
async fn protobuf_with_a_bad_span_gets_a_partial_success_in_protobuf() {
    let r = start().await;
    let mut request = lens_watch::encode::to_request(
        &lens_watch::decode::decode_json(json_request(GOOD).as_bytes())
            .unwrap()
            .spans,
    );
    let mut bad = request.resource_spans[0].scope_spans[0].spans[0].clone();
    bad.span_id = vec![0; 8];
    request.resource_spans[0].scope_spans[0].spans.push(bad);
    let (status, ct, reply) = post(
        r.http,
        "application/x-protobuf",
        None,
        request.encode_to_vec(),
    )
    .await;
    assert_eq!((status, ct.as_str()), (200, "application/x-protobuf"));
    let reply = ExportTraceServiceResponse::decode(&reply[..]).unwrap();
    assert_eq!(reply.partial_success.unwrap().rejected_spans, 1);
}

/// `google.rpc.Status` as OTLP/HTTP error bodies carry it.
#[derive(Clone, PartialEq, prost::Message)]
struct RpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
}

/// Undecodable protobuf at `path`: 400 with a `google.rpc.Status` that says `says`.
async fn undecodable_protobuf_at(path: &str, says: &str) {
    let r = start().await;
    let (status, ct, reply) =
        post_to(r.http, path, "application/x-protobuf", None, vec![0xff; 16]).await;
    assert_eq!((status, ct.as_str()), (400, "application/x-protobuf"));
    let reply = RpcStatus::decode(&reply[..]).unwrap();
    assert_eq!(reply.code, 3);
    assert!(reply.message.contains(says), "{}", reply.message);
}

#[tokio::test]
async fn undecodable_protobuf_is_400_with_a_status_message() {
    undecodable_protobuf_at(TRACES, "OTLP/protobuf ExportTraceServiceRequest").await;
}

#[tokio::test]
async fn undecodable_protobuf_logs_are_400_with_a_status_message() {
    undecodable_protobuf_at(LOGS, "OTLP/protobuf ExportLogsServiceRequest").await;
}

/// Text that is not JSON at `path`: 400 with a JSON message.
async fn undecodable_json_at(path: &str) {
    let r = start().await;
    let (status, _, reply) = post_to(
        r.http,
        path,
        "application/json",
        None,
        b"{\"resourceSpans\":[".to_vec(),
    )
    .await;
    assert_eq!(status, 400);
    let reply: serde_json::Value = serde_json::from_slice(&reply).unwrap();
    assert!(
        reply["message"].as_str().unwrap().starts_with("not JSON"),
        "{reply}"
    );
}

#[tokio::test]
async fn undecodable_json_is_400_with_a_json_message() {
    undecodable_json_at(TRACES).await;
}

#[tokio::test]
async fn undecodable_json_logs_are_400_with_a_json_message() {
    undecodable_json_at(LOGS).await;
}

#[tokio::test]
async fn json_logs_of_the_wrong_shape_are_400_naming_the_field() {
    let r = start().await;
    let body = br#"{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":5}]}]}]}"#;
    let (status, _, reply) = post_to(r.http, LOGS, "application/json", None, body.to_vec()).await;
    assert_eq!(status, 400);
    let reply: serde_json::Value = serde_json::from_slice(&reply).unwrap();
    assert!(
        reply["message"]
            .as_str()
            .unwrap()
            .starts_with("not an OTLP/JSON ExportLogsServiceRequest: resourceLogs[0].scopeLogs[0].logRecords[0].body"),
        "{reply}"
    );
}

/// A body at `path` that says gzip and is not: 400.
async fn corrupt_gzip_at(path: &str) {
    let r = start().await;
    let (status, _, reply) = post_to(
        r.http,
        path,
        "application/json",
        Some("gzip"),
        b"not gzip at all".to_vec(),
    )
    .await;
    assert_eq!(status, 400);
    assert!(String::from_utf8_lossy(&reply).contains("does not decompress"));
}

#[tokio::test]
async fn a_corrupt_gzip_body_is_400() {
    corrupt_gzip_at(TRACES).await;
}

#[tokio::test]
async fn a_corrupt_gzip_body_of_logs_is_400() {
    corrupt_gzip_at(LOGS).await;
}

#[tokio::test]
async fn another_content_type_or_encoding_is_415() {
    let r = start().await;
    assert_eq!(post(r.http, "text/plain", None, b"x".to_vec()).await.0, 415);
    assert_eq!(
        post(r.http, "application/json", Some("br"), b"{}".to_vec())
            .await
            .0,
        415
    );
}

/// A gzip body at `path` that decompresses past the limit: 413.
async fn gzip_bomb_at(path: &str) {
    let r = start().await;
    // 21 MiB of zeros compress to about 21 KiB.
    let bomb = gzip(&vec![0u8; MAX_BODY + 1024 * 1024]);
    assert!(bomb.len() < 1024 * 1024);
    let (status, _, reply) =
        post_to(r.http, path, "application/x-protobuf", Some("gzip"), bomb).await;
    assert_eq!(status, 413);
    let reply = RpcStatus::decode(&reply[..]).unwrap();
    assert!(reply.message.contains("decompressed"), "{}", reply.message);
}

#[tokio::test]
async fn a_gzip_bomb_is_413() {
    gzip_bomb_at(TRACES).await;
}

#[tokio::test]
async fn a_gzip_bomb_of_logs_is_413() {
    gzip_bomb_at(LOGS).await;
}

/// Sends `head` (request line and headers) and then `body` on a raw connection; the status
/// code of the reply, read as soon as it comes.
async fn raw(addr: SocketAddr, head: &str, body: Option<Vec<u8>>) -> u16 {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    if let Some(body) = body {
        // The server may answer and close before reading it all.
        let _ = stream.write_all(&body).await;
    }
    let mut reply = vec![0u8; 64];
    let n = tokio::time::timeout(Duration::from_secs(30), stream.read(&mut reply))
        .await
        .expect("an answer without the body")
        .unwrap();
    let text = String::from_utf8_lossy(&reply[..n]).into_owned();
    text.split(' ').nth(1).unwrap().parse().unwrap()
}

/// A declared length over the limit at `path`: 413 before any body is sent.
async fn declared_length_over_the_limit_at(path: &str) {
    let r = start().await;
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/x-protobuf\r\ncontent-length: {}\r\n\r\n",
        MAX_BODY + 1
    );
    assert_eq!(raw(r.http, &head, None).await, 413);
}

#[tokio::test]
async fn a_declared_length_over_the_limit_is_413_before_any_body_is_sent() {
    declared_length_over_the_limit_at(TRACES).await;
}

#[tokio::test]
async fn a_declared_length_of_logs_over_the_limit_is_413_before_any_body_is_sent() {
    declared_length_over_the_limit_at(LOGS).await;
}

/// A chunked body over the limit at `path`: 413.
async fn chunked_body_over_the_limit_at(path: &str) {
    let r = start().await;
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/x-protobuf\r\ntransfer-encoding: chunked\r\n\r\n"
    );
    let size = MAX_BODY + 1;
    let mut body = format!("{size:x}\r\n").into_bytes();
    body.extend(std::iter::repeat_n(0u8, size));
    body.extend(b"\r\n0\r\n\r\n");
    assert_eq!(raw(r.http, &head, Some(body)).await, 413);
}

#[tokio::test]
async fn a_chunked_body_over_the_limit_is_413() {
    chunked_body_over_the_limit_at(TRACES).await;
}

#[tokio::test]
async fn a_chunked_body_of_logs_over_the_limit_is_413() {
    chunked_body_over_the_limit_at(LOGS).await;
}

// ---- gRPC with raw bytes: what no SDK would send ----

#[derive(Clone, Copy, Debug, Default)]
struct RawCodec;
#[derive(Debug)]
struct RawEncoder;
#[derive(Debug)]
struct ReplyDecoder;

impl tonic::codec::Codec for RawCodec {
    type Encode = Vec<u8>;
    type Decode = Vec<u8>;
    type Encoder = RawEncoder;
    type Decoder = ReplyDecoder;
    fn encoder(&mut self) -> RawEncoder {
        RawEncoder
    }
    fn decoder(&mut self) -> ReplyDecoder {
        ReplyDecoder
    }
}

impl tonic::codec::Encoder for RawEncoder {
    type Item = Vec<u8>;
    type Error = tonic::Status;
    fn encode(
        &mut self,
        item: Vec<u8>,
        dst: &mut tonic::codec::EncodeBuf<'_>,
    ) -> Result<(), tonic::Status> {
        bytes::BufMut::put_slice(dst, &item);
        Ok(())
    }
}

impl tonic::codec::Decoder for ReplyDecoder {
    type Item = Vec<u8>;
    type Error = tonic::Status;
    fn decode(
        &mut self,
        src: &mut tonic::codec::DecodeBuf<'_>,
    ) -> Result<Option<Self::Item>, tonic::Status> {
        use bytes::Buf as _;
        Ok(Some(src.copy_to_bytes(src.remaining()).to_vec()))
    }
}

async fn grpc_channel(addr: SocketAddr) -> tonic::transport::Channel {
    tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap()
}

/// `body` sent as the request message (framed, not compressed) on a new connection.
async fn grpc_raw(
    addr: SocketAddr,
    body: Vec<u8>,
) -> Result<ExportTraceServiceResponse, tonic::Status> {
    grpc_send(grpc_channel(addr).await, body).await
}

/// `body` sent as the request message on `channel`.
async fn grpc_send(
    channel: tonic::transport::Channel,
    body: Vec<u8>,
) -> Result<ExportTraceServiceResponse, tonic::Status> {
    let reply = grpc_send_to(channel, receive::grpc::EXPORT_PATH, body).await?;
    Ok(ExportTraceServiceResponse::decode(&reply[..]).unwrap())
}

/// `body` sent as the request message of method `path` on `channel`; the reply's bytes.
async fn grpc_send_to(
    channel: tonic::transport::Channel,
    path: &'static str,
    body: Vec<u8>,
) -> Result<Vec<u8>, tonic::Status> {
    let mut client = tonic::client::Grpc::new(channel);
    client.ready().await.unwrap();
    client
        .unary(
            tonic::Request::new(body),
            http::uri::PathAndQuery::from_static(path),
            RawCodec,
        )
        .await
        .map(tonic::Response::into_inner)
}

const GRPC_LOGS: &str = receive::grpc::LOGS_EXPORT_PATH;

/// Undecodable bytes sent to method `path`: `INVALID_ARGUMENT`, saying `says`.
async fn grpc_undecodable_at(path: &'static str, says: &str) {
    let r = start().await;
    let status = grpc_send_to(grpc_channel(r.grpc).await, path, vec![0xff; 16])
        .await
        .unwrap_err();
    assert_refused(&status, tonic::Code::InvalidArgument, says);
}

#[tokio::test]
async fn grpc_undecodable_bytes_are_invalid_argument() {
    grpc_undecodable_at(
        receive::grpc::EXPORT_PATH,
        "OTLP/protobuf ExportTraceServiceRequest",
    )
    .await;
}

#[tokio::test]
async fn grpc_undecodable_logs_are_invalid_argument() {
    grpc_undecodable_at(GRPC_LOGS, "OTLP/protobuf ExportLogsServiceRequest").await;
}

#[tokio::test]
async fn grpc_a_bad_span_gets_a_partial_success_and_the_rest_is_kept() {
    let mut r = start().await;
    let mut request = lens_watch::encode::to_request(
        &lens_watch::decode::decode_json(json_request(GOOD).as_bytes())
            .unwrap()
            .spans,
    );
    let mut bad = request.resource_spans[0].scope_spans[0].spans[0].clone();
    bad.trace_id.truncate(3);
    request.resource_spans[0].scope_spans[0].spans.push(bad);
    let reply = grpc_raw(r.grpc, request.encode_to_vec()).await.unwrap();
    assert_eq!(reply.partial_success.unwrap().rejected_spans, 1);
    let batch = r.batches.recv().await.unwrap();
    assert_eq!((batch.spans.len(), batch.rejected), (1, 1));
}

/// A clean request of one span, protobuf-encoded.
fn good_protobuf() -> Vec<u8> {
    lens_watch::encode::to_request(
        &lens_watch::decode::decode_json(json_request(GOOD).as_bytes())
            .unwrap()
            .spans,
    )
    .encode_to_vec()
}

/// `status` has `code` and a message that says `says`.
fn assert_refused(status: &tonic::Status, code: tonic::Code, says: &str) {
    assert_eq!(status.code(), code, "{status:?}");
    assert!(status.message().contains(says), "{}", status.message());
}

/// The receiver still serves: a clean export on `channel` (the connection that was refused) and
/// one on a new connection are both answered and delivered.
async fn grpc_still_serves(r: &mut Receivers, channel: tonic::transport::Channel) {
    for channel in [channel, grpc_channel(r.grpc).await] {
        let reply = grpc_send(channel, good_protobuf()).await.unwrap();
        assert_eq!(reply.partial_success, None);
        assert_eq!(r.batches.recv().await.unwrap().spans.len(), 1);
    }
    assert!(r.batches.try_recv().is_err(), "nothing else was delivered");
}

/// A message over the limit sent to method `path` is refused; the receiver keeps serving.
async fn grpc_over_the_limit_at(path: &'static str) {
    let mut r = start().await;
    let channel = grpc_channel(r.grpc).await;
    // tonic refuses a message by the length in its frame header, before reading its body
    // (`tonic/src/codec/decode.rs`, `StreamingInner::decode_chunk`: `if len > limit` returns
    // `Status::out_of_range`, with the limit set by `Grpc::max_decoding_message_size`).
    let status = grpc_send_to(channel.clone(), path, vec![0u8; MAX_BODY + 1])
        .await
        .unwrap_err();
    assert_refused(
        &status,
        tonic::Code::OutOfRange,
        &format!("the limit is: {MAX_BODY} bytes"),
    );
    grpc_still_serves(&mut r, channel).await;
}

#[tokio::test]
async fn grpc_a_message_over_the_limit_is_refused_and_the_receiver_keeps_serving() {
    grpc_over_the_limit_at(receive::grpc::EXPORT_PATH).await;
}

#[tokio::test]
async fn grpc_logs_over_the_limit_are_refused_and_the_receiver_keeps_serving() {
    grpc_over_the_limit_at(GRPC_LOGS).await;
}

/// A gzip body that decompresses to `mib` MiB of zeros, built without compressing them: one MiB
/// of zeros deflated once into a byte-aligned, non-final block (which back-references only
/// zeros, so it can follow itself), repeated, then the final empty block. Its CRC-32 trailer is
/// left zero: a receiver that keeps to the limit never reaches it.
fn gzip_bomb(mib: usize) -> Vec<u8> {
    let mut deflate = flate2::Compress::new(flate2::Compression::best(), false);
    let mut block = Vec::with_capacity(64 * 1024);
    let status = deflate
        .compress_vec(&vec![0u8; 1 << 20], &mut block, flate2::FlushCompress::Full)
        .unwrap();
    assert_eq!((status, deflate.total_in()), (flate2::Status::Ok, 1 << 20));
    let mut body = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    for _ in 0..mib {
        body.extend_from_slice(&block);
    }
    // The final block (fixed Huffman, end of block only), then CRC-32 and length.
    body.extend_from_slice(&[0x03, 0x00]);
    body.extend_from_slice(&[0; 4]);
    body.extend_from_slice(
        &u32::try_from((mib << 20) & 0xffff_ffff)
            .unwrap()
            .to_le_bytes(),
    );
    body
}

/// The process's peak resident memory (Linux: `VmHWM`), in bytes.
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// A gzip bomb sent to method `path` is refused without being decompressed whole.
async fn grpc_gzip_bomb_at(path: &str) {
    use tonic::client::GrpcService as _;

    let mut r = start().await;
    // 1 GiB of zeros in about 1 MiB of gzip.
    let bomb = gzip_bomb(1024);
    assert!(bomb.len() < 2 << 20, "{}", bomb.len());
    let mut frame = vec![1u8]; // compressed, as `grpc-encoding` says
    frame.extend_from_slice(&u32::try_from(bomb.len()).unwrap().to_be_bytes());
    frame.extend_from_slice(&bomb);
    drop(bomb);

    let mut channel = grpc_channel(r.grpc).await;
    let request = http::Request::post(format!("http://{}{path}", r.grpc))
        .header("content-type", "application/grpc")
        .header("grpc-encoding", "gzip")
        .header("te", "trailers")
        .body(tonic::body::Body::new(http_body_util::Full::new(
            bytes::Bytes::from(frame),
        )))
        .unwrap();
    let before = peak_rss();
    std::future::poll_fn(|cx| channel.poll_ready(cx))
        .await
        .unwrap();
    let response = channel.call(request).await.unwrap();
    let after = peak_rss();
    // An error before any message: the status is in the headers (a trailers-only response).
    assert_eq!(response.status(), 200);
    let status = tonic::Status::from_header_map(response.headers()).unwrap();
    // tonic decompresses into a buffer limited to the decoding limit and stops there
    // (`tonic/src/codec/decode.rs`, `decode_chunk`: `decompress_buf.limit(limit)`; a full buffer is
    // `WriteZero`, answered `Status::resource_exhausted`): at most MAX_BODY bytes of the GiB.
    assert_refused(
        &status,
        tonic::Code::ResourceExhausted,
        &format!("size limit, of {MAX_BODY} bytes"),
    );
    // Decompressed whole, the GiB would have raised the peak by at least that much.
    if let (Some(before), Some(after)) = (before, after) {
        assert!(
            after - before < 512 << 20,
            "peak memory rose by {} MiB",
            (after - before) >> 20
        );
    }
    grpc_still_serves(&mut r, channel).await;
}

#[tokio::test]
async fn grpc_a_gzip_bomb_is_refused_without_decompressing_it_whole() {
    grpc_gzip_bomb_at(receive::grpc::EXPORT_PATH).await;
}

#[tokio::test]
async fn grpc_a_gzip_bomb_of_logs_is_refused_without_decompressing_it_whole() {
    grpc_gzip_bomb_at(GRPC_LOGS).await;
}

/// An OTLP/JSON request of 600 spans with long names (over 100 KiB).
fn large_json_request() -> String {
    let spans: Vec<String> = (0..600)
        .map(|i| {
            GOOD.replace("00f067aa0ba902b7", &format!("{:016x}", i + 1))
                .replace("\"ok\"", &format!("\"{}\"", "x".repeat(200)))
        })
        .collect();
    json_request(&spans.join(","))
}

#[tokio::test]
async fn a_large_gzip_body_is_decoded_whole() {
    let mut r = start().await;
    // Over the size decoded on a blocking thread, compressed and not.
    let body = large_json_request();
    assert!(body.len() > 100 * 1024);
    for encoding in [None, Some("gzip")] {
        let bytes = match encoding {
            Some(_) => gzip(body.as_bytes()),
            None => body.clone().into_bytes(),
        };
        let (status, _, reply) = post(r.http, "application/json", encoding, bytes).await;
        assert_eq!((status, reply.as_slice()), (200, &b"{}"[..]));
        assert_eq!(r.batches.recv().await.unwrap().spans.len(), 600);
    }
}

#[tokio::test]
async fn grpc_a_large_request_is_decoded_whole_and_large_garbage_is_invalid_argument() {
    let mut r = start().await;
    // Over the size decoded on a blocking thread, with one bad span among 600.
    let batch = lens_watch::decode::decode_json(large_json_request().as_bytes()).unwrap();
    let mut request = lens_watch::encode::to_request(&batch.spans);
    let mut bad = request.resource_spans[0].scope_spans[0].spans[0].clone();
    bad.span_id.truncate(3);
    request.resource_spans[0].scope_spans[0].spans.push(bad);
    let body = request.encode_to_vec();
    assert!(body.len() > 100 * 1024, "{}", body.len());
    let reply = grpc_raw(r.grpc, body).await.unwrap();
    assert_eq!(reply.partial_success.unwrap().rejected_spans, 1);
    let batch = r.batches.recv().await.unwrap();
    assert_eq!((batch.spans.len(), batch.rejected), (600, 1));

    let status = grpc_raw(r.grpc, vec![0xff; 100 * 1024]).await.unwrap_err();
    assert_refused(&status, tonic::Code::InvalidArgument, "OTLP/protobuf");
    assert!(r.batches.try_recv().is_err());
}
