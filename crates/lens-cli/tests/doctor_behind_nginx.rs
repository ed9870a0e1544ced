//! The doctor behind a stock load balancer: Debian's nginx, as shipped, round robin over three
//! lens replicas, the third reached through a second nginx server that drops the trace headers
//! (an old sidecar). A lens client sends requests one at a time through the balancer; every
//! service exports its spans over OTLP/HTTP into `lens watch --save`, and `lens check` on the
//! saved file must find exactly the requests that reached the third replica, naming it, though
//! the client called the balancer's address and the replicas report their own (or the Host
//! nginx sent: the upstream's name). HTTP (`proxy_pass http://pool;`, `proxy_set_header
//! traceparent "";`) and gRPC (`grpc_pass grpc://pool;`, `grpc_set_header traceparent "";`).
//!
//! nginx runs unprivileged-friendly: its own prefix, temp directories, pid file and error log in
//! a fresh directory, `daemon off; master_process off;`, on free ports of 127.0.0.1 (nginx
//! cannot be given port 0: a port is taken free from the system, then handed to it). Without
//! nginx the tests skip with a note, unless `LENS_NGINX=require` (CI), when they fail.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod watch_support;

use std::convert::Infallible;
use std::future::Future;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{RawQuery, State};
use axum::routing::get;
use lens_tonic::JsonCodec;
use opentelemetry::KeyValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use serde_json::Value;
use tonic::body::Body;
use tonic::server::{NamedService, UnaryService};
use tower_layer::Layer as _;
use watch_support::{PATIENCE, Watch, command};

/// The environment variable that makes a missing nginx a failure.
const REQUIRE_ENV: &str = "LENS_NGINX";

/// Requests sent through the balancer, one at a time: a third of them reach the replica behind
/// the dropping proxy.
const REQUESTS: usize = 30;

// ---- nginx ----

/// A running nginx in a directory of its own, stopped (and the directory removed) when dropped.
struct Nginx {
    child: Child,
    dir: PathBuf,
}

/// nginx's binary: on `PATH`, else where Debian installs it (`/usr/sbin` is not on a user's
/// `PATH`).
fn nginx_binary() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("nginx"))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| {
        let debian = PathBuf::from("/usr/sbin/nginx");
        debian.is_file().then_some(debian)
    })
}

