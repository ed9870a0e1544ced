//! `cargo xtask bench watch` (second part): what lens-watch costs beyond time per batch.
//!
//! * Memory held per stored span: a counting global allocator measures the live heap before and
//!   after 40 batches of the fixture (20,480 spans: 10 attributes, one event) are decoded from
//!   protobuf and held by an [`Assembler`]; printed as bytes per span.
//! * What a sender waits for: opentelemetry-otlp's exporter (the call the SDK's batch span
//!   processor makes) sending batches of 512 such spans over loopback to the OTLP/gRPC and
//!   OTLP/HTTP receivers, which decode and hand them to an assembling task; 200 timed exports per
//!   transport after 20 warm-up ones; printed as the 50th, 95th and 99th percentile. Beside them,
//!   the floor: the same exports over OTLP/HTTP to a server that reads the body and answers at
//!   once, decoding nothing (what the SDK's own encoding and the loopback cost), and to one that
//!   answers after a prost decode of the body (the least a reply that says which spans were
//!   rejected costs when it decodes the request first).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::Future;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lens_watch::assemble::{Assembler, Config};
use lens_watch::decode::decode_protobuf;
use lens_watch::{encode, receive};
use opentelemetry::KeyValue;
use opentelemetry::trace::{
    Span as _, SpanContext, TraceContextExt as _, TraceFlags, TraceId, TraceState, Tracer as _,
    TracerProvider as _,
};
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter as _};
use prost::Message as _;

#[path = "support/fixture.rs"]
mod fixture;

/// The system allocator, keeping the count of live bytes.
struct Counting;

static LIVE: AtomicI64 = AtomicI64::new(0);

// SAFETY: every call goes to `System` unchanged; the counter is an atomic, which neither
// allocates nor unwinds.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc`, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: the caller's contract for `dealloc`, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        // SAFETY: the caller's contract for `realloc`, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn memory_per_span() {
    const BATCHES: u64 = 40;
    let requests: Vec<Vec<u8>> = (0..BATCHES)
        .map(|n| encode::to_request(&fixture::spans(n)).encode_to_vec())
        .collect();
    let before = LIVE.load(Ordering::Relaxed);
    let mut assembler = Assembler::new(Config::default());
    let now = Instant::now();
    for bytes in &requests {
        assembler.insert(decode_protobuf(bytes).unwrap().spans, now);
    }
    let held = LIVE.load(Ordering::Relaxed) - before;
    let stats = assembler.stats();
    assert_eq!(stats.spans, BATCHES as usize * fixture::BATCH);
    assert_eq!(stats.evicted_spans + stats.dropped_spans, 0);
    println!(
        "memory held: {} bytes for {} spans in {} traces = {:.0} bytes per span (10 attributes, one event)",
        held,
        stats.spans,
        stats.traces,
        held as f64 / stats.spans as f64
    );
}

/// Keeps what the SDK hands it.
#[derive(Clone, Debug, Default)]
struct Keep(Arc<Mutex<Vec<SpanData>>>);

impl opentelemetry_sdk::trace::SpanExporter for Keep {
    fn export(&self, batch: Vec<SpanData>) -> impl Future<Output = OTelSdkResult> + Send {
        self.0.lock().unwrap().extend(batch);
        std::future::ready(Ok(()))
    }
}

/// 512 SDK spans like the fixture's: 10 attributes, one event, 8 traces of 64.
fn sdk_batch() -> Vec<SpanData> {
    let keep = Keep::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(keep.clone())
        .build();
    let tracer = provider.tracer("opentelemetry-instrumentation-fastapi");
    for _ in 0..fixture::BATCH / fixture::PER_TRACE {
        let root = tracer.start("POST /v1/stage");
        let cx = opentelemetry::Context::current().with_span(root);
        for i in 1..fixture::PER_TRACE {
            let mut span = tracer.start_with_context(format!("POST /v1/stage/{}", i % 7), &cx);
            span.set_attributes([
                KeyValue::new("http.request.method", "POST"),
                KeyValue::new(
                    "url.full",
                    format!("http://planner.internal:8080/v1/stage/{}", i % 7),
                ),
                KeyValue::new("url.path", format!("/v1/stage/{}", i % 7)),
                KeyValue::new("http.route", "/v1/stage/{id}"),
                KeyValue::new("server.address", "planner.internal"),
                KeyValue::new("server.port", 8080_i64),
                KeyValue::new("http.response.status_code", 200_i64),
                KeyValue::new("network.protocol.version", "1.1"),
                KeyValue::new("user_agent.original", "python-requests/2.34.2"),
                KeyValue::new("lens.request.tokens", 1024_i64),
            ]);
            span.add_event(
                "first token",
                vec![KeyValue::new("gen_ai.token.index", 0_i64)],
            );
            span.end();
        }
        cx.span().end();
    }
    provider.shutdown().unwrap();
    let spans = keep.0.lock().unwrap().clone();
    assert_eq!(spans.len(), fixture::BATCH);
    spans
}

