//! `lens demo --otlp URL` with `OTEL_EXPORTER_OTLP_PROTOCOL=grpc`: the spans and the metrics
//! reach an OTLP/gRPC collector (a small tonic server on 127.0.0.1 port 0, with
//! opentelemetry-proto's service definitions), one export per service; headers from
//! `OTEL_EXPORTER_OTLP_HEADERS` go with them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod demo_support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use demo_support::{SPANS_PER_TRACE, run_with_env, stderr};
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;

#[derive(Default)]
struct Received {
    requests: Vec<ExportTraceServiceRequest>,
    api_keys: Vec<String>,
    metrics: Vec<ExportMetricsServiceRequest>,
}

#[derive(Clone, Default)]
struct Collector(Arc<Mutex<Received>>);

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut received = self.0.lock().unwrap();
        if let Some(key) = request.metadata().get("x-api-key") {
            received
                .api_keys
                .push(key.to_str().unwrap_or("").to_owned());
        }
        received.requests.push(request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl MetricsService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        self.0.lock().unwrap().metrics.push(request.into_inner());
        Ok(tonic::Response::new(ExportMetricsServiceResponse::default()))
    }
}

async fn collector() -> (SocketAddr, Collector) {
    let collector = Collector::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = TraceServiceServer::new(collector.clone());
    let metrics = MetricsServiceServer::new(collector.clone());
    tokio::spawn(async move {
        tonic::transport::Server::builder()
            .add_service(service)
            .add_service(metrics)
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
            .await
            .unwrap();
    });
    (addr, collector)
}

/// The `service.name` among `attributes` (a resource's).
fn service_name(attributes: &[KeyValue]) -> Option<String> {
    attributes
        .iter()
        .filter(|kv| kv.key == "service.name")
        .find_map(|kv| match kv.value.as_ref()?.value.as_ref()? {
            AnyValue::StringValue(s) => Some(s.clone()),
            _ => None,
        })
}

/// The `service.name` of every resource in `request`.
fn service_names(request: &ExportTraceServiceRequest) -> Vec<String> {
    request
        .resource_spans
        .iter()
        .filter_map(|rs| rs.resource.as_ref())
        .filter_map(|r| service_name(&r.attributes))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_protocol_sends_the_spans_to_a_grpc_collector() {
    let (addr, collector) = collector().await;
    let url = format!("http://{addr}");
    let output = tokio::task::spawn_blocking(move || {
        run_with_env(
            &["--otlp", &url],
            &[
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
                ("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=secret%20one"),
            ],
        )
    })
    .await
    .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains(&format!(
            "exported {SPANS_PER_TRACE} spans to http://{addr}"
        )),
        "{err}"
    );
    assert!(!err.contains("warning"), "{err}");

    let received = collector.0.lock().unwrap();
    // One export per service: lens-demo, gateway, planner, trainer, rollout-worker, 4 ranks.
    assert_eq!(received.requests.len(), 9);
    let spans: Vec<String> = received
        .requests
        .iter()
        .flat_map(|r| r.resource_spans.iter())
        .flat_map(|rs| rs.scope_spans.iter())
        .flat_map(|ss| ss.spans.iter())
        .map(|s| s.name.clone())
        .collect();
    assert_eq!(spans.len(), SPANS_PER_TRACE, "{spans:?}");
    for name in [
        "demo request",
        "POST /v1/train",
        "lens.demo.Trainer/Step",
        "pp_stage 3",
    ] {
        assert!(spans.iter().any(|s| s == name), "{name} in {spans:?}");
    }
    let services: Vec<String> = received.requests.iter().flat_map(service_names).collect();
    for service in ["lens-demo", "gateway", "trainer", "trainer-rank-2"] {
        assert!(
            services.iter().any(|s| s == service),
            "{service} in {services:?}"
        );
    }
    // OTEL_EXPORTER_OTLP_HEADERS, URL-decoded as the SDKs do, on every export.
    assert_eq!(received.api_keys.len(), 9);
    assert!(received.api_keys.iter().all(|k| k == "secret one"));

    // The metrics over the same protocol: one export per service that records any, its
    // resource the tracer provider's, one request per hop in each duration histogram.
    assert!(
        err.contains(&format!(
            "exported the metrics of 4 services to http://{addr}"
        )),
        "{err}"
    );
    let mut histograms: Vec<(String, String, String, u64)> = Vec::new();
    for request in &received.metrics {
        for rm in &request.resource_metrics {
            let service = service_name(&rm.resource.as_ref().unwrap().attributes).unwrap();
            for metric in rm.scope_metrics.iter().flat_map(|s| &s.metrics) {
                if let Some(Data::Histogram(h)) = &metric.data {
                    let count = h.data_points.iter().map(|p| p.count).sum();
                    histograms.push((
                        service.clone(),
                        metric.name.clone(),
                        metric.unit.clone(),
                        count,
                    ));
                }
            }
        }
    }
    histograms.sort();
    let expected = [
        ("gateway", "http.client.request.duration", "s"),
        ("gateway", "http.server.request.duration", "s"),
        ("lens-demo", "http.client.request.duration", "s"),
        ("planner", "http.server.request.duration", "s"),
        ("planner", "rpc.client.duration", "ms"),
        ("trainer", "rpc.server.duration", "ms"),
    ];
    let expected: Vec<(String, String, String, u64)> = expected
        .iter()
        .map(|(s, n, u)| (s.to_string(), n.to_string(), u.to_string(), 1))
        .collect();
    assert_eq!(histograms, expected);
}