/// A port of 127.0.0.1 free now (for nginx, which cannot be given port 0).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Nginx {
    /// nginx with `http` as its `http { }` block, listening on `ports`; `None` (and a note)
    /// without nginx unless `LENS_NGINX=require`.
    fn start(name: &str, http: &str, ports: &[u16]) -> Option<Nginx> {
        let Some(binary) = nginx_binary() else {
            if std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "require") {
                panic!("nginx is not installed (apt-get install nginx), and {REQUIRE_ENV}=require");
            }
            eprintln!(
                "skipped: nginx is not installed (apt-get install nginx; {REQUIRE_ENV}=require \
                 makes this a failure)"
            );
            return None;
        };
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("lens-nginx-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let d = dir.display();
        let conf = format!(
            "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
error_log {d}/error.log warn;\nevents {{ worker_connections 256; }}\nhttp {{\n\
access_log off;\nclient_body_temp_path {d}/client_body;\nproxy_temp_path {d}/proxy;\n\
fastcgi_temp_path {d}/fastcgi;\nuwsgi_temp_path {d}/uwsgi;\nscgi_temp_path {d}/scgi;\n{http}\n}}\n"
        );
        std::fs::write(dir.join("nginx.conf"), conf).unwrap();
        let child = Command::new(binary)
            .arg("-p")
            .arg(&dir)
            .arg("-c")
            .arg(dir.join("nginx.conf"))
            .arg("-e")
            .arg(dir.join("error.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut nginx = Nginx { child, dir };
        let deadline = Instant::now() + PATIENCE;
        for port in ports {
            while TcpStream::connect(("127.0.0.1", *port)).is_err() {
                if let Some(status) = nginx.child.try_wait().unwrap() {
                    panic!("nginx exited ({status}): {}", nginx.log());
                }
                assert!(
                    Instant::now() < deadline,
                    "nginx does not listen on {port}: {}",
                    nginx.log()
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Some(nginx)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

// ---- services and their spans ----

/// Every span a service's provider ended, kept until they are exported.
#[derive(Clone, Debug, Default)]
struct Kept(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Kept {
    fn export(&self, batch: Vec<SpanData>) -> impl Future<Output = OTelSdkResult> + Send {
        self.0.lock().unwrap().extend(batch);
        std::future::ready(Ok(()))
    }
}

/// One service instance: its provider, the spans it ended, and its resource (`service.name`,
/// `service.instance.id` when given).
struct Service {
    provider: SdkTracerProvider,
    kept: Kept,
    resource: Resource,
}

impl Service {
    fn new(name: &'static str, instance: Option<&str>) -> Self {
        let mut resource = Resource::builder_empty().with_service_name(name);
        if let Some(instance) = instance {
            resource =
                resource.with_attribute(KeyValue::new("service.instance.id", instance.to_owned()));
        }
        let resource = resource.build();
        let kept = Kept::default();
        let provider = SdkTracerProvider::builder()
            .with_resource(resource.clone())
            .with_simple_exporter(kept.clone())
            .build();
        Service {
            provider,
            kept,
            resource,
        }
    }

    fn tracer(&self) -> opentelemetry_sdk::trace::SdkTracer {
        self.provider.tracer("lens")
    }

    fn count(&self) -> usize {
        self.kept.0.lock().unwrap().len()
    }

    /// Sends the spans ended so far to `lens watch`'s OTLP/HTTP receiver at `http`.
    async fn export_to(&self, http: &str) {
        let spans = std::mem::take(&mut *self.kept.0.lock().unwrap());
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(format!("http://{http}/v1/traces"))
            .build()
            .unwrap();
        exporter.set_resource(&self.resource);
        exporter.export(spans).await.unwrap();
    }
}

/// Waits until `services` have ended `spans` spans in all (a server span ends as its response
/// goes, maybe after the client has it).
async fn ended(services: &[&Service], spans: usize) {
    let deadline = Instant::now() + PATIENCE;
    while services.iter().map(|s| s.count()).sum::<usize>() < spans {
        assert!(Instant::now() < deadline, "spans did not end");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The spans of `services` through `lens watch --save`, then `lens check --json` on the file:
/// its exit code and its findings.
async fn check_saved(name: &str, services: &[&Service]) -> (Option<i32>, Vec<Value>) {
    let file = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("lens-nginx-{name}-{}.jsonl", std::process::id()));
    let _ = std::fs::remove_file(&file);
    let watch = Watch::start(&["--save", file.to_str().unwrap()]);
    for service in services {
        service.export_to(&watch.http).await;
    }
    let stopped = tokio::task::block_in_place(|| watch.stop("INT"));
    assert!(stopped.status.success(), "{:?}", stopped.stderr);
    let output = command(&["check", "--json", file.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&file);
    let findings = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v.get("finding").is_some())
        .collect();
    (output.status.code(), findings)
}

/// The hex trace id of a span.
fn trace_of(span: &SpanData) -> String {
    span.span_context.trace_id().to_string()
}

/// Asserts that `findings` are one `lost-context` for each of the `lost` client traces, from
/// `client` to `server` on instance `relay-3`; paired by request and time when `by_request`
/// (the two sides name different addresses), else by an address nothing contradicts.
fn assert_found_exactly(
    findings: &[Value],
    lost: &[String],
    (client, server): (&str, &str),
    by_request: bool,
) {
    let errors: Vec<&Value> = findings
        .iter()
        .filter(|f| f["severity"] == "error")
        .collect();
    assert_eq!(errors.len(), lost.len(), "{findings:#?}");
    let mut found: Vec<String> = errors
        .iter()
        .map(|f| {
            assert_eq!(f["finding"], "lost-context", "{f:#}");
            assert_eq!(f["services"], serde_json::json!([client, server]), "{f:#}");
            let message = f["message"].as_str().unwrap();
            assert!(
                message.starts_with(&format!(
                    "context lost on {client} -> {server} (instance relay-3): "
                )),
                "{message}"
            );
            assert_eq!(
                message.contains(
                    "paired by request and time (behind a proxy or load balancer: the addresses \
differ)"
                ),
                by_request,
                "{message}"
            );
            assert!(message.contains("received no traceparent"), "{message}");
            f["trace_ids"][0].as_str().unwrap().to_owned()
        })
        .collect();
    found.sort();
    let mut lost = lost.to_vec();
    lost.sort();
    assert_eq!(found, lost);
    // Nothing else: no warning (the requests went one at a time), no finding on the replicas
    // that continued the trace.
    assert_eq!(findings.len(), lost.len(), "{findings:#?}");
}

// ---- HTTP: axum replicas behind proxy_pass ----

/// A replica: records the query of each request it served.
#[derive(Clone)]
struct Replica {
    served: Arc<Mutex<Vec<String>>>,
}

async fn relay(State(replica): State<Replica>, RawQuery(query): RawQuery) -> &'static str {
    replica
        .served
        .lock()
        .unwrap()
        .push(query.unwrap_or_default());
    "relayed"
}

async fn serve_replica(service: &Service) -> (SocketAddr, Replica) {
    let replica = Replica {
        served: Arc::default(),
    };
    let app = Router::new()
        .route("/relay", get(relay))
        .with_state(replica.clone())
        .layer(lens_axum::ServerLayer::new().with_tracer(service.tracer()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap();
    });
    (addr, replica)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_nginx_round_robin_the_requests_to_the_dropping_replica_are_found() {
    let client = Service::new("lens-client", None);
    let replicas = [
        Service::new("rust-relay", Some("relay-1")),
        Service::new("rust-relay", Some("relay-2")),
        Service::new("rust-relay", Some("relay-3")),
    ];
    let mut addrs = Vec::new();
    let mut served = Vec::new();
    for service in &replicas {
        let (addr, replica) = serve_replica(service).await;
        addrs.push(addr);
        served.push(replica);
    }
    let (balancer, sidecar) = (free_port(), free_port());
    // As shipped: `proxy_pass http://pool;` (Host: pool); the sidecar before the third replica
    // drops every trace header.
    let http = format!(
        "upstream pool {{ server {}; server {}; server 127.0.0.1:{sidecar}; }}\n\
server {{ listen 127.0.0.1:{balancer}; location / {{ proxy_pass http://pool; }} }}\n\
server {{ listen 127.0.0.1:{sidecar}; location / {{ proxy_pass http://{};\n\
proxy_set_header traceparent \"\"; proxy_set_header tracestate \"\"; \
proxy_set_header baggage \"\"; }} }}",
        addrs[0], addrs[1], addrs[2]
    );
    let Some(nginx) = Nginx::start("http", &http, &[balancer, sidecar]) else {
        return;
    };
    let http_client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(lens_reqwest::ClientMiddleware::new().with_tracer(client.tracer()))
        .build();
    for n in 1..=REQUESTS {
        let response = http_client
            .get(format!("http://127.0.0.1:{balancer}/relay?n={n}"))
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "{}", nginx.log());
        assert_eq!(response.text().await.unwrap(), "relayed");
    }
    let all: Vec<&Service> = std::iter::once(&client).chain(&replicas).collect();
    ended(&all, 2 * REQUESTS).await;
    // Round robin: a third each.
    for replica in &served {
        assert_eq!(replica.served.lock().unwrap().len(), REQUESTS / 3);
    }
    // The client traces of the requests the third replica served.
    let third = served[2].served.lock().unwrap().clone();
    let lost: Vec<String> = client
        .kept
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|span| {
            span.attributes.iter().any(|kv| {
                kv.key.as_str() == "url.full"
                    && third.iter().any(|q| {
                        kv.value.as_str() == format!("http://127.0.0.1:{balancer}/relay?{q}")
                    })
            })
        })
        .map(trace_of)
        .collect();
    assert_eq!(lost.len(), REQUESTS / 3);
    drop(nginx);
    let (code, findings) = check_saved("http", &all).await;
    // The client called 127.0.0.1:<balancer>; the replicas saw `Host: pool` (port 80).
    assert_found_exactly(&findings, &lost, ("lens-client", "rust-relay"), true);
    assert_eq!(code, Some(1));
}

// ---- gRPC: tonic servers behind grpc_pass ----

const FORWARD: &str = "/lens.relay.Relay/Forward";

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// A gRPC replica: `lens.relay.Relay/Forward` records the message it served and echoes it.
#[derive(Clone)]
struct GrpcReplica {
    served: Arc<Mutex<Vec<String>>>,
}

impl NamedService for GrpcReplica {
    const NAME: &'static str = "lens.relay.Relay";
}

impl UnaryService<String> for GrpcReplica {
    type Response = String;
    type Future = BoxFuture<Result<tonic::Response<String>, tonic::Status>>;

    fn call(&mut self, request: tonic::Request<String>) -> Self::Future {
        let message = request.into_inner();
        self.served.lock().unwrap().push(message.clone());
        Box::pin(async move { Ok(tonic::Response::new(message)) })
    }
}

impl tower_service::Service<http::Request<Body>> for GrpcReplica {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<http::Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let replica = self.clone();
        match request.uri().path() {
            FORWARD => Box::pin(async move {
                let mut grpc = tonic::server::Grpc::new(JsonCodec::<String, String>::new());
                Ok(grpc.unary(replica, request).await)
            }),
            _ => Box::pin(
                async move { Ok(tonic::Status::unimplemented("no such method").into_http()) },
            ),
        }
    }
}

async fn serve_grpc_replica(service: &Service) -> (SocketAddr, GrpcReplica) {
    let replica = GrpcReplica {
        served: Arc::default(),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    let layer = lens_tonic::ServerLayer::new().with_tracer(service.tracer());
    let served = replica.clone();
    tokio::spawn(async move {
        tonic::transport::Server::builder()
            .layer(layer)
            .serve_with_incoming(served, incoming)
            .await
            .unwrap();
    });
    (addr, replica)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_nginx_grpc_pass_the_calls_to_the_dropping_replica_are_found() {
    let client = Service::new("lens-grpc-client", None);
    let replicas = [
        Service::new("rust-trainer", Some("relay-1")),
        Service::new("rust-trainer", Some("relay-2")),
        Service::new("rust-trainer", Some("relay-3")),
    ];
    let mut addrs = Vec::new();
    let mut served = Vec::new();
    for service in &replicas {
        let (addr, replica) = serve_grpc_replica(service).await;
        addrs.push(addr);
        served.push(replica);
    }
    let (balancer, sidecar) = (free_port(), free_port());
    let http = format!(
        "upstream gpool {{ server {}; server {}; server 127.0.0.1:{sidecar}; }}\n\
server {{ listen 127.0.0.1:{balancer} http2; location / {{ grpc_pass grpc://gpool; }} }}\n\
server {{ listen 127.0.0.1:{sidecar} http2; location / {{ grpc_pass grpc://{};\n\
grpc_set_header traceparent \"\"; grpc_set_header tracestate \"\"; \
grpc_set_header baggage \"\"; }} }}",
        addrs[0], addrs[1], addrs[2]
    );
    let Some(nginx) = Nginx::start("grpc", &http, &[balancer, sidecar]) else {
        return;
    };
    let channel = tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{balancer}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let channel = lens_tonic::ClientLayer::new()
        .with_tracer(client.tracer())
        .layer(channel);
    let mut grpc = tonic::client::Grpc::new(channel);
    for n in 1..=REQUESTS {
        grpc.ready().await.unwrap();
        let reply = grpc
            .unary(
                tonic::Request::new(format!("call {n}")),
                http::uri::PathAndQuery::from_static(FORWARD),
                JsonCodec::<String, String>::new(),
            )
            .await
            .unwrap_or_else(|e| panic!("{e}: {}", nginx.log()));
        assert_eq!(reply.into_inner(), format!("call {n}"));
    }
    let all: Vec<&Service> = std::iter::once(&client).chain(&replicas).collect();
    ended(&all, 2 * REQUESTS).await;
    for replica in &served {
        assert_eq!(replica.served.lock().unwrap().len(), REQUESTS / 3);
    }
    // The client's spans end in the order of the calls: call n is the n-th.
    let third = served[2].served.lock().unwrap().clone();
    let calls: Vec<String> = client.kept.0.lock().unwrap().iter().map(trace_of).collect();
    assert_eq!(calls.len(), REQUESTS);
    let lost: Vec<String> = third
        .iter()
        .map(|m| {
            let n: usize = m.strip_prefix("call ").unwrap().parse().unwrap();
            calls[n - 1].clone()
        })
        .collect();
    drop(nginx);
    let (code, findings) = check_saved("grpc", &all).await;
    // lens-tonic's client over a Channel records no address (the Channel holds it), the
    // replica the :authority nginx sent: nothing to contradict, paired as at one address.
    assert_found_exactly(
        &findings,
        &lost,
        ("lens-grpc-client", "rust-trainer"),
        false,
    );
    assert_eq!(code, Some(1));
}