/// `batch` moved to fresh trace ids (the `n`th export), so that every export is new traces.
fn renumber(batch: &[SpanData], n: u128) -> Vec<SpanData> {
    batch
        .iter()
        .map(|s| {
            let mut s = s.clone();
            let old = s.span_context.trace_id();
            let id = TraceId::from(u128::from_be_bytes(old.to_bytes()) ^ (n << 64));
            s.span_context = SpanContext::new(
                id,
                s.span_context.span_id(),
                TraceFlags::SAMPLED,
                false,
                TraceState::NONE,
            );
            s
        })
        .collect()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

async fn export_latency() {
    let (sender, mut batches) = tokio::sync::mpsc::channel(256);
    let grpc = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let http = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (grpc_addr, http_addr) = (grpc.local_addr().unwrap(), http.local_addr().unwrap());
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
    let assembled = tokio::spawn(async move {
        let mut assembler = Assembler::new(Config::default());
        while let Some(batch) = batches.recv().await {
            assembler.insert(batch.spans, Instant::now());
            assembler.poll(Instant::now());
        }
        assembler.stats()
    });

    // The floor: a server that takes the body and answers, decoding nothing; and on
    // `/decode/v1/traces`, the same after a prost decode of the body (what any reply that has
    // decoded the request, to say which spans it rejected, costs at least).
    let floor = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let floor_addr = floor.local_addr().unwrap();
    let discard = axum::Router::new()
        .route(
            "/v1/traces",
            axum::routing::post(|body: axum::body::Bytes| async move {
                std::hint::black_box(body.len());
                (
                    [("content-type", "application/x-protobuf")],
                    Vec::<u8>::new(),
                )
            }),
        )
        .route(
            "/decode/v1/traces",
            axum::routing::post(|body: axum::body::Bytes| async move {
                let request = ExportTraceServiceRequest::decode(&body[..]).unwrap();
                std::hint::black_box(request.resource_spans.len());
                (
                    [("content-type", "application/x-protobuf")],
                    Vec::<u8>::new(),
                )
            }),
        );
    tokio::spawn(receive::http::serve(floor, discard, std::future::pending()));

    let batch = sdk_batch();
    for transport in [
        "grpc",
        "http/protobuf",
        "http/protobuf (floor: no decoding)",
        "http/protobuf (floor + prost decode)",
    ] {
        let builder = opentelemetry_otlp::SpanExporter::builder();
        let exporter = if transport == "grpc" {
            builder
                .with_tonic()
                .with_endpoint(format!("http://{grpc_addr}"))
                .build()
        } else {
            let endpoint = match transport {
                "http/protobuf" => format!("http://{http_addr}/v1/traces"),
                "http/protobuf (floor: no decoding)" => format!("http://{floor_addr}/v1/traces"),
                _ => format!("http://{floor_addr}/decode/v1/traces"),
            };
            builder
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_endpoint(endpoint)
                .build()
        };
        let exporter = exporter.unwrap();
        let mut times = Vec::new();
        for n in 0..220u128 {
            let spans = renumber(&batch, n + 1000 * transport.len() as u128);
            let started = Instant::now();
            exporter.export(spans).await.unwrap();
            if n >= 20 {
                times.push(started.elapsed());
            }
        }
        times.sort();
        println!(
            "export of 512 spans over OTLP/{transport} (loopback): p50 {:?}, p95 {:?}, p99 {:?} ({} exports)",
            percentile(&times, 0.5),
            percentile(&times, 0.95),
            percentile(&times, 0.99),
            times.len()
        );
    }
    drop(assembled);
}

fn main() {
    // `cargo test --benches` runs bench binaries with `--test`-like arguments: keep it quick.
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return;
    }
    memory_per_span();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(export_latency());
}
